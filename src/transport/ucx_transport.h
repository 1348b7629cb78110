// The UCX implementation of the transport: UCP active messages (rendezvous for large payloads,
// received straight into the destination), peer error handling on every endpoint, and a
// progress thread that sleeps on the worker's event fd when idle.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "transport/transport.h"

namespace rd::transport {

struct SendContext;

class UcxTransport final : public Transport {
 public:
  UcxTransport(Options options, Handlers handlers);
  ~UcxTransport() override;
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  /** Creates the UCP context and worker and starts the progress thread. */
  rdResult_t start();

  rdResult_t listen(const std::string& host, uint16_t port, std::string* address) override;
  rdResult_t connect(const std::string& address, ConnId* conn) override;
  void send(ConnId conn, const void* header, size_t header_len, const void* payload,
            size_t payload_len, Completion done, MemRegion region) override;
  void close(ConnId conn) override;
  std::string peerName(ConnId conn) const override;
  rdResult_t registerMemory(void* ptr, size_t len, MemRegion* region) override;
  void deregisterMemory(MemRegion region) override;
  void post(std::function<void()> fn) override;
  bool onProgressThread() const override;
  void stop() override;

  // Used by the payload and the UCX callbacks (progress thread only).
  ucp_worker_h worker() const { return worker_; }
  void deferReceive(std::function<void()> start) { deferred_.push_back(std::move(start)); }

 private:
  struct Conn {
    ucp_ep_h ep = nullptr;
    std::string peer;
    bool failed = false;
    bool closing = false;  // closed while UCX was progressing: released right after
  };

  static ucs_status_t onAm(void* arg, const void* header, size_t header_len, void* data, size_t len,
                           const ucp_am_recv_param_t* param);
  static void onConnRequest(ucp_conn_request_h request, void* arg);
  static void onEpError(void* arg, ucp_ep_h ep, ucs_status_t status);

  ConnId addConn(ucp_ep_h ep, std::string peer);
  ucp_ep_params_t epParams();
  void loop();
  // One ucp_worker_progress, then what the callbacks deferred. UCX (1.13, TCP) handles a batch
  // of socket events per progress call and asserts if an endpoint of that batch is closed
  // meanwhile: a send or close on a dead peer from inside a callback does exactly that, so
  // callbacks' sends and closes wait here until the batch is done.
  bool progressOnce();
  void startSend(ConnId conn, SendContext* ctx, const void* payload, size_t payload_len,
                 MemRegion region);
  void closeNow(ConnId conn);
  bool runPosted();
  void shutdownOnThread();

  Options options_;
  Handlers handlers_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};
  std::atomic<bool> stop_{false};

  std::mutex posted_mu_;
  std::vector<std::function<void()>> posted_;
  // Rendezvous receives, sends and closes asked for inside ucp_worker_progress, run after it.
  std::vector<std::function<void()>> deferred_;
  bool in_progress_ = false;

  ConnId next_conn_ = 1;
  std::unordered_map<ConnId, Conn> conns_;
  std::unordered_map<ucp_ep_h, ConnId> by_ep_;
  std::vector<ucp_listener_h> listeners_;
  std::vector<void*> closing_;  // ucp_ep_close_nbx requests still running
};

}  // namespace rd::transport
