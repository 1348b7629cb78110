// SPDX-License-Identifier: BSD-3-Clause
// The UCX implementation of the transport: UCP active messages (rendezvous for large payloads,
// received straight into the destination) on a worker of its own (ucx_worker.h) that the
// process's progress engine drives.
//
// Connections start with libreduce's bootstrap (bootstrap/): listen() opens a plain TCP
// listener, connect() runs the authenticated handshake, and only then do the two sides learn
// each other's worker address and tag. UCX's own sockaddr listener is never used. Every
// connection of one lane between two transports shares one link (a UCX endpoint made from the
// peer's worker address, with peer error handling); each message carries the tag its receiver
// gave the connection, and a message whose tag no live connection owns is dropped.
//
// Each lane has a UCX worker of its own (made when first used), so connections on different
// lanes never share an endpoint or a socket: UCX pairs the endpoints two workers make toward each
// other into one connection, and one socket carries both directions in order. Payloads up to
// LIBREDUCE_EAGER_BYTES are sent eagerly. UCX is limited to the interface of
// Options::local_host (ucx_devices.h).
#pragma once

#include <ucp/api/ucp.h>

#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "transport/bootstrap/bootstrap.h"
#include "transport/transport.h"
#include "transport/ucx/ucx_worker.h"

namespace rd::transport {

class UcxTransport final : public Transport {
 public:
  UcxTransport(std::shared_ptr<ProgressEngine> engine, Options options, Handlers handlers);
  ~UcxTransport() override;

  /** Creates the worker and joins the engine. */
  rdResult_t start();

  rdResult_t listen(const std::string& host, uint16_t port, std::string* address) override;
  rdResult_t connect(const std::string& address, ConnId* conn, Lane lane) override;
  using Transport::connect;
  void send(ConnId conn, const void* header, size_t header_len, const void* payload,
            size_t payload_len, Completion done, MemRegion region) override;
  void close(ConnId conn) override;
  std::string peerName(ConnId conn) const override;
  std::string linkTransports(ConnId conn) const override;
  rdResult_t prepareLane(Lane lane) override;
  uint64_t handshakesRefused() const override { return bootstrap_ ? bootstrap_->refusals() : 0; }
  rdResult_t registerMemory(void* ptr, size_t len, MemRegion* region) override;
  void deregisterMemory(MemRegion region) override;
  void stop() override;

  // From the workers' UCX callbacks (progress thread); @p worker is the lane's.
  ucs_status_t onAm(UcxWorker* worker, const void* header, size_t header_len, void* data,
                    size_t len, const ucp_am_recv_param_t* param);
  ucs_status_t onCloseNotice(const void* header, size_t header_len);
  void onEpError(ucp_ep_h ep, ucs_status_t status);
  void onTick();

 private:
  /** A send asked for before the connection's handshake finished. */
  struct QueuedSend {
    std::string header;
    const void* payload;
    size_t payload_len;
    Completion done;
    MemRegion region;
  };
  /** The UCX endpoint to one peer transport, shared by the connections of one lane. */
  struct Link {
    ucp_ep_h ep = nullptr;
    UcxWorker* worker = nullptr;  // the lane's, which made the endpoint
    std::unordered_set<ConnId> conns;
  };
  struct Conn {
    std::string peer;
    uint64_t tag = 0;         // ours: the peer puts it on what it sends here
    uint64_t remote_tag = 0;  // the peer's: we put it on what we send
    Lane lane = Lane::kShared;
    std::string link;  // its key in links_; "" while the handshake runs
    std::vector<QueuedSend> queued;
    bool failed = false;
    bool closing = false;  // closed inside a UCX callback: released right after it
  };

  uint64_t newTag();
  ConnId addConn(std::string peer, uint64_t tag);
  rdResult_t linkTo(const std::string& worker_address, ConnId conn);
  // The lane's worker, made on first use; null (and the error set) if it cannot be.
  UcxWorker* laneWorker(Lane lane);
  rdResult_t startWorker(UcxWorker* worker);
  void onAccepted(uint64_t tag, const bootstrap::Endpoint& peer, const std::string& name);
  void onConnected(ConnId conn, const bootstrap::Endpoint& peer);
  void failConn(ConnId conn, rdResult_t status, const std::string& reason);
  static ucp_ep_params_t epParams(UcxWorker* worker);
  std::string taggedHeader(uint64_t tag, const void* header, size_t header_len) const;
  void startSend(ConnId conn, RequestContext* ctx, const void* payload, size_t payload_len,
                 MemRegion region);
  void sendCloseNotice(const Conn& conn);
  void closeNow(ConnId conn);
  void forget(ConnId conn);
  void stopOnThread();

  Options options_;
  Handlers handlers_;
  // By Lane; lanes_[0] is made by start(), the others by prepareLane or on first use. All null once
  // stopped (the engine finishes them).
  std::array<std::unique_ptr<UcxWorker>, kLanes> lanes_;
  bool stopped_ = false;
  size_t eager_bytes_ = 0;               // LIBREDUCE_EAGER_BYTES
  std::shared_ptr<UcxContext> context_;  // memory registrations belong to it
  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;

  ConnId next_conn_ = 1;
  std::unordered_map<ConnId, Conn> conns_;
  std::unordered_map<uint64_t, ConnId> by_tag_;
  std::unordered_map<std::string, Link> links_;  // by lane and the peer's worker address
  std::unordered_map<ucp_ep_h, std::string> link_by_ep_;
};

/** Creates a UCX transport on @p engine. */
rdResult_t createUcxTransport(std::shared_ptr<ProgressEngine> engine, const Options& options,
                              Handlers handlers, std::unique_ptr<Transport>* out);

}  // namespace rd::transport
