// SPDX-License-Identifier: BSD-3-Clause
// Faults and bad input with real processes: dead and frozen workers, a dead reducer, ranks that
// disagree, wrong secrets, an unreachable reducer, abort. Each case is bounded in time and must
// name the culprit.
#include <signal.h>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "cluster.h"
#include "detection_bound.h"

namespace rd::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kTimeoutMs = 2000;
const std::map<std::string, std::string> kShortTimeout = {
    {"LIBREDUCE_TIMEOUT_MS", std::to_string(kTimeoutMs)}};
// Many small operations so that a fault lands mid-run; each rank says when it is under way.
const std::vector<std::string> kLongRun = {
    "--colls", "allreduce", "--counts", "100000", "--dtypes",         "float32",
    "--ops",   "sum",       "--iters",  "100000", "--announce-after", "5"};

// Waits until every one of @p workers has run a few operations (kLongRun's announcement).
void waitUnderWay(Cluster& cluster, const std::vector<Process*>& workers) {
  for (Process* p : workers) {
    ASSERT_TRUE(cluster.waitForOutput(p, "operations done", seconds(60))) << p->output;
  }
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Every survivor fails within 2x the timeout with an error that contains @p culprit.
void expectSurvivorsNameCulprit(Cluster& cluster, const std::vector<Process*>& survivors,
                                Clock::time_point fault, const std::string& culprit) {
  ASSERT_TRUE(cluster.wait(survivors, milliseconds(4 * kTimeoutMs + 5000)))
      << joinedOutput(survivors);
  for (Process* p : survivors) {
    EXPECT_EQ(p->status, 2) << p->output;
    EXPECT_NE(p->output.find(culprit), std::string::npos)
        << "error does not name " << culprit << ":\n"
        << p->output;
    auto took = std::chrono::duration_cast<milliseconds>(p->ended - fault).count();
    EXPECT_LE(took, 2 * kTimeoutMs + 1000) << "took " << took << " ms:\n" << p->output;
  }
}

class WorkerFault : public ::testing::TestWithParam<int> {};

// SIGKILL or SIGSTOP one worker mid-operation.
TEST_P(WorkerFault, SurvivorsFailNamingTheRankAndReducersKeepServing) {
  Cluster cluster;
  auto r = cluster.startReducers(2);
  auto w = cluster.startWorkers(4, Cluster::addresses(r), kLongRun, kShortTimeout);
  waitUnderWay(cluster, w);
  auto fault = Clock::now();
  Cluster::signal(w[2], GetParam());
  expectSurvivorsNameCulprit(cluster, {w[0], w[1], w[3]}, fault, "rank 2");
  Cluster::signal(w[2], SIGKILL);
  // The reducers dropped that communicator and serve a new job.
  auto next = cluster.startWorkers(3, Cluster::addresses(r),
                                   {"--counts", "1000,1048579", "--dtypes", "float32,int64"});
  ASSERT_TRUE(cluster.wait(next, seconds(120))) << joinedOutput(next);
  for (Process* p : next) EXPECT_EQ(p->status, 0) << p->output;
}

INSTANTIATE_TEST_SUITE_P(Signals, WorkerFault, ::testing::Values(SIGKILL, SIGSTOP),
                         [](const auto& param_info) {
                           return param_info.param == SIGKILL ? std::string("Killed")
                                                              : std::string("Frozen");
                         });

// Without failover (failover_test.cc has it: the workers go on).
TEST(ReducerFault, KilledReducerIsNamedByEveryWorker) {
  Cluster cluster;
  auto r = cluster.startReducers(2);
  auto env = kShortTimeout;
  env["LIBREDUCE_FAILOVER"] = "0";
  auto w = cluster.startWorkers(3, Cluster::addresses(r), kLongRun, env);
  waitUnderWay(cluster, w);
  auto fault = Clock::now();
  Cluster::signal(r[1].process, SIGKILL);
  expectSurvivorsNameCulprit(cluster, w, fault, "reducer");
  for (Process* p : w) EXPECT_NE(p->output.find(r[1].address), std::string::npos) << p->output;
}

// The first rank to see a fault tells the reducers why, so the others learn the root cause (not
// only that it vanished) long before their own timeout: rank 0 gives up on a frozen reducer
// after 1.5 s, the others would wait 90 s. Ranks 1 and 2 join first: the reducers then use their
// timeout and stay quiet, leaving the diagnosis to rank 0.
TEST(ReducerFault, FirstRankToSeeAFaultTellsTheOthersTheCause) {
  Cluster cluster;
  auto r = cluster.startReducers(2, {"--log-level", "info"});
  std::map<std::string, std::string> env = {{"LIBREDUCE_COMM_ID", "root-cause"},
                                            {"WORLD_SIZE", "3"}};
  std::vector<Process*> w(3);
  for (int rank : {1, 2, 0}) {
    env["RANK"] = std::to_string(rank);
    env["LIBREDUCE_TIMEOUT_MS"] = rank == 0 ? "1000" : "60000";
    w[rank] = cluster.startWorkers(1, Cluster::addresses(r), kLongRun, env)[0];
    // Ranks 1 and 2 reach the reducers first (the communicator's timeout is the first joiner's).
    if (rank == 2) {
      for (const Reducer& reducer : r) {
        ASSERT_TRUE(cluster.waitForOutput(reducer.process, "first rank joining", seconds(30)))
            << reducer.process->output;
      }
    }
  }
  waitUnderWay(cluster, w);
  auto fault = Clock::now();
  Cluster::signal(r[1].process, SIGSTOP);
  ASSERT_TRUE(cluster.wait(w, seconds(20))) << joinedOutput(w);
  for (Process* p : w) {
    EXPECT_EQ(p->status, 2) << p->output;
    auto took = std::chrono::duration_cast<milliseconds>(p->ended - fault).count();
    EXPECT_LE(took, 10000) << p->output;
  }
  EXPECT_NE(w[0]->output.find("no answer from reducer"), std::string::npos) << w[0]->output;
  for (Process* p : {w[1], w[2]}) {
    EXPECT_NE(p->output.find("rank 0 failed: operation"), std::string::npos) << p->output;
  }
  Cluster::signal(r[1].process, SIGKILL);
}

// With a minute's timeout, a frozen peer is found by its missing heartbeats
// (LIBREDUCE_HEARTBEAT_MS): a reducer by every rank, a rank by the reducers, who tell the others.
// Without failover: with it, the workers go on without the reducer (failover_test.cc).
constexpr int kHeartbeatMs = 1000;
const std::map<std::string, std::string> kHeartbeatOnly = {
    {"LIBREDUCE_TIMEOUT_MS", "60000"},
    {"LIBREDUCE_HEARTBEAT_MS", std::to_string(kHeartbeatMs)},
    {"LIBREDUCE_FAILOVER", "0"}};

void expectNamedWithinHeartbeat(Cluster& cluster, const std::vector<Process*>& survivors,
                                Clock::time_point fault, const std::string& culprit) {
  ASSERT_TRUE(cluster.wait(survivors, seconds(30))) << joinedOutput(survivors);
  for (Process* p : survivors) {
    EXPECT_EQ(p->status, 2) << p->output;
    EXPECT_NE(p->output.find(culprit), std::string::npos) << p->output;
    EXPECT_NE(p->output.find("sent nothing for"), std::string::npos) << p->output;
    auto took = std::chrono::duration_cast<milliseconds>(p->ended - fault).count();
    std::printf("named and exited after %lld ms (period %d ms)\n", static_cast<long long>(took),
                kHeartbeatMs);
    // Named within the heartbeat (tests/detection_bound.h), and the process exited.
    EXPECT_LE(milliseconds(took), detectionBound(milliseconds(kHeartbeatMs), milliseconds(700)))
        << p->output;
  }
}

TEST(Heartbeat, FrozenReducerIsNamedWithinTheHeartbeatNotTheTimeout) {
  Cluster cluster;
  auto r = cluster.startReducers(2);
  auto w = cluster.startWorkers(3, Cluster::addresses(r), kLongRun, kHeartbeatOnly);
  waitUnderWay(cluster, w);
  auto fault = Clock::now();
  Cluster::signal(r[1].process, SIGSTOP);
  expectNamedWithinHeartbeat(cluster, w, fault, r[1].address);
  Cluster::signal(r[1].process, SIGKILL);
}

TEST(Heartbeat, FrozenWorkerIsNamedWithinTheHeartbeatNotTheTimeout) {
  Cluster cluster;
  auto r = cluster.startReducers(2);
  auto w = cluster.startWorkers(3, Cluster::addresses(r), kLongRun, kHeartbeatOnly);
  waitUnderWay(cluster, w);
  auto fault = Clock::now();
  Cluster::signal(w[2], SIGSTOP);
  expectNamedWithinHeartbeat(cluster, {w[0], w[1]}, fault, "rank 2");
  Cluster::signal(w[2], SIGKILL);
}

TEST(BadInput, MismatchedCountDtypeOrOpIsReportedNotHung) {
  struct Case {
    const char* name;
    std::vector<std::string> odd;
  };
  std::vector<Case> cases = {
      {"count", {"--counts", "999", "--dtypes", "float32", "--ops", "sum"}},
      {"dtype", {"--counts", "1000", "--dtypes", "int32", "--ops", "sum"}},
      {"op", {"--counts", "1000", "--dtypes", "float32", "--ops", "max"}},
  };
  std::vector<std::string> normal = {"--counts", "1000", "--dtypes", "float32", "--ops", "sum"};
  for (const auto& c : cases) {
    Cluster cluster;
    auto r = cluster.startReducers(1);
    std::map<std::string, std::string> env = kShortTimeout;
    env["LIBREDUCE_COMM_ID"] = std::string("mismatch-") + c.name;
    std::vector<Process*> ranks;
    for (int rank = 0; rank < 3; ++rank) {
      env["RANK"] = std::to_string(rank);
      env["WORLD_SIZE"] = "3";
      auto one = cluster.startWorkers(1, Cluster::addresses(r), rank == 1 ? c.odd : normal, env);
      ranks.push_back(one[0]);
    }
    ASSERT_TRUE(cluster.wait(ranks, seconds(30))) << c.name << "\n" << joinedOutput(ranks);
    for (Process* p : ranks) {
      EXPECT_EQ(p->status, 2) << c.name << "\n" << p->output;
      EXPECT_NE(p->output.find("different arguments"), std::string::npos) << p->output;
      EXPECT_NE(p->output.find("rank"), std::string::npos) << p->output;
    }
  }
}

TEST(Auth, WrongOrMissingSecretIsRefusedOnBothSides) {
  Cluster cluster;
  std::string secret_file = cluster.dir() + "/secret";
  std::ofstream(secret_file) << "job-secret-1234\n";
  chmod(secret_file.c_str(), 0600);  // reduce-server refuses a secret file others can read
  auto r = cluster.startReducers(1, {"--secret-file", secret_file});
  std::string reducers = Cluster::addresses(r);
  // Right secret: works.
  auto ok = cluster.startWorkers(2, reducers, {"--counts", "1000", "--dtypes", "float32"},
                                 {{"LIBREDUCE_SECRET", "job-secret-1234"}});
  ASSERT_TRUE(cluster.wait(ok, seconds(60)));
  for (Process* p : ok) EXPECT_EQ(p->status, 0) << p->output;
  // Wrong and missing secrets: refused, with a clear message on the worker and the reducer.
  for (std::string secret : {"wrong-secret", ""}) {
    auto bad =
        cluster.startWorkers(2, reducers, {"--counts", "10"},
                             {{"LIBREDUCE_SECRET", secret}, {"LIBREDUCE_TIMEOUT_MS", "3000"}});
    ASSERT_TRUE(cluster.wait(bad, seconds(30))) << joinedOutput(bad);
    for (Process* p : bad) {
      EXPECT_EQ(p->status, 2) << p->output;
      EXPECT_NE(p->output.find("authentication failed"), std::string::npos)
          << p->output << "\nreducer:\n"
          << r[0].process->output;
    }
  }
  EXPECT_TRUE(cluster.waitForOutput(r[0].process, "authentication failed", seconds(5)))
      << r[0].process->output;
  // A worker with a secret against a reducer without one: the worker refuses the reducer.
  auto open = cluster.startReducers(1);
  auto w = cluster.startWorkers(1, Cluster::addresses(open), {"--counts", "10"},
                                {{"LIBREDUCE_SECRET", "job-secret-1234"}});
  ASSERT_TRUE(cluster.wait(w, seconds(30)));
  EXPECT_EQ(w[0]->status, 2);
  EXPECT_NE(w[0]->output.find("authentication failed"), std::string::npos) << w[0]->output;
}

TEST(BadInput, UnreachableReducerFailsFastWithItsAddress) {
  Cluster cluster;
  auto w = cluster.startWorkers(2, "127.0.0.1:9", {"--counts", "10"}, kShortTimeout);
  ASSERT_TRUE(cluster.wait(w, seconds(30))) << joinedOutput(w);
  for (Process* p : w) {
    EXPECT_EQ(p->status, 2) << p->output;
    EXPECT_NE(p->output.find("127.0.0.1:9"), std::string::npos) << p->output;
  }
}

TEST(Abort, ReturnsWithinASecondWithAFrozenPeer) {
  // Rank 1 stops before its first operation; rank 0 posts one and aborts after 300 ms.
  std::map<std::string, std::string> env = {{"LIBREDUCE_TIMEOUT_MS", "30000"}};
  Cluster c;
  auto rr = c.startReducers(1);
  std::map<std::string, std::string> e = env;
  e["LIBREDUCE_COMM_ID"] = "abort-" + std::to_string(getpid());
  e["WORLD_SIZE"] = "2";
  e["RANK"] = "0";
  auto aborter = c.startWorkers(1, Cluster::addresses(rr), {"--abort-after-ms", "300"}, e);
  e["RANK"] = "1";
  auto frozen = c.startWorkers(1, Cluster::addresses(rr), {"--hang-after", "0"}, e);
  ASSERT_TRUE(c.wait(aborter, seconds(20))) << aborter[0]->output;
  const std::string& out = aborter[0]->output;
  EXPECT_EQ(aborter[0]->status, 0) << out;
  size_t a = out.find("abort ");
  ASSERT_NE(a, std::string::npos) << out;
  long abort_ms = std::atol(out.c_str() + a + 6);
  size_t d = out.find("destroy ");
  long destroy_ms = std::atol(out.c_str() + d + 8);
  EXPECT_LT(abort_ms, 1000) << out;
  EXPECT_LT(destroy_ms, 2000) << out;
  EXPECT_NE(out.find("aborted"), std::string::npos) << out;
  Cluster::signal(frozen[0], SIGKILL);
}

// NCCL-style init: the unique id names the reducer and no rank has LIBREDUCE_REDUCERS. The ranks
// must use that reducer (not run a ring around it): once it is frozen, the operation fails
// naming it, within the timeout.
TEST(UniqueId, ReducersOfTheIdAreUsedWithoutTheEnvironment) {
  Cluster cluster;
  auto r = cluster.startReducers(1);
  std::string id_file = cluster.dir() + "/unique-id";
  auto w = cluster.startWorkers(
      2, "", with(kLongRun, {"--id-file", id_file, "--id-reducers", r[0].address}), kShortTimeout);
  waitUnderWay(cluster, w);
  auto fault = Clock::now();
  Cluster::signal(r[0].process, SIGSTOP);
  expectSurvivorsNameCulprit(cluster, w, fault, r[0].address);
  Cluster::signal(r[0].process, SIGKILL);
}

// Destroy while a reducer is frozen: the flush of its connection never finishes. The process
// must leave by itself, in bounded time (it used to abort inside UCX, "ucp_ep.c: Assertion
// req->flags & UCP_REQUEST_FLAG_RELEASED"), whether the operation failed on the frozen reducer
// (rs) or went on around it (ring, whose ranks still joined through it); then the reducer dies.
TEST(ReducerFault, DestroyWithAFrozenReducerExitsByItself) {
  for (const char* algo : {"rs", "ring"}) {
    SCOPED_TRACE(algo);
    Cluster cluster;
    auto r = cluster.startReducers(1);
    std::string go = cluster.dir() + "/destroy-now";
    std::map<std::string, std::string> env = kShortTimeout;
    env["LIBREDUCE_ALGO"] = algo;
    const bool ring = std::string(algo) == "ring";
    // rs: runs until its operation fails, then destroys when told; ring: 20 operations, then
    // destroys at its end as usual.
    std::vector<std::string> args = ring ? std::vector<std::string>{"--colls",
                                                                    "allreduce",
                                                                    "--counts",
                                                                    "100000",
                                                                    "--dtypes",
                                                                    "float32",
                                                                    "--ops",
                                                                    "sum",
                                                                    "--iters",
                                                                    "20",
                                                                    "--announce-after",
                                                                    "5"}
                                         : with(kLongRun, {"--destroy-after-file", go});
    auto w = cluster.startWorkers(2, Cluster::addresses(r), args, env);
    waitUnderWay(cluster, w);
    Cluster::signal(r[0].process, SIGSTOP);
    if (!ring) {
      for (Process* p : w) {
        EXPECT_TRUE(cluster.waitForOutput(p, "error:", seconds(4 * kTimeoutMs / 1000 + 10)))
            << p->output;
      }
      std::ofstream(go) << "go\n";
    }
    ASSERT_TRUE(cluster.wait(w, seconds(60))) << joinedOutput(w);
    for (Process* p : w) {
      EXPECT_EQ(p->status, ring ? 0 : 2) << p->output;  // not 134 (SIGABRT)
      EXPECT_EQ(p->output.find("Assertion"), std::string::npos) << p->output;
      if (!ring) {
        EXPECT_NE(p->output.find("destroyed in"), std::string::npos) << p->output;
      }
    }
    Cluster::signal(r[0].process, SIGKILL);
  }
}

}  // namespace
}  // namespace rd::test
