// SPDX-License-Identifier: BSD-3-Clause
// A hostile tenant of a shared reducer pool, for tests: it holds a real job key, joins its own
// communicator through the real handshake (every rank in this one process) and then sends what
// no honest worker sends: operations far ahead, release marks of any operation or epoch, hellos
// claiming any number of ranks. It records what the reducer answers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/auth.h"
#include "protocol/wire.h"
#include "transport/transport.h"

namespace rd::test {

class Tenant {
 public:
  struct Options {
    std::string reducer;     // address
    std::string comm;        // communicator id text (LIBREDUCE_COMM_ID): its key's, its scope
    std::string hello_comm;  // the communicator its hellos name; "": comm
    std::string key;         // the job key it proves
    uint32_t nranks = 2;     // ranks its hellos claim (it joins them all)
    uint64_t chunk_bytes = 64 << 10;
    bool failover = false;  // the communicator takes release marks (kLanded, kDone)
  };
  explicit Tenant(Options options);
  ~Tenant();
  Tenant(const Tenant&) = delete;
  Tenant& operator=(const Tenant&) = delete;

  /** Connects every rank's two connections and sends their hellos. */
  void start();
  /** Waits until every connection joined (true) or one was refused or closed (false). */
  bool joined(std::chrono::milliseconds limit);

  /** Rank 0 contributes to @p ops all-reduces numbered @p first, first+stride, ...; rank 1 never
   *  does, so each holds a slot open on the reducer. */
  void sendOpsAhead(uint64_t first, uint64_t stride, int ops);
  /** Rank 0 says it holds every answer of @p count operations (kLanded), of epoch @p epoch
   *  (0: its own), numbered from @p first. */
  void sendLanded(uint64_t first, int count, uint32_t epoch = 0);

  /** Waits until the reducer refused, failed or closed one of its connections. */
  bool turnedAway(std::chrono::milliseconds limit);
  /** Everything the reducer said when it turned it away, and the closes, one per line. */
  std::string answer();
  /** Waits until the answer holds @p text. */
  bool heard(const std::string& text, std::chrono::milliseconds limit);
  rdResult_t answerStatus();
  uint32_t epoch() const { return epoch_; }

 private:
  void onMessage(transport::ConnId conn, const void* header, size_t len, transport::Payload p);
  void onFailure(transport::ConnId conn, const std::string& why);
  uint32_t rankOf(transport::ConnId conn) const;

  Options options_;
  std::unique_ptr<transport::Transport> transport_;
  std::vector<transport::ConnId> conns_;  // rank r: data 2r, result 2r+1
  std::vector<auth::Nonce> nonces_;
  std::shared_ptr<std::vector<char>> zeros_;
  uint64_t comm_id_ = 0;  // what its hellos and frames name
  std::mutex mu_;
  std::condition_variable cv_;
  uint32_t joined_ = 0;
  uint32_t epoch_ = 0;
  bool turned_away_ = false;
  rdResult_t status_ = rdSuccess;
  std::string answer_;
};

}  // namespace rd::test
