#include "collectives/algorithms/auto_tuner.h"

#include <algorithm>
#include <bit>

#include "common/check.h"
#include "common/status.h"

namespace rd::coll {

namespace {
// A trial that failed counts as this slow: the other algorithm wins unless it failed too.
constexpr double kFailedSeconds = 1e9;
}  // namespace

uint32_t AutoTuner::sizeClass(uint64_t bytes) {
  return static_cast<uint32_t>(std::bit_width(bytes));
}

AutoTuner::Step AutoTuner::next(uint32_t size_class, rdAlgorithm_t* algorithm) {
  std::lock_guard<std::mutex> lock(mu_);
  Class& c = classes_.at(size_class);
  if (c.decided != rdAlgoDefault) {
    *algorithm = c.decided;
    return Step::kDecided;
  }
  const uint32_t call = c.calls++;
  if (call < kTrials) {
    *algorithm = trialAlgorithm(call);
    return Step::kTrial;
  }
  *algorithm = rdAlgoReductionServer;
  return call == kTrials ? Step::kSum : Step::kDecide;
}

void AutoTuner::record(uint32_t size_class, rdAlgorithm_t algorithm, Clock::time_point posted,
                       std::shared_ptr<Request> request) {
  std::lock_guard<std::mutex> lock(mu_);
  classes_.at(size_class).trials.push_back(Trial{algorithm, posted, std::move(request)});
}

std::shared_ptr<AutoTuner::Times> AutoTuner::trialTimes(uint32_t size_class, int timeout_ms) {
  std::vector<Trial> trials;
  {
    std::lock_guard<std::mutex> lock(mu_);
    trials = std::move(classes_.at(size_class).trials);
  }
  auto times = std::make_shared<Times>();
  times->fill(kFailedSeconds);
  for (size_t i = 0; i < trials.size() && i < kTrials; ++i) {
    Trial& t = trials[i];
    if (t.request->wait(timeout_ms) != rdSuccess) continue;
    (*times)[i] = std::chrono::duration<double>(t.request->completedAt() - t.posted).count();
  }
  std::lock_guard<std::mutex> lock(mu_);
  classes_.at(size_class).sum = times;
  return times;
}

void AutoTuner::setSum(uint32_t size_class, std::shared_ptr<Request> request) {
  std::lock_guard<std::mutex> lock(mu_);
  classes_.at(size_class).sum_request = std::move(request);
}

rdResult_t AutoTuner::decide(uint32_t size_class, rdAlgorithm_t* algorithm,
                             std::array<double, 2>* best) {
  std::shared_ptr<Request> request;
  std::shared_ptr<Times> sum;
  {
    std::lock_guard<std::mutex> lock(mu_);
    request = classes_.at(size_class).sum_request;
    sum = classes_.at(size_class).sum;
  }
  if (!request || !sum) return setError(rdInternalError, "auto: no times to decide by");
  RD_CHECK(request->wait(-1));  // the operation's own timeouts bound it
  std::array<double, 2> fastest{kFailedSeconds, kFailedSeconds};  // rs, ring
  for (uint32_t i = 0; i < kTrials; ++i) {
    double& slot = fastest[trialAlgorithm(i) == rdAlgoRing ? 1 : 0];
    slot = std::min(slot, (*sum)[i]);
  }
  std::lock_guard<std::mutex> lock(mu_);
  Class& c = classes_.at(size_class);
  c.decided = fastest[1] < fastest[0] ? rdAlgoRing : rdAlgoReductionServer;
  c.sum_request.reset();
  *algorithm = c.decided;
  if (best != nullptr) *best = fastest;
  return rdSuccess;
}

rdAlgorithm_t AutoTuner::decided(uint32_t size_class) {
  std::lock_guard<std::mutex> lock(mu_);
  return classes_.at(size_class).decided;
}

}  // namespace rd::coll
