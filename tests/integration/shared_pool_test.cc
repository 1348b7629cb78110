// SPDX-License-Identifier: BSD-3-Clause
// One reducer pool shared by two jobs (reduce-server --pool-secret-file): each job's workers
// hold only their own key, derived from the pool secret and their communicator id; both jobs
// verify every result while the other runs; a worker that holds job A's key and names job B is
// refused with an authentication error before it learns anything, and job B goes on untouched.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "common/auth.h"
#include "integration/cluster.h"

namespace rd::test {
namespace {

using std::chrono::seconds;

struct Pool {
  Cluster cluster;
  std::string secret_file;
  std::vector<Reducer> reducers;
  std::string addresses;

  explicit Pool(int count) {
    secret_file = cluster.dir() + "/pool.secret";
    std::ofstream(secret_file) << "the-pool-secret-7f3a\n";
    chmod(secret_file.c_str(), 0600);
    reducers = cluster.startReducers(count, {"--pool-secret-file", secret_file});
    addresses = Cluster::addresses(reducers);
  }
  // The environment of a rank of job @p job holding the key of job @p key_of.
  static std::map<std::string, std::string> job(const std::string& job, const std::string& key_of) {
    return {{"LIBREDUCE_COMM_ID", job},
            {"LIBREDUCE_SECRET", auth::jobKey("the-pool-secret-7f3a", auth::commIdOfText(key_of))},
            {"LIBREDUCE_TIMEOUT_MS", "20000"}};
  }
};

TEST(SharedPool, TwoJobsEachVerifiedWhileTheOtherRuns) {
  Pool pool(2);
  const std::vector<std::string> work = {"--counts",      "1000,300000", "--dtypes",
                                         "float32,int32", "--iters",     "20"};
  auto a = pool.cluster.startWorkers(2, pool.addresses, work, Pool::job("job-a", "job-a"));
  auto b = pool.cluster.startWorkers(3, pool.addresses, work, Pool::job("job-b", "job-b"));
  ASSERT_TRUE(pool.cluster.wait(a, seconds(120))) << joinedOutput(a);
  ASSERT_TRUE(pool.cluster.wait(b, seconds(120))) << joinedOutput(b);
  for (const auto* job : {&a, &b}) {
    for (Process* p : *job) {
      EXPECT_EQ(p->status, 0) << p->output;
      EXPECT_NE(p->output.find(" 0 failed"), std::string::npos) << p->output;
    }
  }
}

TEST(SharedPool, AnotherJobsKeyIsRefusedAndThatJobGoesOn) {
  Pool pool(1);
  auto b = pool.cluster.startWorkers(2, pool.addresses,
                                     {"--counts", "100000", "--dtypes", "float32", "--ops", "sum",
                                      "--iters", "600", "--announce-after", "5"},
                                     Pool::job("job-b", "job-b"));
  ASSERT_TRUE(pool.cluster.waitForOutput(b[0], "5 operations done", seconds(60)))
      << joinedOutput(b);
  // Rank 1 of job B, as far as its environment says, but holding job A's key.
  auto env = Pool::job("job-b", "job-a");
  env["LIBREDUCE_TIMEOUT_MS"] = "3000";
  env["RANK"] = "1";
  env["WORLD_SIZE"] = "2";
  auto intruder = pool.cluster.startWorkers(1, pool.addresses, {"--counts", "100000"}, env);
  ASSERT_TRUE(pool.cluster.wait(intruder, seconds(30))) << joinedOutput(intruder);
  EXPECT_LT(b[0]->status, 0) << "job B ended before the intruder was turned away";
  EXPECT_EQ(intruder[0]->status, 2) << intruder[0]->output;
  EXPECT_NE(intruder[0]->output.find("authentication failed"), std::string::npos)
      << intruder[0]->output;
  EXPECT_NE(intruder[0]->output.find("not the job key of the communicator it named"),
            std::string::npos)
      << intruder[0]->output;
  ASSERT_TRUE(pool.cluster.wait(b, seconds(120))) << joinedOutput(b);
  for (Process* p : b) {
    EXPECT_EQ(p->status, 0) << p->output;
    EXPECT_NE(p->output.find(" 0 failed"), std::string::npos) << p->output;
  }
  // The pool's own secret is not a job key either, and no key at all is refused too.
  for (const char* secret : {"the-pool-secret-7f3a", ""}) {
    auto env2 = Pool::job("job-c", "job-c");
    env2["LIBREDUCE_SECRET"] = secret;
    env2["LIBREDUCE_TIMEOUT_MS"] = "3000";
    auto w = pool.cluster.startWorkers(1, pool.addresses, {"--counts", "10"}, env2);
    ASSERT_TRUE(pool.cluster.wait(w, seconds(30))) << joinedOutput(w);
    EXPECT_EQ(w[0]->status, 2) << w[0]->output;
    EXPECT_NE(w[0]->output.find("authentication failed"), std::string::npos) << w[0]->output;
  }
}

}  // namespace
}  // namespace rd::test
