// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/scale_model.h"

#include <gtest/gtest.h>

#include <string>

namespace rd::orch {
namespace {

ScaleCase caseOf(int workers, int reducers, double gbps, double bytes) {
  ScaleCase c;
  c.workers = workers;
  c.reducers = reducers;
  c.worker_gbps = gbps;
  c.reducer_gbps = gbps;
  c.bucket_bytes = bytes;
  return c;
}

ScalePrediction predicted(const ScaleCase& c, const ScaleCosts& costs = calibratedCosts()) {
  ScalePrediction p;
  std::string error;
  EXPECT_TRUE(predictScale(c, costs, &p, &error)) << error;
  return p;
}

// Costs with no CPU and no latency: what is left is the bandwidth model of plan_model.
ScaleCosts linksOnly() {
  ScaleCosts costs = calibratedCosts();
  costs.tcp = {};
  costs.shared_memory = {};
  costs.hop_s = 0;
  costs.link_efficiency = 1;
  return costs;
}

TEST(ScaleModel, LinksAloneGiveTheBandwidthModel) {
  // 8 workers, 8 reducers, 1 Gbit/s: rs moves S once at 125 MB/s, ring 2(n-1)/n of it.
  const ScalePrediction p = predicted(caseOf(8, 8, 1, 125e6), linksOnly());
  EXPECT_DOUBLE_EQ(p.rs.seconds, 1.0);
  EXPECT_DOUBLE_EQ(p.ring.seconds, 1.75);
  EXPECT_EQ(p.rs.limit, "worker links");
  // Half the reducers carry twice a worker's bytes each: their links bound rs.
  const ScalePrediction half = predicted(caseOf(8, 4, 1, 125e6), linksOnly());
  EXPECT_DOUBLE_EQ(half.rs.seconds, 2.0);
  EXPECT_EQ(half.rs.limit, "reducer links");
  EXPECT_EQ(half.reducers_for_links, 8);
}

TEST(ScaleModel, RingPaysTwoHopsPerRankAndRsTwoInAll) {
  ScaleCosts costs = linksOnly();
  costs.hop_s = 1e-3;
  for (int n : {4, 64, 1024}) {
    const ScalePrediction p = predicted(caseOf(n, 2, 1e6, 4096), costs);
    EXPECT_DOUBLE_EQ(p.rs.latency_s, 2e-3) << n;
    EXPECT_DOUBLE_EQ(p.ring.latency_s, 2 * (n - 1) * 1e-3) << n;
  }
}

TEST(ScaleModel, OneSharedHostDividesEveryProcesssWorkByItsCores) {
  ScaleCase c = caseOf(16, 2, 25, 1 << 20);
  c.shared_host_cores = 2;
  c.loopback = true;
  const ScalePrediction p = predicted(c);
  EXPECT_EQ(p.rs.limit, "host CPU");
  EXPECT_EQ(p.rs.link_s, 0) << "loopback has no link to wait for";
  // 16 ranks and 2 reducers over 2 cores: the host's work is theirs summed, halved.
  const ProcessWork& host = p.rs.host_per_core;
  EXPECT_DOUBLE_EQ(host.operations, 16 / 2.0);
  EXPECT_DOUBLE_EQ(host.bytes, (16 * p.rs.rank.bytes + 2 * p.rs.reducer.bytes) / 2);
  c.shared_host_cores = 4;
  EXPECT_NEAR(predicted(c).rs.cpu_s, p.rs.cpu_s / 2, 1e-12);
}

TEST(ScaleModel, RingMessagesGrowWithTheSquareOfTheRanksOnOneHost) {
  ScaleCase c = caseOf(32, 2, 25, 4096);
  c.shared_host_cores = 2;
  c.loopback = true;
  const ScalePrediction small = predicted(c);
  c.workers = 64;
  const ScalePrediction large = predicted(c);
  EXPECT_DOUBLE_EQ(large.ring.host_per_core.transfer_ends,
                   small.ring.host_per_core.transfer_ends * (64.0 * 63) / (32.0 * 31));
  EXPECT_DOUBLE_EQ(large.rs.host_per_core.transfer_ends, small.rs.host_per_core.transfer_ends * 2);
  EXPECT_GT(large.ring.seconds / large.rs.seconds, small.ring.seconds / small.rs.seconds);
}

TEST(ScaleModel, ReducersForTheirCpuKeepUpWithTheWorkersLinks) {
  const ScaleCosts costs = calibratedCosts();
  // 64 workers at 1 Gbit/s: 64 Gbit/s into the pool, more than one reducer's 4 threads take.
  const ScalePrediction p = predicted(caseOf(64, 64, 1, 64 << 20));
  ASSERT_GT(p.reducers_for_cpu, 1);
  // With that many, a reducer's CPU time per all-reduce is within the workers' link time;
  // with one fewer it is not.
  ScaleCase at = caseOf(64, p.reducers_for_cpu, 1, 64 << 20);
  const double link = (64 << 20) / (costs.link_efficiency * 125e6);
  const auto reducerCpu = [&](const ScaleCase& c) {
    const ScalePrediction q = predicted(c);
    return (q.rs.reducer.transfer_ends * costs.tcp.per_transfer_s +
            q.rs.reducer.bytes * costs.tcp.per_byte_s) /
           costs.reducer_threads;
  };
  EXPECT_LE(reducerCpu(at), link);
  if (p.reducers_for_cpu > 1) {
    at.reducers -= 1;
    EXPECT_GT(reducerCpu(at), link);
  }
}

TEST(ScaleModel, CountsPastWhatAnyPoolHoldsAreCappedOrNone) {
  ScaleCase c = caseOf(1000, 4, 100, 25 << 20);
  c.reducer_gbps = 1e-6;  // links that would need 1e11 reducers
  EXPECT_EQ(predicted(c).reducers_for_links, 65536);
  // With a cost per message, 4 KiB buffers: each reducer still gets a message from every rank
  // however many reducers there are, so no count keeps up with 26 Gbit/s of them.
  ScaleCosts per_message = calibratedCosts();
  per_message.tcp = {10e-6, 0, 0};
  EXPECT_EQ(predicted(caseOf(256, 2, 26, 4096), per_message).reducers_for_cpu, 0);
}

TEST(ScaleModel, NoHopFlightOnOneSharedHost) {
  ScaleCase c = caseOf(64, 2, 25, 4096);
  c.shared_host_cores = 2;
  const ScalePrediction p = predicted(c);
  EXPECT_EQ(p.ring.latency_s, 0);
  EXPECT_EQ(p.rs.latency_s, 0);
  c.shared_host_cores = 0;
  EXPECT_GT(predicted(c).ring.latency_s, 0);
}

TEST(ScaleModel, BadInputsAreNamed) {
  ScalePrediction p;
  std::string error;
  EXPECT_FALSE(predictScale(caseOf(1, 1, 1, 4096), calibratedCosts(), &p, &error));
  EXPECT_NE(error.find("workers"), std::string::npos) << error;
  EXPECT_FALSE(predictScale(caseOf(4, 0, 1, 4096), calibratedCosts(), &p, &error));
  EXPECT_NE(error.find("reducers"), std::string::npos) << error;
  EXPECT_FALSE(predictScale(caseOf(4, 2, 0, 4096), calibratedCosts(), &p, &error));
  EXPECT_NE(error.find("bandwidth"), std::string::npos) << error;
  EXPECT_FALSE(predictScale(caseOf(4, 2, 1, 0), calibratedCosts(), &p, &error));
  EXPECT_NE(error.find("bucket"), std::string::npos) << error;
  EXPECT_FALSE(predictScale(caseOf(4, 2, 1e-310, 25 << 20), calibratedCosts(), &p, &error));
  EXPECT_NE(error.find("not a finite number"), std::string::npos) << error;
}

}  // namespace
}  // namespace rd::orch
