// SPDX-License-Identifier: BSD-3-Clause
// A whole job in one process: reducers and ranks as objects over the loopback transport, on a
// progress engine of their own, as gloo runs ranks as threads and UCC emulates a team. Every
// rank posts from the test's thread and the engine runs them all, so a case takes milliseconds;
// faults come from the loopback fabric (drops, duplicates, delays, frozen and killed peers).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "perf/exact_data.h"
#include "reduction_server/server.h"
#include "transport/loopback/loopback_fabric.h"

namespace rd::test {

using coll::Collective;
using Clock = std::chrono::steady_clock;

struct WorldOptions {
  int ranks = 2;
  int reducers = 1;  // 0: ring only, joined through a rendezvous of the world's own
  uint32_t timeout_ms = 5000;
  uint32_t heartbeat_ms = coll::CommConfig{}.heartbeat_ms;
  bool failover = true;  // LIBREDUCE_FAILOVER
  uint64_t chunk_bytes = 4096;
  uint32_t window = 4;
  bool deterministic = false;
  rdDataType_t wire_dtype = rdFloat32;  // wire compression (rdFloat32: none)
  rdAlgorithm_t algorithm = rdAlgoDefault;
  std::string secret = "loopback-secret";
  uint64_t reducer_memory = 64ull << 20;
  uint32_t reducer_memory_percent = 50;  // one communicator's share (reduce-server's default)
};

/** One rank's outcome of an operation. */
struct Outcome {
  rdResult_t status = rdInProgress;
  std::string error;
  size_t wrong = 0;  // elements that differ from the exact result
};

class World {
 public:
  explicit World(WorldOptions options);
  /** Destroys the ranks (each on its own thread, as processes would), then the reducers. */
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  /** Creates every rank's communicator at once; the first failure, or rdSuccess. */
  rdResult_t join();
  /** Joins with @p configs instead (per rank: its own settings, e.g. a different algorithm). */
  rdResult_t join(const std::vector<coll::CommConfig>& configs);

  /** The config rank @p r joins with (before join). */
  coll::CommConfig config(int r) const;

  const WorldOptions& options() const { return options_; }
  coll::Communicator& rank(int r) { return *ranks_.at(r); }
  server::ReductionServer& reducer(int m) { return *reducers_.at(m); }
  /** The one progress engine every rank and reducer of this world runs on. */
  transport::ProgressEngine& engine() { return *engine_; }
  /** The name the loopback fabric knows reducer @p m by (its address). */
  const std::string& reducerAddress(int m) const { return addresses_.at(m); }
  /** Join errors of each rank after join(). */
  const std::vector<Outcome>& joinOutcomes() const { return join_outcomes_; }

  /** One collective posted on every rank (see start / finish). */
  struct Posted {
    Collective coll;
    rdDataType_t dtype;
    rdRedOp_t op;
    int root;
    uint64_t salt;  // perf::opSalt of the communicator and this operation: its data are its own
    std::vector<coll::OpDesc> descs;
    std::vector<std::shared_ptr<coll::Request>> requests;
    std::vector<std::shared_ptr<void>> buffers;
    std::vector<Outcome> outcomes;  // posting errors; the rest filled by finish()
  };

  /**
   * Posts @p coll of @p count elements on every rank (exact inputs) without waiting.
   * @p per_rank may change a rank's arguments.
   */
  Posted start(Collective coll, size_t count, rdDataType_t dtype, rdRedOp_t op,
               const std::function<void(int rank, coll::OpDesc*)>& per_rank = {});

  /** Waits for rank @p r of @p p (until @p deadline) and verifies its result. */
  Outcome finish(Posted& p, int r, Clock::time_point deadline);

  /** start + finish on every rank, up to @p limit in all. */
  std::vector<Outcome> run(Collective coll, size_t count, rdDataType_t dtype, rdRedOp_t op,
                           std::chrono::milliseconds limit = std::chrono::seconds(20),
                           const std::function<void(int rank, coll::OpDesc*)>& per_rank = {});

  /** Destroys rank @p r's communicator now (it leaves; others see it gone). */
  void destroyRank(int r);

  /**
   * Replaces reducer @p m (killed or frozen before) with a fresh one listening at the same
   * address, as reducectl restarts a reducer: the ranks admit it again (docs/failover.md).
   */
  void replaceReducer(int m, const std::string& secret);
  void replaceReducer(int m) { replaceReducer(m, options_.secret); }

 private:
  WorldOptions options_;
  std::shared_ptr<transport::ProgressEngine> engine_;
  std::vector<std::unique_ptr<server::ReductionServer>> reducers_;
  std::unique_ptr<server::ReductionServer> rendezvous_;
  std::vector<std::string> addresses_;
  std::string rendezvous_address_;
  std::vector<std::unique_ptr<coll::Communicator>> ranks_;
  std::vector<Outcome> join_outcomes_;
  std::vector<std::shared_ptr<void>> kept_;  // operations' buffers, until the ranks are gone
  uint64_t comm_id_;
  int operations_ = 0;  // started so far: the next one's number
};

/** True when every outcome succeeded with no wrong element; else says which did not. */
::testing::AssertionResult allCorrect(const std::vector<Outcome>& outcomes);

/** True when every outcome failed and its error contains @p culprit. */
::testing::AssertionResult allFailedNaming(const std::vector<Outcome>& outcomes,
                                           const std::string& culprit);

/** Every outcome either succeeded with exact data or failed with an error; none is pending. */
::testing::AssertionResult correctOrFailed(const std::vector<Outcome>& outcomes);

}  // namespace rd::test
