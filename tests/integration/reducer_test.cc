// SPDX-License-Identifier: BSD-3-Clause
// The reducer as a service: bounded memory whatever the message size, flat memory over a long
// run, no CPU while idle, malformed frames close only the offending connection.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "cluster.h"
#include "common/auth.h"
#include "protocol/wire.h"
#include "transport/transport.h"

namespace rd::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

void expectAllPassed(Cluster& cluster, const std::vector<Process*>& workers, seconds limit) {
  ASSERT_TRUE(cluster.wait(workers, limit)) << joinedOutput(workers);
  for (Process* p : workers) {
    EXPECT_EQ(p->status, 0) << p->output;
    EXPECT_NE(p->output.find(" 0 failed"), std::string::npos) << p->output;
  }
}

// 1 GiB all-reduce across 4 workers through a reducer limited to 64 MiB.
TEST(Reducer, MemoryStaysUnderItsLimitForAHugeAllReduce) {
  Cluster cluster;
  auto r = cluster.startReducers(1, {"--memory-limit", "64M"}, rssCheckEnvironment());
  auto w = cluster.startWorkers(4, Cluster::addresses(r),
                                {"--constant", "--counts", std::to_string(1ull << 28)});
  expectAllPassed(cluster, w, seconds(600));
  long peak_kib = Cluster::rssKiB(r[0].process, "VmHWM:");
  std::printf("reducer peak RSS %ld KiB (limit 64 MiB + 64 MiB allowance)\n", peak_kib);
  EXPECT_GT(peak_kib, 0);
  EXPECT_LT(peak_kib, 128 * 1024);
}

// 10,000 verified all-reduces; the reducer's resident memory stays flat after warm-up.
TEST(Reducer, SoakTenThousandAllReducesWithFlatMemory) {
  Cluster cluster;
  auto r = cluster.startReducers(2);
  auto w = cluster.startWorkers(4, Cluster::addresses(r),
                                {"--counts", "70000", "--dtypes", "float32", "--ops", "sum",
                                 "--placement", "in", "--iters", "10000"});
  std::vector<long> samples;
  auto start = std::chrono::steady_clock::now();
  while (!cluster.wait(w, milliseconds(500))) {
    samples.push_back(Cluster::rssKiB(r[0].process));
    ASSERT_LT(std::chrono::steady_clock::now() - start, seconds(1200));
  }
  expectAllPassed(cluster, w, seconds(1));
  for (Process* p : w) EXPECT_NE(p->output.find("10000 checks"), std::string::npos) << p->output;
  ASSERT_GE(samples.size(), 4u) << "run too short to sample";
  long warm = samples[samples.size() / 4];
  long last = samples.back();
  std::printf("reducer RSS after warm-up %ld KiB, at the end %ld KiB (%zu samples)\n", warm, last,
              samples.size());
  EXPECT_LE(last, warm + warm / 20) << "RSS grew more than 5%";
}

// Idle processes block instead of spinning.
TEST(Reducer, IdleReducerAndWaitingWorkerUseAlmostNoCpu) {
  Cluster cluster;
  auto r = cluster.startReducers(1);
  // Rank 1 stops before its first operation, so rank 0 waits inside an all-reduce.
  std::map<std::string, std::string> env = {{"LIBREDUCE_TIMEOUT_MS", "60000"}};
  auto w = cluster.startWorkers(2, Cluster::addresses(r), {"--hang-after", "0", "--counts", "10"},
                                env, {{0, {{"RD_IGNORED", "1"}}}});
  // Only rank 1 hangs; rank 0 runs normally until it waits for rank 1.
  ASSERT_TRUE(cluster.waitForOutput(w[1], "stopping", seconds(30))) << w[1]->output;
  // CPU time over a 3 s window, from half a second on: by then rank 0 is waiting inside its
  // all-reduce (its first chunk went out long before).
  std::this_thread::sleep_for(milliseconds(500));
  double reducer0 = Cluster::cpuSeconds(r[0].process);
  double worker0 = Cluster::cpuSeconds(w[0]);
  std::this_thread::sleep_for(seconds(3));
  double reducer_use = (Cluster::cpuSeconds(r[0].process) - reducer0) / 3;
  double worker_use = (Cluster::cpuSeconds(w[0]) - worker0) / 3;
  std::printf("idle reducer %.2f%% of a core, idle worker %.2f%%\n", 100 * reducer_use,
              100 * worker_use);
  EXPECT_LT(reducer_use, 0.02);
  EXPECT_LT(worker_use, 0.02);
}

// Malformed frames: the reducer closes that connection and keeps serving everyone else.
TEST(Reducer, MalformedFramesCloseOnlyTheOffendingConnection) {
  Cluster cluster;
  auto r = cluster.startReducers(1);
  struct BadFrame {
    const char* name;
    std::string header;
    std::string payload;
  };
  wire::Header good = wire::makeHeader(wire::MsgType::kHello, 42, 0, 0, 2);
  auto bytes = [](wire::Header h) { return std::string(reinterpret_cast<char*>(&h), sizeof h); };
  wire::Header bad_magic = good;
  bad_magic.magic = 0xdeadbeef;
  wire::Header bad_version = good;
  bad_version.version = 99;
  wire::Header bad_length = good;
  bad_length.payload_bytes = 1ull << 40;
  wire::Header data_before_join = wire::makeHeader(wire::MsgType::kData, 42, 1, 0, 2);
  std::vector<BadFrame> frames = {
      {"bad magic", bytes(bad_magic), ""},
      {"bad version", bytes(bad_version), ""},
      {"truncated header", bytes(good).substr(0, 20), ""},
      {"length over the cap", bytes(bad_length), ""},
      {"hello without body", bytes(good), ""},
      {"data before join", bytes(data_before_join), ""},
  };
  for (const auto& f : frames) {
    std::promise<std::string> closed;
    auto closed_future = closed.get_future();
    bool reported = false;
    transport::Handlers h;
    h.on_failure = [&](transport::ConnId, rdResult_t, const std::string& why) {
      if (!reported) closed.set_value(why);
      reported = true;
    };
    std::unique_ptr<transport::Transport> t;
    ASSERT_EQ(transport::createTransport("ucx", nullptr, {}, h, &t), rdSuccess);
    transport::ConnId conn = 0;
    ASSERT_EQ(t->runSync([&] { return t->connect(r[0].address, &conn); }), rdSuccess);
    t->post([&] {
      t->send(conn, f.header.data(), f.header.size(), f.payload.data(), f.payload.size(), {});
    });
    EXPECT_EQ(closed_future.wait_for(seconds(10)), std::future_status::ready)
        << f.name << ": connection not closed";
    t->runSync([&] {
      t->close(conn);
      return rdSuccess;
    });
    t.reset();
  }
  EXPECT_TRUE(cluster.waitForOutput(r[0].process, "bad magic", seconds(5))) << r[0].process->output;
  // Everyone else is still served.
  auto w =
      cluster.startWorkers(3, Cluster::addresses(r), {"--counts", "1000", "--dtypes", "int32"});
  expectAllPassed(cluster, w, seconds(120));
}

// SIGTERM: the daemon says so and exits 0; --bind-nic reports what it did.
TEST(Reducer, ExitsCleanlyOnSigtermAndReportsBinding) {
  Cluster cluster;
  // hwloc's device discovery leaks inside a library it unloads again (libnl): LeakSanitizer can
  // neither attribute nor suppress that, so this one reducer runs without its leak check.
  auto r = cluster.startReducers(1, {"--bind-nic", "--threads", "1", "--log-level", "info"},
                                 {{"LSAN_OPTIONS", "detect_leaks=0"}});
  auto w =
      cluster.startWorkers(2, Cluster::addresses(r), {"--counts", "1000", "--dtypes", "int64"});
  expectAllPassed(cluster, w, seconds(60));
  Cluster::signal(r[0].process, SIGTERM);
  ASSERT_TRUE(cluster.wait({r[0].process}, seconds(10))) << r[0].process->output;
  EXPECT_EQ(r[0].process->status, 0) << r[0].process->output;
  EXPECT_NE(r[0].process->output.find("shutting down"), std::string::npos);
  // What --bind-nic did, either way: "bound near IF to CPUs ..." or "not bound: <why>".
  const std::string& out = r[0].process->output;
  const bool bound = out.find("reduce-server: bound near ") != std::string::npos;
  const bool not_bound = out.find("reduce-server: not bound: ") != std::string::npos;
  EXPECT_TRUE(bound != not_bound) << out;
}

// Bad command lines are refused with a message, not a crash.
TEST(Reducer, RefusesBadFlags) {
  Cluster cluster;
  for (std::vector<std::string> flags : {std::vector<std::string>{"--memory-limit", "lots"},
                                         {"--listen", "nohostport"},
                                         {"--secret-file", "/nonexistent/secret"},
                                         {"--lanes", "0"},
                                         {"--threads", "many"},
                                         {"--bogus"}}) {
    std::vector<std::string> argv = flags;
    auto* p = cluster.startRaw(argv);
    ASSERT_TRUE(cluster.wait({p}, seconds(10)));
    EXPECT_EQ(p->status, 2) << p->output;
    EXPECT_NE(p->output.find("reduce-server:"), std::string::npos) << p->output;
  }
}

// A reducer with several lanes: its ready line lists one address per lane, each with its own
// thread and UCX worker, and a job given them all spreads its chunks over every lane.
TEST(Reducer, LanesEachServeAShareOfTheChunks) {
  Cluster cluster;
  auto r = cluster.startReducers(2, {"--lanes", "3", "--threads", "2"});
  for (const auto& reducer : r) {
    EXPECT_EQ(std::count(reducer.address.begin(), reducer.address.end(), ','), 2)
        << reducer.address;
  }
  auto w = cluster.startWorkers(3, Cluster::addresses(r),
                                {"--counts", "7,1000,1048579", "--dtypes", "float32,int64"});
  expectAllPassed(cluster, w, seconds(300));
  // Each lane served a share: the reducers say how many chunks each lane served as they stop.
  for (const auto& reducer : r) {
    Cluster::signal(reducer.process, SIGTERM);
    ASSERT_TRUE(cluster.wait({reducer.process}, seconds(10))) << reducer.process->output;
    for (int lane = 0; lane < 3; ++lane) {
      const std::string key = "LIBREDUCE_REDUCER_SERVED lane=" + std::to_string(lane) + " chunks=";
      auto at = reducer.process->output.find(key);
      ASSERT_NE(at, std::string::npos) << reducer.process->output;
      EXPECT_GT(std::atol(reducer.process->output.c_str() + at + key.size()), 0)
          << reducer.process->output;
    }
  }
  // Memory splits between the lanes: 3 ranks x 1 MiB chunks fit a communicator's half of each
  // lane's third of 24M.
  auto small = cluster.startReducers(1, {"--lanes", "3", "--memory-limit", "24M"});
  auto big = cluster.startWorkers(3, Cluster::addresses(small),
                                  {"--counts", "4194305", "--dtypes", "float32"},
                                  {{"LIBREDUCE_CHUNK_BYTES", "1M"}});
  expectAllPassed(cluster, big, seconds(300));
}

// Two jobs on the same reducers at once stay apart.
TEST(Reducer, ServesSeveralCommunicatorsAtOnce) {
  Cluster cluster;
  auto r = cluster.startReducers(2);
  auto a = cluster.startWorkers(3, Cluster::addresses(r),
                                {"--counts", "1000,1048579", "--dtypes", "float32,int32"});
  auto b = cluster.startWorkers(2, Cluster::addresses(r),
                                {"--counts", "7,1000,1048579", "--dtypes", "float64,uint8"});
  expectAllPassed(cluster, a, seconds(300));
  expectAllPassed(cluster, b, seconds(300));
}

// An id LIBREDUCE_COMM_ID does not give is drawn at random at rank 0's rendezvous, as NCCL's
// bootstrap root draws one: the same job run twice gets two ids, and neither is the hash of
// MASTER_ADDR:MASTER_PORT that anyone could compute.
TEST(Reducer, AnIdNotGivenIsDrawnAtRandomAtRankZero) {
  Cluster cluster;
  auto r = cluster.startReducers(1, {"--log-level", "info"});
  const std::string port = std::to_string(20000 + (getpid() * 16 + 9) % 12000);
  const std::map<std::string, std::string> env = {{"LIBREDUCE_COMM_ID", ""}, {"MASTER_PORT", port}};
  const std::regex joined("comm ([0-9a-f]{16}): first rank joining");
  std::set<std::string> ids;
  for (int run = 1; run <= 2; ++run) {
    auto w = cluster.startWorkers(2, Cluster::addresses(r), {"--counts", "1000"}, env);
    expectAllPassed(cluster, w, seconds(60));
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    while (static_cast<int>(ids.size()) < run && std::chrono::steady_clock::now() < deadline) {
      cluster.waitForOutput(r[0].process, "first rank joining", milliseconds(200));
      const std::string& out = r[0].process->output;
      for (std::sregex_iterator m(out.begin(), out.end(), joined), end; m != end; ++m) {
        ids.insert((*m)[1]);
      }
    }
  }
  ASSERT_EQ(ids.size(), 2u) << r[0].process->output;
  char derived[17];
  std::snprintf(derived, sizeof derived, "%016llx",
                static_cast<unsigned long long>(auth::commIdOfText("127.0.0.1:" + port)));
  EXPECT_EQ(ids.count(derived), 0u) << "the id is the hash of MASTER_ADDR:MASTER_PORT";
}

}  // namespace
}  // namespace rd::test
