// SPDX-License-Identifier: BSD-3-Clause
// Reducer failover with real processes over UCX (docs/failover.md): a communicator of 4 ranks and
// 3 reducers runs 500 verified all-reduces of 1 MiB while one reducer is killed and another
// frozen; every operation is exact and each rank reports what the faults cost. Losing every
// reducer is an error that names them all, within the heartbeat.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cluster.h"

namespace rd::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kHeartbeatMs = 1000;
const std::map<std::string, std::string> kEnv = {
    {"LIBREDUCE_TIMEOUT_MS", "60000"}, {"LIBREDUCE_HEARTBEAT_MS", std::to_string(kHeartbeatMs)}};

TEST(Failover, FiveHundredAllReducesThroughAKillAndAFreeze) {
  Cluster cluster;
  auto r = cluster.startReducers(3);
  // 250 iterations x (out of place, in place) = 500 all-reduces of 262144 float32 (1 MiB).
  auto w = cluster.startWorkers(
      4, Cluster::addresses(r),
      {"--colls", "allreduce", "--counts", "262144", "--dtypes", "float32", "--ops", "sum",
       "--iters", "250", "--announce-after", "100,200", "--report-times"},
      kEnv);
  ASSERT_TRUE(cluster.waitForOutput(w[0], "100 operations done", seconds(120))) << joinedOutput(w);
  Cluster::signal(r[1].process, SIGKILL);
  ASSERT_TRUE(cluster.waitForOutput(w[0], "200 operations done", seconds(120))) << joinedOutput(w);
  Cluster::signal(r[2].process, SIGSTOP);
  ASSERT_TRUE(cluster.wait(w, seconds(300))) << joinedOutput(w);
  for (Process* p : w) {
    EXPECT_EQ(p->status, 0) << p->output;
    EXPECT_NE(p->output.find("500 checks, 0 failed"), std::string::npos) << p->output;
    // What the faults cost: the slowest operation (the freeze: a heartbeat period and the
    // operation), printed for the record and bounded.
    auto at = p->output.find("slowest: #");
    ASSERT_NE(at, std::string::npos) << p->output;
    auto line = p->output.substr(p->output.rfind('\n', at) + 1, 120);
    std::printf("%s\n", line.substr(0, line.find('\n')).c_str());
    double slowest_ms = std::atof(p->output.c_str() + p->output.find(' ', at + 10) + 1);
    EXPECT_LT(slowest_ms, 4 * kHeartbeatMs) << p->output;
  }
  Cluster::signal(r[2].process, SIGKILL);
}

// A replacement started where the killed reducer listened is admitted at an operation boundary
// and takes its share again: it serves chunks. Each rank prints the median all-reduce call before
// the kill, while two reducers served, and once the replacement serves, for the record.
TEST(Failover, AReplacementReducerIsAdmittedAndRestoresTheRate) {
  Cluster cluster;
  auto r = cluster.startReducers(3);
  auto w = cluster.startWorkers(
      4, Cluster::addresses(r),
      {"--colls", "allreduce", "--counts", "262144", "--dtypes", "float32", "--ops", "sum",
       "--iters", "250", "--announce-after", "100", "--report-windows", "0-99,100-149,400-499"},
      kEnv);
  ASSERT_TRUE(cluster.waitForOutput(w[0], "100 operations done", seconds(120))) << joinedOutput(w);
  Cluster::signal(r[1].process, SIGKILL);
  Reducer replacement = cluster.replaceReducer(r[1]);
  ASSERT_TRUE(cluster.wait(w, seconds(300))) << joinedOutput(w);
  for (Process* p : w) {
    EXPECT_EQ(p->status, 0) << p->output;
    EXPECT_NE(p->output.find("500 checks, 0 failed"), std::string::npos) << p->output;
    // Admitted from an operation before the last window.
    auto back = p->output.find("is back: it serves operations from ");
    ASSERT_NE(back, std::string::npos) << p->output;
    long first =
        std::atol(p->output.c_str() + back + std::strlen("is back: it serves operations from "));
    EXPECT_GT(first, 100) << p->output;
    EXPECT_LT(first, 400) << p->output;
    auto median = [p](const std::string& window) {
      std::string key = "operations " + window + ": median ";
      auto at = p->output.find(key);
      EXPECT_NE(at, std::string::npos) << p->output;
      return at == std::string::npos ? 0.0 : std::atof(p->output.c_str() + at + key.size());
    };
    double before = median("0-99"), degraded = median("100-149"), after = median("400-499");
    std::printf(
        "median all-reduce call: %.2f ms with 3 reducers, %.2f ms after the kill, %.2f ms after "
        "re-admission (from operation %ld)\n",
        before, degraded, after, first);
  }
  // The replacement took its share again: from re-admission on (at least the last 100 of 500
  // operations) it served about a third of the chunks, as reducer 0 did throughout. What that
  // does to the rate is measured where links, not these 2 cores, are the limit
  // (bench/failover/readmission.py: back within 2%).
  auto served = [&cluster](const Reducer& reducer) {
    Cluster::signal(reducer.process, SIGTERM);
    EXPECT_TRUE(cluster.wait({reducer.process}, seconds(10))) << reducer.process->output;
    const std::string key = "LIBREDUCE_REDUCER_SERVED lane=0 chunks=";
    auto at = reducer.process->output.find(key);
    EXPECT_NE(at, std::string::npos) << reducer.process->output;
    return at == std::string::npos ? 0L
                                   : std::atol(reducer.process->output.c_str() + at + key.size());
  };
  const long by_replacement = served(replacement), by_first = served(r[0]);
  std::printf("chunks served: %ld by the replacement, %ld by reducer 0\n", by_replacement,
              by_first);
  EXPECT_GT(by_replacement, by_first / 10);
}

TEST(Failover, LosingEveryReducerIsAnErrorNamingThemAll) {
  Cluster cluster;
  auto r = cluster.startReducers(2);
  auto w =
      cluster.startWorkers(3, Cluster::addresses(r),
                           {"--colls", "allreduce", "--counts", "100000", "--dtypes", "float32",
                            "--ops", "sum", "--iters", "100000", "--announce-after", "5"},
                           kEnv);
  ASSERT_TRUE(cluster.waitForOutput(w[0], "5 operations done", seconds(60))) << w[0]->output;
  Cluster::signal(r[0].process, SIGKILL);
  auto fault = Clock::now();
  Cluster::signal(r[1].process, SIGKILL);
  ASSERT_TRUE(cluster.wait(w, seconds(30))) << joinedOutput(w);
  for (Process* p : w) {
    EXPECT_EQ(p->status, 2) << p->output;
    EXPECT_NE(p->output.find("every reducer was lost"), std::string::npos) << p->output;
    for (const Reducer& reducer : r) {
      EXPECT_NE(p->output.find(reducer.address), std::string::npos) << p->output;
    }
    auto took = std::chrono::duration_cast<milliseconds>(p->ended - fault).count();
    EXPECT_LE(took, 3 * kHeartbeatMs) << p->output;
  }
}

}  // namespace
}  // namespace rd::test
