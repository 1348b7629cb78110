// SPDX-License-Identifier: BSD-3-Clause
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

uint32_t AutoTuner::callsPerRun(uint32_t size_class) {
  // The class's smallest size: a run of any size in the class moves kRunBytes or more.
  const uint64_t smallest = size_class == 0 ? 1 : 1ull << (size_class - 1);
  const uint64_t calls = (kRunBytes + smallest - 1) / smallest;
  return static_cast<uint32_t>(std::clamp<uint64_t>(calls, 1, kMaxCallsPerRun));
}

AutoTuner::Step AutoTuner::next(uint32_t size_class, rdAlgorithm_t* algorithm) {
  std::lock_guard<std::mutex> lock(mu_);
  Class& c = classes_.at(size_class);
  if (c.decided != rdAlgoDefault) {
    *algorithm = c.decided;
    return Step::kDecided;
  }
  const uint32_t call = c.calls++;
  const uint32_t trials = trialCalls(size_class);
  if (call < trials) {
    *algorithm = runAlgorithm(call / callsPerRun(size_class));
    return Step::kTrial;
  }
  *algorithm = rdAlgoReductionServer;
  return call == trials ? Step::kSum : Step::kDecide;
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
  const size_t per_run = callsPerRun(size_class);
  for (size_t run = 0; run < kRuns && (run + 1) * per_run <= trials.size(); ++run) {
    const size_t first = run * per_run;
    Clock::time_point end = trials[first].posted;
    bool ok = true;
    for (size_t i = first; i < first + per_run && ok; ++i) {
      ok = trials[i].request->wait(timeout_ms) == rdSuccess;
      end = std::max(end, trials[i].request->completedAt());
    }
    if (ok) (*times)[run] = std::chrono::duration<double>(end - trials[first].posted).count();
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
  for (uint32_t run = 2; run < kRuns; ++run) {  // runs 0 and 1, each one's first, warm up
    double& slot = fastest[runAlgorithm(run) == rdAlgoRing ? 1 : 0];
    slot = std::min(slot, (*sum)[run] / callsPerRun(size_class));
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
