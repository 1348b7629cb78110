// SPDX-License-Identifier: BSD-3-Clause
// Every collective through real reduce-server processes and real worker processes over UCX,
// checked element by element against rdLocalReduce of every rank's inputs.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <tuple>

#include "cluster.h"

namespace rd::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kCounts = "0,1,7,1000,1048579";  // 1048579 = (1 << 20) + 3

void expectAllPassed(Cluster& cluster, const std::vector<Process*>& workers, seconds limit) {
  ASSERT_TRUE(cluster.wait(workers, limit))
      << "workers still running after " << limit.count() << " s\n"
      << joinedOutput(workers);
  for (size_t r = 0; r < workers.size(); ++r) {
    EXPECT_EQ(workers[r]->status, 0) << "rank " << r << ":\n" << workers[r]->output;
    EXPECT_NE(workers[r]->output.find(" 0 failed"), std::string::npos) << workers[r]->output;
  }
}

class Matrix : public ::testing::TestWithParam<std::tuple<int, int>> {};

// All-reduce: every dtype x op x count x placement, exact inputs.
TEST_P(Matrix, AllReduceEveryDtypeOpCount) {
  auto [workers, reducers] = GetParam();
  Cluster cluster;
  auto r = cluster.startReducers(reducers);
  auto w = cluster.startWorkers(workers, Cluster::addresses(r),
                                {"--colls", "allreduce", "--counts", kCounts});
  expectAllPassed(cluster, w, seconds(600));
}

// Reduce-scatter, all-gather, broadcast and barrier: every dtype and op up to 1000 elements,
// and the large uneven count for float32 and int8.
TEST_P(Matrix, OtherCollectives) {
  auto [workers, reducers] = GetParam();
  Cluster cluster;
  auto r = cluster.startReducers(reducers);
  auto w = cluster.startWorkers(
      workers, Cluster::addresses(r),
      {"--colls", "reducescatter,allgather,broadcast,barrier", "--counts", "0,1,7,1000"});
  expectAllPassed(cluster, w, seconds(600));
  auto big = cluster.startWorkers(workers, Cluster::addresses(r),
                                  {"--colls", "reducescatter,allgather,broadcast", "--counts",
                                   "1048579", "--dtypes", "float32,int8", "--ops", "sum,max"});
  expectAllPassed(cluster, big, seconds(600));
}

// Real processes over UCX for a few shapes, up to 8 workers; every ranks x reducers combination
// up to 5 ranks runs in tests/loopback (the same worker and reducer code, in one process).
INSTANTIATE_TEST_SUITE_P(WorkersReducers, Matrix,
                         ::testing::Values(std::make_tuple(1, 1), std::make_tuple(1, 3),
                                           std::make_tuple(2, 1), std::make_tuple(2, 3),
                                           std::make_tuple(3, 1), std::make_tuple(3, 3),
                                           std::make_tuple(8, 2)),
                         [](const auto& param_info) {
                           return std::to_string(std::get<0>(param_info.param)) + "workers_" +
                                  std::to_string(std::get<1>(param_info.param)) + "reducers";
                         });

// Random floats: results within the rounding error any order of summation can make of the exact
// value (worker_check.cc, randomBounds).
TEST(Collectives, RandomFloatsWithinTolerance) {
  Cluster cluster;
  auto r = cluster.startReducers(2);
  auto w = cluster.startWorkers(4, Cluster::addresses(r),
                                {"--random", "--colls", "allreduce,reducescatter", "--counts",
                                 "1000,1048579", "--dtypes", "float16,bfloat16,float32,float64"});
  expectAllPassed(cluster, w, seconds(600));
  for (Process* p : w) {  // how close the rounding came to the bound, for the record
    auto at = p->output.find("largest rounding error");
    ASSERT_NE(at, std::string::npos) << p->output;
    std::printf("%s\n", p->output.substr(at, p->output.find('\n', at) - at).c_str());
  }
}

// Deterministic mode: random floats give bit-identical results on every rank and every run.
TEST(Collectives, DeterministicModeIsBitIdenticalAcrossRunsAndRanks) {
  Cluster cluster;
  auto r = cluster.startReducers(2);
  std::vector<std::string> args = {"--random", "--print-hash", "--colls",  "allreduce",
                                   "--counts", "1000,300000",  "--dtypes", "float32,bfloat16",
                                   "--ops",    "sum,avg"};
  std::string first_hash;
  for (int run = 0; run < 2; ++run) {
    auto w =
        cluster.startWorkers(4, Cluster::addresses(r), args, {{"LIBREDUCE_DETERMINISTIC", "1"}});
    expectAllPassed(cluster, w, seconds(300));
    for (Process* p : w) {
      size_t at = p->output.find("hash ");
      ASSERT_NE(at, std::string::npos) << p->output;
      std::string hash = p->output.substr(at + 5, 16);
      if (first_hash.empty()) first_hash = hash;
      EXPECT_EQ(hash, first_hash) << "results differ between ranks or runs";
    }
  }
}

// LIBREDUCE_ALGO=auto over real processes: each size's first calls are runs of rs and ring, then
// every rank settles on the same one (a disagreement would hang or fail the operation). 8 calls
// decide the 4 MiB class (one call per run); the small classes are still in their runs, which
// every rank must take at the same calls too.
TEST(Collectives, AutoSettlesEverySizeOnTheSameAlgorithmOnEveryRank) {
  Cluster cluster;
  auto r = cluster.startReducers(2);
  auto w = cluster.startWorkers(4, Cluster::addresses(r),
                                {"--colls", "allreduce", "--counts", "7,1000,1048579", "--dtypes",
                                 "float32,int32", "--ops", "sum,max", "--iters", "8"},
                                {{"LIBREDUCE_ALGO", "auto"}});
  expectAllPassed(cluster, w, seconds(300));
}

// Ring all-reduce between the workers, with reducers given (LIBREDUCE_ALGO=ring) and without.
TEST(Collectives, RingAllReduce) {
  Cluster cluster;
  auto r = cluster.startReducers(1);
  for (int workers : {1, 2, 3, 5}) {
    auto w = cluster.startWorkers(workers, Cluster::addresses(r),
                                  {"--colls", "allreduce", "--counts", kCounts, "--dtypes",
                                   "int32,float16,float32,uint8", "--ops", "sum,avg,min,prod"},
                                  {{"LIBREDUCE_ALGO", "ring"}});
    expectAllPassed(cluster, w, seconds(300));
  }
  auto w = cluster.startWorkers(4, "", {"--colls", "allreduce", "--counts", "7,1000,1048579"});
  expectAllPassed(cluster, w, seconds(300));
}

// Without reducers, reduce-scatter, all-gather, broadcast and barrier run as ring all-reduces
// (ring_composite.h): the same element-by-element checks as through the reducers.
TEST(Collectives, OtherCollectivesWithoutReducers) {
  Cluster cluster;
  for (int workers : {1, 2, 3}) {
    auto w = cluster.startWorkers(
        workers, "",
        {"--colls", "reducescatter,allgather,broadcast,barrier", "--counts", "0,1,7,1000",
         "--dtypes", "int8,int32,float16,bfloat16,float64", "--ops", "sum,min,avg"});
    expectAllPassed(cluster, w, seconds(300));
  }
  auto big = cluster.startWorkers(3, "",
                                  {"--colls", "reducescatter,allgather,broadcast", "--counts",
                                   "1048579", "--dtypes", "float32", "--ops", "sum"});
  expectAllPassed(cluster, big, seconds(300));
}

}  // namespace
}  // namespace rd::test
