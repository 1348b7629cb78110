// SPDX-License-Identifier: BSD-3-Clause
// The transport interface: non-blocking, message-oriented connections between libreduce
// processes, shaped like NCCL's net plugin (listen / connect / accept, register, send / receive
// with completion, close, peer failure). Implementations are created by name
// (createTransport): "ucx" (UCP active messages, ucx/) between processes and hosts, and
// "loopback" (loopback/) inside one process, with fault injection, for tests.
//
// Threading: every transport of a process is driven by the process's progress engine
// (progress_engine.h). Every handler and completion runs on its thread, and every method but
// post() and runSync() must be called on it.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "libreduce/reduce.h"
#include "transport/progress_engine.h"

namespace rd::transport {

using ConnId = uint64_t;  // 0 is never a valid connection
using Completion = std::function<void(rdResult_t status)>;

/** A memory registration (opaque to users); null means "let the transport register". */
using MemRegion = void*;

/** Implementation side of a Payload. */
class PayloadImpl {
 public:
  virtual ~PayloadImpl() = default;
  virtual size_t size() const = 0;
  virtual const void* data() const = 0;
  virtual bool keepsData() const = 0;
  virtual void receiveInto(void* dst, MemRegion region, Completion done) = 0;
  virtual void discard() = 0;
};

/**
 * The payload of an arrived message. The message handler either uses it at once or moves it
 * somewhere to deliver it later (backpressure); a payload dropped unused is discarded.
 */
class Payload {
 public:
  Payload() = default;
  explicit Payload(std::unique_ptr<PayloadImpl> impl) : impl_(std::move(impl)) {}
  Payload(Payload&&) noexcept = default;
  Payload& operator=(Payload&&) noexcept = default;
  ~Payload() = default;  // the impl discards what was never delivered

  size_t size() const { return impl_ ? impl_->size() : 0; }
  /** The bytes when they are already here (small messages), else nullptr. */
  const void* data() const { return impl_ ? impl_->data() : nullptr; }
  /**
   * True when data() stays valid, at the same address, for as long as the payload is held;
   * otherwise it is valid only until the message handler returns.
   */
  bool keepsData() const { return impl_ && impl_->keepsData(); }
  /** Delivers size() bytes into @p dst; @p done runs on the progress thread, maybe inline. */
  void receiveInto(void* dst, Completion done, MemRegion region = nullptr) {
    impl_->receiveInto(dst, region, std::move(done));
  }
  /** Drops the payload without delivering it. */
  void discard() {
    if (impl_) impl_->discard();
  }
  explicit operator bool() const { return impl_ != nullptr; }

 private:
  std::unique_ptr<PayloadImpl> impl_;
};

/** What the owner of a transport is told. Every handler runs on the progress thread. */
struct Handlers {
  /** A peer connected to one of our listeners. */
  std::function<void(ConnId conn, const std::string& peer)> on_accept;
  /** A message arrived on @p conn. */
  std::function<void(ConnId conn, const void* header, size_t header_len, Payload payload)>
      on_message;
  /** @p conn failed (peer died, unreachable, reset). The connection is closed afterwards. */
  std::function<void(ConnId conn, rdResult_t status, const std::string& reason)> on_failure;
  /** Called about every 100 ms (timeouts). */
  std::function<void()> on_tick;
};

/**
 * Which of a transport's lanes a connection uses. Connections on different lanes never share a
 * socket or UCX endpoint, so bulk data queued on one cannot hold up a small message on the other
 * (a rendezvous handshake, say). kShared connections to the same peer share one.
 */
enum class Lane : uint8_t { kShared = 0, kSeparate = 1 };
constexpr size_t kLanes = 2;

class Transport {
 public:
  explicit Transport(std::shared_ptr<ProgressEngine> engine) : engine_(std::move(engine)) {}
  virtual ~Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  /** Listens on @p host : @p port (0 = any free port); @p address gets "host:port". */
  virtual rdResult_t listen(const std::string& host, uint16_t port, std::string* address) = 0;

  /** Starts connecting to "host:port" on @p lane; usable at once (sends queue until it is up). */
  virtual rdResult_t connect(const std::string& address, ConnId* conn, Lane lane) = 0;
  rdResult_t connect(const std::string& address, ConnId* conn) {
    return connect(address, conn, Lane::kShared);
  }

  /**
   * Makes what @p lane needs before its first connection, on the calling thread rather than
   * the progress thread. A UCX worker takes seconds of CPU to make on a starved host: made on
   * the progress thread, it would hold up every other communicator's heartbeats for as long.
   * Optional: connect() makes what is missing itself. Not concurrently with stop().
   */
  virtual rdResult_t prepareLane(Lane /*lane*/) { return rdSuccess; }

  /**
   * Sends @p header (copied) and @p payload (must stay valid until @p done runs) on @p conn.
   * @p done may be empty; it runs on the progress thread, maybe inline. Payloads up to
   * LIBREDUCE_EAGER_BYTES go at once (eagerly), without a rendezvous round trip first: the
   * receiver holds them until it takes them, so senders bound what they have in flight.
   */
  virtual void send(ConnId conn, const void* header, size_t header_len, const void* payload,
                    size_t payload_len, Completion done, MemRegion region = nullptr) = 0;

  /** Closes @p conn (pending sends are flushed unless the peer already failed). */
  virtual void close(ConnId conn) = 0;

  /** The peer address of @p conn, "" if unknown. */
  virtual std::string peerName(ConnId conn) const = 0;

  /**
   * What carries @p conn: the transports and devices of its link, "TL/DEVICE" joined by '+'
   * ("tcp/eth0", "posix/memory+cma/memory"); "" while it is not known yet (the handshake or the
   * link's wire-up still runs) or for an unknown connection.
   */
  virtual std::string linkTransports(ConnId conn) const = 0;

  /** Connections its listeners refused in the handshake (a wrong key, garbage), so far. */
  virtual uint64_t handshakesRefused() const { return 0; }

  /** Registers memory for repeated transfers; release with deregisterMemory. */
  virtual rdResult_t registerMemory(void* ptr, size_t len, MemRegion* region) = 0;
  virtual void deregisterMemory(MemRegion region) = 0;

  /**
   * Closes every connection (healthy peers get what is queued for them) and detaches from the
   * engine: no handler or completion runs once it returns, and payloads still held become
   * empty. Owners call it before they let the transport go: handlers may still run until then,
   * and a unique_ptr being reset already reads as null to them. Idempotent; the destructor
   * calls it too.
   */
  virtual void stop() = 0;

  /** Runs @p fn on the progress thread. Thread-safe. */
  void post(std::function<void()> fn) { engine_->post(std::move(fn)); }

  /** Runs @p fn on the progress thread and waits for its result. Thread-safe. */
  rdResult_t runSync(const std::function<rdResult_t()>& fn) { return engine_->runSync(fn); }

  /** True on the progress thread. */
  bool onProgressThread() const { return engine_->onProgressThread(); }

  ProgressEngine& engine() const { return *engine_; }

 protected:
  std::shared_ptr<ProgressEngine> engine_;
};

struct Options {
  std::string name = "libreduce";  // for logs
  /** What both ends of every connection prove they know before anything else (may be ""). */
  std::string secret;
  /**
   * A shared reducer pool's secret (listeners only): each connection is then keyed with the
   * job key of the communicator it names (auth::jobKey), and one naming none is refused.
   */
  std::string pool_secret;
  /** The communicator this transport's connections name in their handshakes (0: none). */
  uint64_t scope = 0;
  /**
   * The local address this transport listens and talks on: UCX is limited to its interface
   * (unless UCX_NET_DEVICES is set). "" or a wildcard: every interface.
   */
  std::string local_host;
};

/** Names createTransport knows, for messages: "ucx, loopback". */
std::string transportNames();

/**
 * Creates the transport called @p name ("ucx", "loopback") on @p engine (null: the process's
 * shared one). rdInvalidArgument for an unknown name; the transport's own error if it cannot
 * start.
 */
rdResult_t createTransport(const std::string& name, std::shared_ptr<ProgressEngine> engine,
                           const Options& options, Handlers handlers,
                           std::unique_ptr<Transport>* out);

/** Splits "host:port"; rdInvalidArgument when malformed. */
rdResult_t splitAddress(const std::string& address, std::string* host, uint16_t* port);

/**
 * Whether @p host names a loopback address as written (127.0.0.0/8, ::1, localhost); a name is
 * never resolved, so "" (any address) and host names are not loopback.
 */
bool isLoopbackHost(const std::string& host);

/** Resolves @p host ("" = any) to an IPv4 address with @p port; rdInvalidArgument if it cannot. */
rdResult_t resolveIpv4(const std::string& host, uint16_t port, sockaddr_in* out);

}  // namespace rd::transport
