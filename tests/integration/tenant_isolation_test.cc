// SPDX-License-Identifier: BSD-3-Clause
// One reducer pool, an honest job and hostile tenants that each hold a real job key of their
// own: a hello claiming 65,536 ranks, operations far ahead that hold slots open, a storm of
// release marks, a rank that stops reading. Each is refused or failed alone: the honest job
// verifies every result, and the reducer's peak resident memory stays within its limit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>

#include "common/auth.h"
#include "integration/cluster.h"
#include "integration/tenant.h"

namespace rd::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kPoolSecret = "the-shared-pool-secret-41c9";
constexpr long kMemoryLimitMiB = 64;

std::string keyOf(const std::string& comm) {
  return auth::jobKey(kPoolSecret, auth::commIdOfText(comm));
}

struct SharedPool {
  Cluster cluster;
  Reducer reducer;

  SharedPool() {
    const std::string secret_file = cluster.dir() + "/pool.secret";
    std::ofstream(secret_file) << kPoolSecret << "\n";
    chmod(secret_file.c_str(), 0600);
    reducer = cluster.startReducers(1,
                                    {"--pool-secret-file", secret_file, "--memory-limit",
                                     std::to_string(kMemoryLimitMiB) + "M"},
                                    rssCheckEnvironment())[0];
  }

  // The honest job: 2 ranks, every result verified; its wall time in seconds.
  double runHonestJob(const std::string& comm, bool* passed) {
    auto start = std::chrono::steady_clock::now();
    auto job = cluster.startWorkers(
        2, reducer.address,
        {"--counts", "1000,262144", "--dtypes", "float32,int32", "--iters", "40"},
        {{"LIBREDUCE_COMM_ID", comm}, {"LIBREDUCE_SECRET", keyOf(comm)}});
    *passed = cluster.wait(job, seconds(180));
    for (Process* p : job) {
      *passed = *passed && p->status == 0 && p->output.find(" 0 failed") != std::string::npos;
      EXPECT_EQ(p->status, 0) << p->output;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  Tenant::Options tenant(const std::string& comm) const {
    Tenant::Options o;
    o.reducer = reducer.address;
    o.comm = comm;
    o.key = keyOf(comm);
    return o;
  }
};

TEST(TenantIsolation, AHelloClaimingTooManyRanksIsRefusedWithTheLimit) {
  SharedPool pool;
  Tenant::Options o = pool.tenant("tenant-ranks");
  o.nranks = 65536;
  Tenant tenant(o);
  tenant.start();
  ASSERT_TRUE(tenant.turnedAway(seconds(20)));
  EXPECT_EQ(tenant.answerStatus(), rdInvalidUsage) << tenant.answer();
  EXPECT_NE(tenant.answer().find("at most 4096 per communicator (reduce-server --max-ranks)"),
            std::string::npos)
      << tenant.answer();
}

// The bootstrap admits a connection for its own job; a hello on it naming another job's
// communicator is refused by the join's own proof, and that job goes on.
TEST(TenantIsolation, AConnectionAdmittedForOneJobCannotJoinAnother) {
  SharedPool pool;
  auto job = pool.cluster.startWorkers(
      2, pool.reducer.address,
      {"--counts", "262144", "--dtypes", "float32", "--iters", "150", "--announce-after", "5"},
      {{"LIBREDUCE_COMM_ID", "victim"}, {"LIBREDUCE_SECRET", keyOf("victim")}});
  ASSERT_TRUE(pool.cluster.waitForOutput(job[0], "5 operations done", seconds(60)))
      << joinedOutput(job);
  Tenant::Options o = pool.tenant("intruder");
  o.hello_comm = "victim";
  Tenant intruder(o);
  intruder.start();
  ASSERT_TRUE(intruder.turnedAway(seconds(20)));
  EXPECT_EQ(intruder.answerStatus(), rdAuthFailed) << intruder.answer();
  EXPECT_TRUE(intruder.heard("not the job key of the communicator its hello names", seconds(5)))
      << intruder.answer();
  ASSERT_TRUE(pool.cluster.wait(job, seconds(120))) << joinedOutput(job);
  for (Process* p : job) {
    EXPECT_EQ(p->status, 0) << p->output;
    EXPECT_NE(p->output.find(" 0 failed"), std::string::npos) << p->output;
  }
}

TEST(TenantIsolation, FloodingTenantsFailAloneAndTheOtherJobVerifies) {
  SharedPool pool;
  bool passed = false;
  const double alone = pool.runHonestJob("honest-alone", &passed);
  ASSERT_TRUE(passed);
  const long baseline_kib = Cluster::rssKiB(pool.reducer.process);

  // Operations far ahead: rank 0 alone contributes, so every slot stays open until the
  // tenant's share of memory is full; then its contributions wait, until too many do.
  Tenant::Options ahead_options = pool.tenant("tenant-ahead");
  Tenant ahead(ahead_options);
  ahead.start();
  ASSERT_TRUE(ahead.joined(seconds(20))) << ahead.answer();
  // Release marks of every operation number, then one of another epoch.
  Tenant::Options marks_options = pool.tenant("tenant-marks");
  marks_options.failover = true;
  Tenant marks(marks_options);
  marks.start();
  ASSERT_TRUE(marks.joined(seconds(20))) << marks.answer();

  auto start = std::chrono::steady_clock::now();
  auto job = pool.cluster.startWorkers(
      2, pool.reducer.address,
      {"--counts", "1000,262144", "--dtypes", "float32,int32", "--iters", "40"},
      {{"LIBREDUCE_COMM_ID", "honest-beside"}, {"LIBREDUCE_SECRET", keyOf("honest-beside")}});
  ahead.sendOpsAhead(1000, 1000, 1400);
  marks.sendLanded(1, 20000);  // five times the operations a communicator remembers
  marks.sendLanded(1, 1, marks.epoch() + 7);
  ASSERT_TRUE(pool.cluster.wait(job, seconds(180))) << joinedOutput(job);
  const double beside =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (Process* p : job) {
    EXPECT_EQ(p->status, 0) << p->output;
    EXPECT_NE(p->output.find(" 0 failed"), std::string::npos) << p->output;
  }
  // The reducer tells the tenant's other rank why, then closes every connection of it.
  EXPECT_TRUE(ahead.heard("wait for memory already", seconds(30))) << ahead.answer();
  EXPECT_TRUE(marks.heard("bad landed: epoch", seconds(30))) << marks.answer();
  const long peak_kib = Cluster::rssKiB(pool.reducer.process, "VmHWM:");
  std::printf(
      "honest job alone %.2f s, beside the flooding tenants %.2f s (%.2fx); reducer "
      "resident %ld KiB after it alone, peak %ld KiB (limit %ld MiB)\n",
      alone, beside, beside / alone, baseline_kib, peak_kib, kMemoryLimitMiB);
  // Under ASan the shadow of what the flood touches and the quarantine come on top: half more.
  const long allowed_kib = kMemoryLimitMiB * 1024 * (underAddressSanitizer() ? 3 : 2) / 2;
  EXPECT_LE(peak_kib, baseline_kib + allowed_kib);
  EXPECT_TRUE(
      pool.cluster.waitForOutput(pool.reducer.process, "wait for memory already", seconds(10)));
}

// A rank that stops reading (SIGSTOP) pins the results sent to it: its communicator fails on
// the heartbeat, then the reducer closes every connection of it and frees what it held.
TEST(TenantIsolation, AStalledJobIsClosedWhileTheOtherJobVerifies) {
  SharedPool pool;
  auto stalled = pool.cluster.startWorkers(
      2, pool.reducer.address,
      {"--counts", "262144", "--dtypes", "float32", "--iters", "100000", "--announce-after", "5"},
      {{"LIBREDUCE_COMM_ID", "stalled"},
       {"LIBREDUCE_SECRET", keyOf("stalled")},
       {"LIBREDUCE_HEARTBEAT_MS", "1000"}});
  ASSERT_TRUE(pool.cluster.waitForOutput(stalled[0], "5 operations done", seconds(60)))
      << joinedOutput(stalled);
  Cluster::signal(stalled[1], SIGSTOP);
  bool passed = false;
  pool.runHonestJob("honest", &passed);
  EXPECT_TRUE(passed);
  EXPECT_TRUE(pool.cluster.waitForOutput(pool.reducer.process,
                                         "rank 1 was closed: its communicator failed", seconds(30)))
      << pool.reducer.process->output;
  Cluster::signal(stalled[1], SIGCONT);
  ASSERT_TRUE(pool.cluster.wait(stalled, seconds(60))) << joinedOutput(stalled);
  EXPECT_EQ(stalled[0]->status, 2) << stalled[0]->output;
  EXPECT_NE(stalled[0]->output.find("rank 1 sent nothing"), std::string::npos)
      << stalled[0]->output;
}

}  // namespace
}  // namespace rd::test
