// The UCX implementation of the transport: UCP active messages (rendezvous for large payloads,
// received straight into the destination) and peer error handling on every endpoint, on a
// worker of its own (ucx_worker.h) that the process's progress engine drives.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

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
  rdResult_t connect(const std::string& address, ConnId* conn) override;
  void send(ConnId conn, const void* header, size_t header_len, const void* payload,
            size_t payload_len, Completion done, MemRegion region) override;
  void close(ConnId conn) override;
  std::string peerName(ConnId conn) const override;
  rdResult_t registerMemory(void* ptr, size_t len, MemRegion* region) override;
  void deregisterMemory(MemRegion region) override;
  void stop() override;

  // From the worker's UCX callbacks (progress thread).
  ucs_status_t onAm(const void* header, size_t header_len, void* data, size_t len,
                    const ucp_am_recv_param_t* param);
  void onEpError(ucp_ep_h ep, ucs_status_t status);
  void onConnRequest(ucp_conn_request_h request);
  void onTick();

 private:
  struct Conn {
    ucp_ep_h ep = nullptr;
    std::string peer;
    bool failed = false;
    bool closing = false;  // closed inside a UCX callback: released right after it
  };

  ConnId addConn(ucp_ep_h ep, std::string peer);
  ucp_ep_params_t epParams();
  void startSend(ConnId conn, RequestContext* ctx, const void* payload, size_t payload_len,
                 MemRegion region);
  void closeNow(ConnId conn);
  void stopOnThread();

  Options options_;
  Handlers handlers_;
  std::unique_ptr<UcxWorker> worker_;    // null once stopped (the engine finishes it)
  std::shared_ptr<UcxContext> context_;  // memory registrations belong to it

  ConnId next_conn_ = 1;
  std::unordered_map<ConnId, Conn> conns_;
  std::unordered_map<ucp_ep_h, ConnId> by_ep_;
  std::vector<ucp_listener_h> listeners_;
};

/** Creates a UCX transport on @p engine. */
rdResult_t createUcxTransport(std::shared_ptr<ProgressEngine> engine, const Options& options,
                              Handlers handlers, std::unique_ptr<Transport>* out);

}  // namespace rd::transport
