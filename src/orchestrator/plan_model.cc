// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/plan_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "common/cost_model.h"
#include "common/limits.h"

namespace rd::orch {
namespace {

constexpr int kMaxWorkers = static_cast<int>(limits::kMaxRanks);
// Beyond this the inputs are not a real cluster (and the count would not fit an int).
constexpr double kMaxReducers = 1e9;

bool validBandwidth(double gbps) {
  return std::isfinite(gbps) && gbps > 0;
}

std::string formatNumber(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// Gbit/s as people write them: 100, 32, 12.5.
std::string gbps(double value) {
  return formatNumber("%g", value);
}

std::string times(double value) {
  return formatNumber("%.2f", value);
}

std::string reducerCount(int count) {
  return std::to_string(count) + (count == 1 ? " reducer" : " reducers");
}

bool checkInput(const PlanInput& input, std::string* error) {
  if (input.workers < 1 || input.workers > kMaxWorkers) {
    *error = "workers must be 1.." + std::to_string(kMaxWorkers) + ", got " +
             std::to_string(input.workers);
    return false;
  }
  if (!validBandwidth(input.worker_gbps)) {
    *error = "worker bandwidth must be a number > 0 Gbit/s, got " + gbps(input.worker_gbps);
    return false;
  }
  if (!validBandwidth(input.reducer_gbps)) {
    *error = "reducer bandwidth must be a number > 0 Gbit/s, got " + gbps(input.reducer_gbps);
    return false;
  }
  if (input.reducers < 0) {
    *error =
        "reducers must be >= 0 (0: the recommended count), got " + std::to_string(input.reducers);
    return false;
  }
  return true;
}

}  // namespace

bool makePlan(const PlanInput& input, Plan* plan, std::string* error) {
  if (!checkInput(input, error)) return false;
  const double n = input.workers;
  // The reducers must carry n worker links' worth of traffic. The relative epsilon keeps an
  // exact fit (8 x 100 over 32 = 25) from rounding up on floating-point noise.
  const double needed = n * input.worker_gbps / input.reducer_gbps;
  if (needed > kMaxReducers) {
    *error = "the workers' bandwidth would need more than 1e9 reducers of " +
             gbps(input.reducer_gbps) + " Gbit/s";
    return false;
  }
  Plan result;
  result.recommended_reducers = std::max(1, static_cast<int>(std::ceil(needed * (1 - 1e-9))));
  result.reducers = input.reducers > 0 ? input.reducers : result.recommended_reducers;
  const double k = result.reducers;
  if (input.workers == 1) {
    // One worker has nothing to exchange: neither algorithm moves data, so call it even.
    result.ring_cost = 0;
    result.rs_cost = 0;
    result.speedup = 1;
    result.too_few = false;
  } else {
    result.ring_cost = cost::ringPerByte(n);
    result.rs_cost = cost::reductionServerPerByte(n, input.worker_gbps, k, input.reducer_gbps);
    result.speedup = result.ring_cost / result.rs_cost;
    result.too_few = result.reducers < result.recommended_reducers;
  }
  *plan = result;
  return true;
}

std::string describePlan(const PlanInput& input, const Plan& plan) {
  const int n = input.workers;
  std::string out = "workers: " + std::to_string(n) + " x " + gbps(input.worker_gbps) +
                    " Gbit/s; reducers: " + std::to_string(plan.reducers) + " x " +
                    gbps(input.reducer_gbps) + " Gbit/s (recommended " +
                    std::to_string(plan.recommended_reducers) +
                    ": total reducer bandwidth >= total worker bandwidth)\n";
  out += "predicted all-reduce speed-up over ring (large buffers): " + times(plan.speedup) + "x";
  if (n == 1) {
    out += " (one worker: no all-reduce traffic, so neither algorithm has anything to move)\n";
    return out;
  }
  if (plan.too_few) {
    out += " (model: ring 2(n-1)/n = " + times(plan.ring_cost) +
           " over reduction server n*B/(k*Br) = " + times(plan.rs_cost) + ")\n";
    const double reducer_total = plan.reducers * input.reducer_gbps;
    const double worker_total = n * input.worker_gbps;
    out += "warning: " + reducerCount(plan.reducers) + " x " + gbps(input.reducer_gbps) +
           " Gbit/s = " + gbps(reducer_total) + " Gbit/s is less than the workers' " +
           gbps(worker_total) +
           " Gbit/s: the reducers' links are the bottleneck and the speed-up falls to " +
           times(plan.speedup) + "x" + (plan.speedup < 1 ? " (slower than ring)" : "") +
           "; use at least " + reducerCount(plan.recommended_reducers) + "\n";
  } else {
    out += " (model: 2(n-1)/n = " + times(plan.ring_cost) + " when the reducers keep up)\n";
  }
  if (n == 2) {
    out +=
        "note: at n=2 the model predicts no gain over ring even with enough reducers (each "
        "worker sends and receives the buffer once either way)\n";
  }
  return out;
}

}  // namespace rd::orch
