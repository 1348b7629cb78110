// SPDX-License-Identifier: BSD-3-Clause
// Joining: the algorithm is resolved once from every source of settings and every rank must
// agree; the unique id's reducers win over the environment; the secret is proven both ways.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

#include "collectives/algorithms/registry.h"
#include "collectives/unique_id.h"
#include "world.h"

namespace rd::test {
namespace {

using transport::loopback::Fabric;

// Unsets @p name for the scope of the object (tests must not depend on the caller's env).
class ScopedUnset {
 public:
  explicit ScopedUnset(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) saved_ = v, had_ = true;
    unsetenv(name);
  }
  ~ScopedUnset() {
    if (had_) setenv(name_, saved_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string saved_;
  bool had_ = false;
};

// Joins @p ranks ranks with @p reducers reducers, rank configs changed by @p change, expecting
// the join to fail; every rank's outcome.
std::vector<Outcome> failedJoin(int ranks, int reducers,
                                const std::function<void(int rank, coll::CommConfig*)>& change) {
  WorldOptions o;
  o.ranks = ranks;
  o.reducers = reducers;
  o.timeout_ms = 300;
  World world(o);
  std::vector<coll::CommConfig> configs;
  for (int r = 0; r < ranks; ++r) {
    configs.push_back(world.config(r));
    change(r, &configs.back());
  }
  EXPECT_NE(world.join(configs), rdSuccess);
  for (const auto& outcome : world.joinOutcomes()) EXPECT_LT(outcome.status, 0) << outcome.error;
  return world.joinOutcomes();
}

int mentioning(const std::vector<Outcome>& outcomes, const std::string& text) {
  int n = 0;
  for (const auto& o : outcomes) n += o.error.find(text) != std::string::npos ? 1 : 0;
  return n;
}

TEST(Algorithm, ResolvedOnceFromReducersAndRequest) {
  rdAlgorithm_t got = rdAlgoDefault;
  // With reducers auto stays auto: the communicator measures rs against ring per size.
  ASSERT_EQ(coll::resolveAlgorithm(rdAlgoDefault, true, &got), rdSuccess);
  EXPECT_EQ(got, rdAlgoDefault);
  ASSERT_EQ(coll::resolveAlgorithm(rdAlgoDefault, false, &got), rdSuccess);
  EXPECT_EQ(got, rdAlgoRing);
  ASSERT_EQ(coll::resolveAlgorithm(rdAlgoRing, true, &got), rdSuccess);
  EXPECT_EQ(got, rdAlgoRing);
  EXPECT_EQ(coll::resolveAlgorithm(rdAlgoReductionServer, false, &got), rdInvalidArgument);
  EXPECT_NE(lastError().find("needs reducers"), std::string::npos) << lastError();
  EXPECT_EQ(coll::resolveAlgorithm(rdNumAlgorithms, true, &got), rdInvalidArgument);
}

// Collectives the ring does not run go through the reducers when there are any; without them
// they are rewritten into a ring all-reduce. An empty all-reduce is a barrier either way.
TEST(Algorithm, SelectionPerCollective) {
  struct Case {
    rdAlgorithm_t configured;
    bool reducers;
    Collective coll;
    size_t count;
    rdAlgorithm_t want;
    Collective runs_as;
  };
  const Case cases[] = {
      {rdAlgoReductionServer, true, Collective::kAllReduce, 10, rdAlgoReductionServer,
       Collective::kAllReduce},
      {rdAlgoRing, true, Collective::kAllReduce, 10, rdAlgoRing, Collective::kAllReduce},
      {rdAlgoRing, true, Collective::kReduceScatter, 10, rdAlgoReductionServer,
       Collective::kReduceScatter},
      {rdAlgoRing, true, Collective::kBarrier, 0, rdAlgoReductionServer, Collective::kBarrier},
      {rdAlgoRing, true, Collective::kAllReduce, 0, rdAlgoReductionServer, Collective::kAllReduce},
      {rdAlgoRing, false, Collective::kBarrier, 0, rdAlgoRing, Collective::kAllReduce},
      {rdAlgoRing, false, Collective::kAllGather, 10, rdAlgoRing, Collective::kAllReduce},
      {rdAlgoRing, false, Collective::kBroadcast, 10, rdAlgoRing, Collective::kAllReduce},
  };
  std::vector<float> send(40), recv(40);
  for (const Case& c : cases) {
    coll::OpDesc d;
    d.coll = c.coll;
    d.count = c.count;
    d.send = send.data();
    d.recv = recv.data();
    ASSERT_EQ(coll::selectAlgorithm(c.configured, c.reducers, 0, 4, &d), rdSuccess);
    EXPECT_EQ(d.algorithm, c.want) << static_cast<int>(c.coll);
    EXPECT_EQ(d.coll, c.runs_as) << static_cast<int>(c.coll);
  }
}

TEST(Algorithm, EveryRankMustResolveTheSameOne) {
  auto outcomes = failedJoin(3, 1, [](int rank, coll::CommConfig* c) {
    if (rank == 2) c->algorithm = rdAlgoRing;
  });
  // Whoever joined first set the communicator's algorithm; the others are refused, naming both.
  EXPECT_GE(mentioning(outcomes, "its algorithm is"), 1);
}

TEST(Algorithm, RingAskedForWithReducersUsesTheRingForAllReduce) {
  WorldOptions o;
  o.ranks = 3;
  o.reducers = 1;
  o.algorithm = rdAlgoRing;
  World world(o);
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  EXPECT_EQ(world.rank(0).config().algorithm, rdAlgoRing);
  // A frozen reducer does not stop a ring all-reduce; a barrier still goes through it.
  Fabric::freeze(world.reducerAddress(0));
  EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 5000, rdFloat32, rdSum)));
  Fabric::thaw(world.reducerAddress(0));
  EXPECT_TRUE(allCorrect(world.run(Collective::kBarrier, 0, rdUint8, rdSum)));
}

// NCCL-style init with reducers in the unique id and none in the environment: the ranks use the
// id's reducers (once frozen, the operation fails naming it); they used to run a ring around it.
TEST(UniqueId, ItsReducersWinOverAnEnvironmentWithout) {
  ScopedUnset no_reducers("LIBREDUCE_REDUCERS");
  ScopedUnset no_algo("LIBREDUCE_ALGO");
  WorldOptions o;
  o.ranks = 2;
  o.reducers = 1;
  o.timeout_ms = 200;
  World world(o);
  rdUniqueId id{};
  ASSERT_EQ(
      coll::makeUniqueIdWithCommId(world.reducerAddress(0), o.secret, 77, nullptr, &id, "loopback"),
      rdSuccess)
      << lastError();
  std::vector<coll::CommConfig> configs;
  for (int r = 0; r < 2; ++r) {
    coll::CommConfig c = world.config(r);
    c.reducers.clear();
    c.algorithm = rdAlgoDefault;
    ASSERT_EQ(coll::configFromSettings(&c), rdSuccess) << lastError();
    ASSERT_TRUE(c.reducers.empty());
    ASSERT_EQ(coll::readUniqueId(id, &c), rdSuccess) << lastError();
    c.listen_host = "rank" + std::to_string(r);
    c.transport = "loopback";
    c.timeout_ms = o.timeout_ms;
    configs.push_back(c);
  }
  ASSERT_EQ(world.join(configs), rdSuccess) << lastError();
  // auto with the id's reducers (without them it would be the ring): a broadcast goes through
  // them, so a frozen reducer fails it by name.
  EXPECT_EQ(world.rank(0).config().algorithm, rdAlgoDefault);
  EXPECT_EQ(world.rank(1).config().algorithm, rdAlgoDefault);
  EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 1000, rdFloat32, rdSum)));
  Fabric::freeze(world.reducerAddress(0));
  EXPECT_TRUE(allFailedNaming(
      world.run(Collective::kBroadcast, 1000, rdFloat32, rdSum, std::chrono::seconds(5)),
      world.reducerAddress(0)));
}

// rdCommConfig_t's overrides: 0 keeps the setting, a value in the setting's range replaces it,
// one outside is refused naming the field and the range, leaving the config as it was.
TEST(CommConfig, OverridesKeepReplaceOrAreRefusedNamingTheRange) {
  coll::CommConfig base;
  base.chunk_bytes = 1 << 20;
  base.window = 4;
  base.timeout_ms = 60000;
  rdCommConfig_t user = RD_COMM_CONFIG_INITIALIZER;
  coll::CommConfig c = base;
  ASSERT_EQ(coll::applyConfig(&user, &c), rdSuccess) << lastError();
  EXPECT_EQ(c.chunk_bytes, base.chunk_bytes);
  EXPECT_EQ(c.window, base.window);
  EXPECT_EQ(c.timeout_ms, base.timeout_ms);
  user.chunk_bytes = 4096;
  user.window = 64;
  user.timeout_ms = 100;
  ASSERT_EQ(coll::applyConfig(&user, &c), rdSuccess) << lastError();
  EXPECT_EQ(c.chunk_bytes, 4096u);
  EXPECT_EQ(c.window, 64u);
  EXPECT_EQ(c.timeout_ms, 100u);
  struct Bad {
    size_t chunk_bytes;
    int window;
    int timeout_ms;
    const char* named;
  };
  for (const Bad& bad : {Bad{4095, 0, 0, "chunk_bytes 4095"}, Bad{(64u << 20) + 1, 0, 0, "64M"},
                         Bad{~size_t{0}, 0, 0, "chunk_bytes"}, Bad{0, 65, 0, "window 65"},
                         Bad{0, -1, 0, "window -1"}, Bad{0, 0, 99, "timeout_ms 99"},
                         Bad{0, 0, -5, "timeout_ms -5"}}) {
    rdCommConfig_t wrong = RD_COMM_CONFIG_INITIALIZER;
    wrong.chunk_bytes = bad.chunk_bytes;
    wrong.window = bad.window;
    wrong.timeout_ms = bad.timeout_ms;
    coll::CommConfig kept = base;
    EXPECT_EQ(coll::applyConfig(&wrong, &kept), rdInvalidArgument) << bad.named;
    EXPECT_NE(lastError().find(bad.named), std::string::npos) << lastError();
    EXPECT_EQ(kept.chunk_bytes, base.chunk_bytes);
    EXPECT_EQ(kept.window, base.window);
    EXPECT_EQ(kept.timeout_ms, base.timeout_ms);
  }
}

TEST(Join, WrongSecretIsRefusedOnBothSides) {
  auto outcomes = failedJoin(2, 1, [](int rank, coll::CommConfig* c) {
    if (rank == 1) c->secret = "not-the-secret";
  });
  EXPECT_EQ(outcomes[1].status, rdAuthFailed) << outcomes[1].error;
  EXPECT_NE(outcomes[1].error.find("authentication failed"), std::string::npos)
      << outcomes[1].error;
  // Rank 0 waits for a rank that never joins, and is told who.
  EXPECT_NE(outcomes[0].error.find("rank 1 did not join"), std::string::npos) << outcomes[0].error;
}

TEST(Join, UnreachableReducerIsNamed) {
  auto outcomes =
      failedJoin(2, 1, [](int, coll::CommConfig* c) { c->reducers.push_back("nowhere:9"); });
  EXPECT_EQ(mentioning(outcomes, "reducer 1 (nowhere:9)"), 2);
}

TEST(Join, DifferentChunkSizesAreRefused) {
  auto outcomes = failedJoin(2, 2, [](int rank, coll::CommConfig* c) {
    if (rank == 1) c->chunk_bytes = 8192;
  });
  EXPECT_GE(mentioning(outcomes, "LIBREDUCE_CHUNK_BYTES"), 1);
}

}  // namespace
}  // namespace rd::test
