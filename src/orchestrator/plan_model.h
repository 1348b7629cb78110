// SPDX-License-Identifier: BSD-3-Clause
// The sizing model behind `reducectl plan`: how many reducers a job needs for its workers' NIC
// bandwidth, and the all-reduce speed-up over ring that the model predicts for a reducer count.
#pragma once

#include <string>

namespace rd::orch {

struct PlanInput {
  int workers = 0;          // ranks taking part in the all-reduce (primary + workers)
  double worker_gbps = 0;   // each worker's NIC, Gbit/s (> 0)
  double reducer_gbps = 0;  // each reducer's NIC, Gbit/s (> 0)
  int reducers = 0;         // reducers to evaluate; 0 = the recommended count
};

struct Plan {
  int recommended_reducers = 0;  // smallest k with k * reducer_gbps >= workers * worker_gbps
  int reducers = 0;              // the count evaluated below
  // Time per byte of buffer relative to the worker's link: ring 2(n-1)/n; reduction server
  // max(1, n * worker_gbps / (k * reducer_gbps)) (each worker sends and receives the buffer
  // once; the reducers together carry n buffers each way).
  double ring_cost = 0;
  double rs_cost = 0;
  double speedup = 0;    // ring_cost / rs_cost
  bool too_few = false;  // reducers < recommended: the reducers' links are the bottleneck
};

/** Fills @p plan; false with @p error naming the bad input (workers < 1, bandwidth <= 0, ...). */
bool makePlan(const PlanInput& input, Plan* plan, std::string* error);

/** A few lines for people: the counts, the predicted speed-up, and the warning when too few. */
std::string describePlan(const PlanInput& input, const Plan& plan);

}  // namespace rd::orch
