// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/plan_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace rd::orch {
namespace {

Plan planFor(int workers, double worker_gbps, double reducer_gbps, int reducers = 0) {
  Plan plan;
  std::string error;
  EXPECT_TRUE(makePlan(PlanInput{workers, worker_gbps, reducer_gbps, reducers}, &plan, &error))
      << error;
  return plan;
}

std::string refusal(const PlanInput& input) {
  Plan plan;
  std::string error;
  EXPECT_FALSE(makePlan(input, &plan, &error));
  return error;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Google's published sizing: "5 workers x 100 Gbps need 16 reducers x 32 Gbps".
TEST(PlanModel, GoogleSizingExample) {
  const Plan plan = planFor(5, 100, 32);
  EXPECT_EQ(plan.recommended_reducers, 16);
  EXPECT_EQ(plan.reducers, 16);
  EXPECT_FALSE(plan.too_few);
  EXPECT_EQ(planFor(5, 100, 32, 15).too_few, true);
}

TEST(PlanModel, ExactFitDoesNotRoundUp) {
  EXPECT_EQ(planFor(8, 100, 32).recommended_reducers, 25);
  EXPECT_EQ(planFor(3, 0.1, 0.1).recommended_reducers, 3);
  EXPECT_EQ(planFor(1, 10, 100).recommended_reducers, 1);
}

TEST(PlanModel, EnoughReducersGiveTheRingRatio) {
  const Plan four = planFor(4, 100, 100, 4);
  EXPECT_DOUBLE_EQ(four.ring_cost, 1.5);
  EXPECT_DOUBLE_EQ(four.rs_cost, 1.0);
  EXPECT_DOUBLE_EQ(four.speedup, 1.5);
  EXPECT_FALSE(four.too_few);
  EXPECT_DOUBLE_EQ(planFor(8, 100, 32).speedup, 1.75);
  EXPECT_DOUBLE_EQ(planFor(4, 100, 100, 8).speedup, 1.5);  // extra reducers add nothing
}

TEST(PlanModel, TooFewReducersAreSlowerThanRing) {
  const Plan plan = planFor(4, 100, 100, 2);
  EXPECT_EQ(plan.recommended_reducers, 4);
  EXPECT_TRUE(plan.too_few);
  EXPECT_DOUBLE_EQ(plan.rs_cost, 2.0);
  EXPECT_DOUBLE_EQ(plan.speedup, 0.75);
  const std::string text = describePlan(PlanInput{4, 100, 100, 2}, plan);
  EXPECT_TRUE(contains(text, "warning: ")) << text;
  EXPECT_TRUE(contains(text, "bottleneck")) << text;
  EXPECT_TRUE(contains(text, "0.75x")) << text;
  EXPECT_TRUE(contains(text, "slower than ring")) << text;
}

TEST(PlanModel, TwoWorkersGainNothing) {
  const Plan plan = planFor(2, 100, 100);
  EXPECT_DOUBLE_EQ(plan.speedup, 1.0);
  EXPECT_TRUE(contains(describePlan(PlanInput{2, 100, 100, 0}, plan), "n=2"));
}

TEST(PlanModel, OneWorkerHasNoTraffic) {
  const Plan plan = planFor(1, 100, 32);
  EXPECT_DOUBLE_EQ(plan.ring_cost, 0);
  EXPECT_DOUBLE_EQ(plan.speedup, 1.0);
  EXPECT_FALSE(plan.too_few);
  EXPECT_TRUE(std::isfinite(plan.speedup));
  EXPECT_TRUE(contains(describePlan(PlanInput{1, 100, 32, 0}, plan), "no all-reduce traffic"));
}

TEST(PlanModel, DescribeNamesCountsAndSpeedup) {
  const PlanInput input{8, 100, 32, 0};
  const std::string text = describePlan(input, planFor(8, 100, 32));
  EXPECT_TRUE(contains(text, "workers: 8 x 100 Gbit/s; reducers: 25 x 32 Gbit/s (recommended 25"))
      << text;
  EXPECT_TRUE(contains(text, "1.75x")) << text;
  EXPECT_FALSE(contains(text, "warning")) << text;
}

TEST(PlanModel, BadInputsAreRefused) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(contains(refusal({0, 100, 32, 0}), "workers"));
  EXPECT_TRUE(contains(refusal({65537, 100, 32, 0}), "workers"));
  EXPECT_TRUE(contains(refusal({4, 0, 32, 0}), "worker bandwidth"));
  EXPECT_TRUE(contains(refusal({4, -1, 32, 0}), "worker bandwidth"));
  EXPECT_TRUE(contains(refusal({4, nan, 32, 0}), "worker bandwidth"));
  EXPECT_TRUE(contains(refusal({4, inf, 32, 0}), "worker bandwidth"));
  EXPECT_TRUE(contains(refusal({4, 100, 0, 0}), "reducer bandwidth"));
  EXPECT_TRUE(contains(refusal({4, 100, inf, 0}), "reducer bandwidth"));
  EXPECT_TRUE(contains(refusal({4, 100, 32, -1}), "reducers"));
  EXPECT_TRUE(contains(refusal({65536, 1e300, 1e-300, 0}), "reducers"));
  Plan plan;
  std::string error;
  EXPECT_TRUE(makePlan({65536, 100, 100, 0}, &plan, &error)) << error;
}

}  // namespace
}  // namespace rd::orch
