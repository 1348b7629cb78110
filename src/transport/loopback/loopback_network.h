// SPDX-License-Identifier: BSD-3-Clause
// The loopback network's state (internal to the loopback transport): who listens where, the
// links between transports, messages on their way, and the faults to apply. Shared by the
// transports of one process, which may run on different progress engines: everything here is
// guarded by one mutex, and each message is delivered on its receiver's engine.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/loopback/loopback_fabric.h"
#include "transport/transport.h"

namespace rd::transport::loopback {

class LoopbackTransport;

/** A large payload the receiver fetches from the sender's buffer (UCX rendezvous). */
struct Rendezvous {
  const void* src = nullptr;
  size_t len = 0;
  Completion done;  // the sender's, run on its engine
  std::shared_ptr<ProgressEngine> sender_engine;
  // The sender's buffer is valid until its send completes or the sender is gone; both are
  // decided under `mu`, which the receiver holds while it copies.
  std::mutex mu;
  bool finished = false;     // fetched, discarded or lost
  bool sender_gone = false;  // stopped or killed: its buffer may be freed

  /** Marks it finished; true for the caller that did (it completes the sender's send). */
  bool finish() {
    std::lock_guard<std::mutex> lock(mu);
    if (finished) return false;
    finished = true;
    return true;
  }
  void senderGone() {
    std::lock_guard<std::mutex> lock(mu);
    sender_gone = true;
  }
  /** Runs the sender's completion on its engine, unless it is gone by then. */
  static void completeSend(const std::shared_ptr<Rendezvous>& r, rdResult_t status) {
    r->sender_engine->post([r, status] {
      bool gone = false;
      {
        std::lock_guard<std::mutex> lock(r->mu);
        gone = r->sender_gone;
      }
      if (!gone && r->done) r->done(status);
    });
  }
};

/** One connection; side 0 connected, side 1 accepted. */
struct Link {
  uint64_t transport[2] = {0, 0};
  ConnId conn[2] = {0, 0};  // each side's id (set on its own thread); conn[1] is 0 until accepted
  std::atomic<bool> broken{false};
  Clock::time_point last_arrival[2] = {};  // per receiving side, for in-order delivery
};

/** One thing on its way to side `to` of `link`. */
struct Delivery {
  enum Kind { kAccept, kMessage, kClose } kind = kMessage;
  std::shared_ptr<Link> link;
  int to = 1;
  std::string reason;                        // kClose: why the peer's connection fails
  std::string header;                        // kMessage
  std::shared_ptr<const std::string> eager;  // kMessage: the payload, copied at send
  std::shared_ptr<Rendezvous> rendezvous;    // kMessage: or the payload left with the sender
};

class Network {
 public:
  static Network& get();

  // Membership (any thread).
  uint64_t add(LoopbackTransport* t, std::string* name);
  void remove(uint64_t id);
  rdResult_t bind(uint64_t id, const std::string& host, uint16_t port, std::string* address);
  /** The transport listening at @p address, 0 when none (or it is dead). */
  uint64_t listener(const std::string& address);
  bool isDead(uint64_t id);
  /** The name of transport @p id, for peer names ("" when unknown). */
  std::string nameOf(uint64_t id);
  bool isFrozen(uint64_t id);
  void track(uint64_t id, const std::shared_ptr<Link>& link);
  void trackRendezvous(uint64_t sender, const std::shared_ptr<Rendezvous>& r);

  /** Sends @p d from the other side of its link, applying the faults. */
  void send(Delivery d, size_t payload_len);
  /** Delivers @p d without faults (accepts and closes). */
  void deliver(Delivery d);
  /** Breaks @p link: the side @p to learns it through on_failure (after what is on its way). */
  void breakLink(const std::shared_ptr<Link>& link, int to, const std::string& reason);
  /** Marks @p sender's large payloads unreadable (it stopped). */
  void forgetRendezvous(uint64_t sender);

  // Fault controls (Fabric).
  void setFaults(const Faults& f);
  void setFilter(Filter f);
  void reset();
  void freeze(const std::string& name, bool frozen);
  void kill(const std::string& name);
  size_t eagerLimit();

  FaultCounts injectedCounts();

  std::atomic<uint64_t> delivered{0};

 private:
  Network() = default;
  // With mu_ held: counts the fault @p fate applies.
  void count(const Fate& fate);
  // With mu_ held: posts @p d to its receiver's engine at @p at.
  void dispatchLocked(Delivery d, Clock::time_point at);
  void arrive(Delivery d);
  uint64_t byName(const std::string& name);

  std::mutex mu_;
  std::unordered_map<uint64_t, LoopbackTransport*> transports_;
  std::unordered_map<uint64_t, std::string> names_;
  std::unordered_map<std::string, uint64_t> listeners_;
  std::unordered_map<uint64_t, std::vector<std::weak_ptr<Link>>> links_;
  std::unordered_map<uint64_t, std::vector<std::weak_ptr<Rendezvous>>> rendezvous_;
  std::set<uint64_t> frozen_, dead_;
  std::vector<Delivery> parked_;  // for frozen transports, in arrival order
  Faults faults_;
  FaultCounts injected_;
  Filter filter_;
  std::mt19937_64 rng_{1};
  uint64_t next_id_ = 1;
  uint32_t next_port_ = 20000;
};

}  // namespace rd::transport::loopback
