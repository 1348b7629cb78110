// SPDX-License-Identifier: BSD-3-Clause
// The plugin harness's parts: the out-of-band exchange that stands in for NCCL's bootstrap, the
// Net checks and the CollNet checks. Each check prints what failed and returns false.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "plugin_api.h"

namespace rd::test {

/** Files in a directory shared by the ranks: publish a blob under a name, read others' blobs. */
class FileExchange {
 public:
  FileExchange(std::string dir, int rank, int nranks)
      : dir_(std::move(dir)), rank_(rank), nranks_(nranks) {}
  bool publish(const std::string& name, const std::string& blob) const;
  /** Waits (sleeping, bounded by @p limit) for @p rank's blob @p name. */
  bool fetch(const std::string& name, int rank, std::string* blob,
             std::chrono::milliseconds limit = std::chrono::seconds(60)) const;
  /** Publishes this rank's blob and collects every rank's, in rank order. */
  bool allGather(const std::string& name, const std::string& mine,
                 std::vector<std::string>* all) const;
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

 private:
  std::string dir_;
  int rank_;
  int nranks_;
};

/** Calls @p fn until it reports done, sleeping 1 ms between tries; false on error or timeout. */
bool testUntilDone(const std::function<ncclResult_t(int* done)>& fn, const char* what,
                   ncclResult_t* result = nullptr,
                   std::chrono::milliseconds limit = std::chrono::seconds(120));

/** Ring of Net comms: a send comm to rank + 1 and a recv comm from rank - 1. */
struct NetRing {
  void* listen = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
};

bool netSetUp(const NetApi& net, const FileExchange& ex, NetRing* ring);
/** Transfers of several sizes and tags around the ring, receives posted before and after. */
bool netTransfers(const NetApi& net, const FileExchange& ex, const NetRing& ring);
bool netTearDown(const NetApi& net, const NetRing& ring);
/**
 * Rank 1, which holds another secret than rank 0, connects and sends to rank 0: rank 0 must
 * never accept it, and rank 1's send must fail ("EXPECTED ERROR isend code=C in M ms").
 */
bool netRefusesWrongSecret(const NetApi& net, const FileExchange& ex);

struct CollSetup {
  void* listen = nullptr;
  void* comm = nullptr;
};

/** init, devices, properties and reduceSupport: exactly the kernels' dtypes and ops. */
bool collNetQueries(const CollNetApi& coll);
/** listen, all-gather of the handles, connect; @p result gets connect's code. */
bool collNetConnect(const CollNetApi& coll, const FileExchange& ex, CollSetup* setup,
                    ncclResult_t* result);
/** All-reduces of every dtype and op, several in flight; windowed all-gather / reduce-scatter. */
bool collNetCollectives(const CollNetApi& coll, const FileExchange& ex, const CollSetup& setup);
/**
 * @p iterations verified float32 sum all-reduces of @p count elements, one at a time; prints
 * "rank R: N collectives done" after the @p announce_after-th (for a test to act then).
 */
/**
 * Two NCCL communicators in one process, as v11+ gives each its own context: both connected at
 * once, verified all-reduces in flight on both; then the first is closed and its context
 * finalized (refused while its comm is open, and a second time) while the second goes on.
 */
bool collNetTwoContexts(const CollNetApi& coll, const FileExchange& ex);
/**
 * With LIBREDUCE_WIRE_DTYPE=bf16: float32 sums of bf16-exact values are exact, and 1 + 2^-20 on
 * every rank sums to n (the low bits did not travel), which a float32 wire would not give.
 */
bool collNetWireCompressed(const CollNetApi& coll, const FileExchange& ex, const CollSetup& setup);
bool collNetAllReduceLoop(const CollNetApi& coll, const FileExchange& ex, const CollSetup& setup,
                          int iterations, size_t count, int announce_after);

}  // namespace rd::test
