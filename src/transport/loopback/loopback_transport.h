// SPDX-License-Identifier: BSD-3-Clause
// The loopback transport: connections between transports of one process over an in-memory
// network (loopback_fabric.h), with UCX's semantics where the protocol depends on them.
//   - connect() succeeds at once; an address nobody listens on fails the connection later,
//     through on_failure, as UCX does;
//   - messages on a connection arrive in order (unless a fault reorders them);
//   - small payloads are copied at send and the send completes at once; large ones stay in the
//     sender's buffer until the receiver fetches them (receiveInto), which completes the send;
//   - a close, a stop or a kill makes the peer's connection fail after what was sent before it.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "transport/loopback/loopback_fabric.h"
#include "transport/transport.h"

namespace rd::transport::loopback {

struct Delivery;
struct Link;

class LoopbackTransport final : public Transport, public EventSource {
 public:
  LoopbackTransport(std::shared_ptr<ProgressEngine> engine, Options options, Handlers handlers);
  ~LoopbackTransport() override;

  rdResult_t start();

  rdResult_t listen(const std::string& host, uint16_t port, std::string* address) override;
  rdResult_t connect(const std::string& address, ConnId* conn, Lane lane) override;
  using Transport::connect;
  void send(ConnId conn, const void* header, size_t header_len, const void* payload,
            size_t payload_len, Completion done, MemRegion region) override;
  void close(ConnId conn) override;
  std::string peerName(ConnId conn) const override;
  std::string linkTransports(ConnId conn) const override;
  rdResult_t registerMemory(void* ptr, size_t len, MemRegion* region) override;
  void deregisterMemory(MemRegion region) override;
  void stop() override;

  // EventSource: ticks only; messages arrive as posted work.
  bool progress() override { return false; }
  void onTick(Clock::time_point now) override;

  // From the network (progress thread).
  uint64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  ProgressEngine* enginePtr() const { return engine_.get(); }
  const std::shared_ptr<ProgressEngine>& engineRef() const { return engine_; }
  void arrive(const Delivery& d);
  /** The network broke @p link (peer gone): tell the owner. */
  void linkFailed(const std::shared_ptr<Link>& link, int side, const std::string& reason);

 private:
  struct Conn {
    std::shared_ptr<Link> link;
    int side = 0;  // this transport's end of the link
    std::string peer;
  };
  ConnId addConn(std::shared_ptr<Link> link, int side, std::string peer);

  Options options_;
  Handlers handlers_;
  uint64_t id_ = 0;
  std::string name_;
  bool started_ = false;
  bool stopped_ = false;
  ConnId next_conn_ = 1;
  std::unordered_map<ConnId, Conn> conns_;
};

/** Creates a loopback transport on @p engine. */
rdResult_t createLoopbackTransport(std::shared_ptr<ProgressEngine> engine, const Options& options,
                                   Handlers handlers, std::unique_ptr<Transport>* out);

}  // namespace rd::transport::loopback
