// SPDX-License-Identifier: BSD-3-Clause
// The in-process network the loopback transports of one process share, and the faults a test
// injects into it: dropped, duplicated, delayed and reordered messages, frozen peers (their
// messages wait, their timers stop, as under SIGSTOP) and killed peers (every connection to them
// fails, as when a process dies). Messages are delivered on the receiver's progress engine.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace rd::transport::loopback {

/** A message as a test's filter sees it, before it is delivered. */
struct MessageView {
  const std::string& from;  // sender's name (its first listen address, else "loopback-N")
  const std::string& to;    // receiver's name
  const void* header;
  size_t header_len;
  size_t payload_len;
};

/** What happens to one message. */
struct Fate {
  enum Kind { kDeliver, kDrop, kDuplicate, kCorrupt } kind = kDeliver;
  std::chrono::microseconds delay{0};  // added to the delivery time (reorders when large)
  size_t corrupt_at = 0;               // kCorrupt: this header byte (mod its size) is flipped
};

/**
 * Decides each message's fate; runs on the sender's progress thread under the network's lock, so
 * it must not call the Fabric.
 */
using Filter = std::function<Fate(const MessageView&)>;

/** Random faults on every message, reproducible from the seed. */
struct Faults {
  uint64_t seed = 1;
  double drop = 0;                         // probability a message is lost
  double duplicate = 0;                    // probability it arrives twice
  double corrupt = 0;                      // probability a random header byte is flipped
  std::chrono::microseconds max_delay{0};  // uniform random extra delay per message
  bool keep_order = true;                  // per connection and direction, as over UCX
  size_t eager_limit = 8192;  // larger payloads are fetched by the receiver, as UCX rendezvous
};

/** Faults the network applied (random or a filter's) since the process started. */
struct FaultCounts {
  uint64_t dropped = 0;
  uint64_t duplicated = 0;
  uint64_t corrupted = 0;
  uint64_t delayed = 0;  // a delay above zero (reordered, when order is not kept)
};

/**
 * The fault controls of the process's loopback network. Thread-safe. Names are the addresses
 * the transports listen on ("host:port"), as the owners report them.
 */
class Fabric {
 public:
  /** Random faults for messages sent from now on (Faults{} = none). */
  static void setFaults(const Faults& faults);
  /** A filter for messages sent from now on (empty = none); applied before the random faults. */
  static void setFilter(Filter filter);
  /** No faults, no filter, nobody frozen. */
  static void reset();

  /** Messages to and from @p name wait, and its ticks stop, until thaw(). */
  static void freeze(const std::string& name);
  static void thaw(const std::string& name);

  /** @p name dies: its peers see every connection to it fail; it sees nothing more. */
  static void kill(const std::string& name);

  /** Messages delivered since the process started (to wait on progress in tests). */
  static uint64_t delivered();
  /** What was injected so far: a test of faults checks that some were. */
  static FaultCounts injected();
};

}  // namespace rd::transport::loopback
