#include "transport/ucx_transport.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "common/check.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"
#include "transport/ucx_payload.h"

namespace rd::transport {

struct SendContext {
  std::string header;  // UCX needs the header until the send completes
  Completion done;
};

namespace {

constexpr unsigned kAmId = 17;
constexpr int kTickMs = 100;

void finishSend(SendContext* ctx, ucs_status_t status) {
  if (ctx->done) ctx->done(status == UCS_OK ? rdSuccess : rdConnectionError);
  delete ctx;
}

void onSendDone(void* request, ucs_status_t status, void* user_data) {
  finishSend(static_cast<SendContext*>(user_data), status);
  ucp_request_free(request);
}

rdResult_t ucxError(ucs_status_t status, const char* what) {
  return setErrorf(rdConnectionError, "%s: %s", what, ucs_status_string(status));
}

rdResult_t resolve(const std::string& host, uint16_t port, sockaddr_in* out) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.empty() ? "0.0.0.0" : host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    return setErrorf(rdInvalidArgument, "cannot resolve host '%s': %s", host.c_str(),
                     gai_strerror(rc));
  }
  std::memcpy(out, found->ai_addr, sizeof *out);
  out->sin_port = htons(port);
  freeaddrinfo(found);
  return rdSuccess;
}

std::string formatAddress(const sockaddr_storage& ss) {
  if (ss.ss_family != AF_INET) return "?";
  const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(in->sin_port));
}

}  // namespace

UcxTransport::UcxTransport(Options options, Handlers handlers)
    : options_(std::move(options)), handlers_(std::move(handlers)) {}

rdResult_t UcxTransport::start() {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return ucxError(st, "ucp_config_read");
  // UCX's own keepalive declares idle endpoints dead after ~20 s when a process is busy; peers
  // that die are seen by the connection (reset) and frozen ones by libreduce's timeouts.
  if (std::getenv("UCX_KEEPALIVE_INTERVAL") == nullptr) {
    ucp_config_modify(config, "KEEPALIVE_INTERVAL", "inf");
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.name = options_.name.c_str();
  st = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (st != UCS_OK) return ucxError(st, "ucp_init");

  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SINGLE;  // only the progress thread touches the worker
  st = ucp_worker_create(context_, &wparams, &worker_);
  if (st != UCS_OK) return ucxError(st, "ucp_worker_create");

  ucp_am_handler_param_t am{};
  am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                  UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  am.id = kAmId;
  am.flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA;
  am.cb = &UcxTransport::onAm;
  am.arg = this;
  st = ucp_worker_set_am_recv_handler(worker_, &am);
  if (st != UCS_OK) return ucxError(st, "ucp_worker_set_am_recv_handler");

  int ucx_fd = -1;
  st = ucp_worker_get_efd(worker_, &ucx_fd);
  if (st != UCS_OK) return ucxError(st, "ucp_worker_get_efd");
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    return setErrorf(rdSystemError, "epoll/eventfd: %s", std::strerror(errno));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = ucx_fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, ucx_fd, &ev);
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);

  thread_ = std::thread([this] { loop(); });
  thread_id_ = thread_.get_id();
  return rdSuccess;
}

UcxTransport::~UcxTransport() {
  stop();
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void UcxTransport::stop() {
  if (!thread_.joinable()) return;
  post([this] { stop_ = true; });
  thread_.join();
}

void UcxTransport::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    posted_.push_back(std::move(fn));
  }
  uint64_t one = 1;
  ssize_t n = ::write(wake_fd_, &one, sizeof one);
  (void)n;  // a full counter still wakes the loop
}

bool UcxTransport::onProgressThread() const {
  return std::this_thread::get_id() == thread_id_;
}

bool UcxTransport::progressOnce() {
  in_progress_ = true;
  bool progressed = ucp_worker_progress(worker_) != 0;
  in_progress_ = false;
  while (!deferred_.empty()) {
    auto batch = std::move(deferred_);
    deferred_.clear();
    for (auto& fn : batch) fn();
    progressed = true;
  }
  return progressed;
}

bool UcxTransport::runPosted() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    batch.swap(posted_);
  }
  for (auto& fn : batch) fn();
  return !batch.empty();
}

void UcxTransport::loop() {
  auto next_tick = std::chrono::steady_clock::now();
  auto last_activity = next_tick;
  const auto spin = std::chrono::microseconds(options_.spin_us);
  while (!stop_) {
    bool busy = runPosted();
    while (progressOnce()) busy = true;
    auto now = std::chrono::steady_clock::now();
    if (now >= next_tick) {
      next_tick = now + std::chrono::milliseconds(kTickMs);
      if (handlers_.on_tick) handlers_.on_tick();
    }
    if (busy) last_activity = now;
    // Right after activity more usually follows (the next fragment, the peer's answer): poll a
    // few microseconds before paying for a sleep and a wake-up. Idle, the thread sleeps.
    if (busy || stop_ || now - last_activity < spin) continue;
    if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) continue;  // events arrived meanwhile
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - now).count();
    epoll_event events[2];
    int n = epoll_wait(epoll_fd_, events, 2, static_cast<int>(wait_ms) + 1);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == wake_fd_) {
        uint64_t value = 0;
        ssize_t r = ::read(wake_fd_, &value, sizeof value);
        (void)r;
      }
    }
  }
  shutdownOnThread();
}

void UcxTransport::shutdownOnThread() {
  for (ucp_listener_h l : listeners_) ucp_listener_destroy(l);
  listeners_.clear();
  for (auto& [id, conn] : conns_) {
    // Healthy peers get what is still queued for them (small sends complete locally before
    // they are on the wire); failed ones are dropped at once.
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = conn.failed ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    void* req = ucp_ep_close_nbx(conn.ep, &param);
    if (UCS_PTR_IS_PTR(req)) closing_.push_back(req);
  }
  conns_.clear();
  by_ep_.clear();
  // Give closes a bounded time to finish; the worker's destruction releases the rest.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!closing_.empty() && std::chrono::steady_clock::now() < deadline) {
    progressOnce();
    for (size_t i = 0; i < closing_.size();) {
      if (ucp_request_check_status(closing_[i]) != UCS_INPROGRESS) {
        ucp_request_free(closing_[i]);
        closing_[i] = closing_.back();
        closing_.pop_back();
      } else {
        ++i;
      }
    }
  }
  // Payloads still held by the owner are released with the worker.
  deferred_.clear();
}

ucp_ep_params_t UcxTransport::epParams() {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = &UcxTransport::onEpError;
  p.err_handler.arg = this;
  return p;
}

ConnId UcxTransport::addConn(ucp_ep_h ep, std::string peer) {
  ConnId id = next_conn_++;
  conns_[id] = Conn{ep, std::move(peer), false};
  by_ep_[ep] = id;
  return id;
}

rdResult_t UcxTransport::listen(const std::string& host, uint16_t port, std::string* address) {
  sockaddr_in addr{};
  RD_CHECK(resolve(host, port, &addr));
  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  params.sockaddr.addrlen = sizeof addr;
  params.conn_handler.cb = &UcxTransport::onConnRequest;
  params.conn_handler.arg = this;
  ucp_listener_h listener = nullptr;
  ucs_status_t st = ucp_listener_create(worker_, &params, &listener);
  if (st != UCS_OK) {
    return setErrorf(rdConnectionError, "cannot listen on %s:%u: %s", host.c_str(), port,
                     ucs_status_string(st));
  }
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  st = ucp_listener_query(listener, &attr);
  if (st != UCS_OK) {
    ucp_listener_destroy(listener);
    return ucxError(st, "ucp_listener_query");
  }
  listeners_.push_back(listener);
  const auto* bound = reinterpret_cast<const sockaddr_in*>(&attr.sockaddr);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &bound->sin_addr, text, sizeof text);
  *address = std::string(text) + ":" + std::to_string(ntohs(bound->sin_port));
  return rdSuccess;
}

rdResult_t UcxTransport::connect(const std::string& address, ConnId* conn) {
  std::string host;
  uint16_t port = 0;
  RD_CHECK(splitAddress(address, &host, &port));
  sockaddr_in addr{};
  RD_CHECK(resolve(host, port, &addr));
  ucp_ep_params_t p = epParams();
  p.field_mask |= UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
  p.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  p.sockaddr.addrlen = sizeof addr;
  ucp_ep_h ep = nullptr;
  ucs_status_t st = ucp_ep_create(worker_, &p, &ep);
  if (st != UCS_OK) {
    return setErrorf(rdConnectionError, "cannot connect to %s: %s", address.c_str(),
                     ucs_status_string(st));
  }
  *conn = addConn(ep, address);
  return rdSuccess;
}

void UcxTransport::onConnRequest(ucp_conn_request_h request, void* arg) {
  auto* self = static_cast<UcxTransport*>(arg);
  ucp_conn_request_attr_t attr{};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  std::string peer = "?";
  if (ucp_conn_request_query(request, &attr) == UCS_OK) peer = formatAddress(attr.client_address);
  ucp_ep_params_t p = self->epParams();
  p.field_mask |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
  p.conn_request = request;
  ucp_ep_h ep = nullptr;
  ucs_status_t st = ucp_ep_create(self->worker_, &p, &ep);
  if (st != UCS_OK) {
    RD_LOG_WARN("%s: cannot accept a connection from %s: %s", self->options_.name.c_str(),
                peer.c_str(), ucs_status_string(st));
    return;
  }
  ConnId id = self->addConn(ep, peer);
  if (self->handlers_.on_accept) self->handlers_.on_accept(id, peer);
}

void UcxTransport::onEpError(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* self = static_cast<UcxTransport*>(arg);
  auto it = self->by_ep_.find(ep);
  if (it == self->by_ep_.end()) return;
  ConnId id = it->second;
  Conn& conn = self->conns_[id];
  if (conn.failed) return;
  conn.failed = true;
  std::string reason =
      std::string("connection to ") + conn.peer + " failed: " + ucs_status_string(status);
  // Close outside the UCX callback.
  self->post([self, id] { self->close(id); });
  if (self->handlers_.on_failure) self->handlers_.on_failure(id, rdConnectionError, reason);
}

ucs_status_t UcxTransport::onAm(void* arg, const void* header, size_t header_len, void* data,
                                size_t len, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxTransport*>(arg);
  auto msg = std::make_shared<UcxMessage>();
  msg->transport = self;
  msg->data = data;
  msg->len = len;
  msg->rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  msg->ucx_owned = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0;
  ConnId id = 0;
  if (param->reply_ep != nullptr) {
    auto it = self->by_ep_.find(param->reply_ep);
    if (it != self->by_ep_.end()) {
      const Conn& conn = self->conns_[it->second];
      if (!conn.failed && !conn.closing) id = it->second;
    }
  }
  if (id == 0 || !self->handlers_.on_message) {
    msg->done = true;  // from an endpoint we no longer know: drop
    return msg->finishCallback();
  }
  self->handlers_.on_message(id, header, header_len, Payload(std::make_unique<UcxPayload>(msg)));
  return msg->finishCallback();
}

void UcxTransport::send(ConnId conn, const void* header, size_t header_len, const void* payload,
                        size_t payload_len, Completion done, MemRegion region) {
  auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.failed || it->second.closing) {
    if (done) done(rdConnectionError);
    return;
  }
  auto* ctx =
      new SendContext{std::string(static_cast<const char*>(header), header_len), std::move(done)};
  if (in_progress_) {
    deferred_.push_back([this, conn, ctx, payload, payload_len, region] {
      startSend(conn, ctx, payload, payload_len, region);
    });
    return;
  }
  startSend(conn, ctx, payload, payload_len, region);
}

void UcxTransport::startSend(ConnId conn, SendContext* ctx, const void* payload, size_t payload_len,
                             MemRegion region) {
  auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.failed) {
    finishSend(ctx, UCS_ERR_CONNECTION_RESET);
    return;
  }
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.cb.send = onSendDone;
  param.user_data = ctx;
  param.flags = UCP_AM_SEND_FLAG_REPLY;
  if (region != nullptr) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    param.memh = static_cast<ucp_mem_h>(region);
  }
  ucs_status_ptr_t req = ucp_am_send_nbx(it->second.ep, kAmId, ctx->header.data(),
                                         ctx->header.size(), payload, payload_len, &param);
  if (UCS_PTR_IS_PTR(req)) return;
  finishSend(ctx, UCS_PTR_STATUS(req));
}

void UcxTransport::close(ConnId conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.closing) return;
  if (in_progress_) {
    it->second.closing = true;  // nothing more in or out; sends already asked for still go
    deferred_.push_back([this, conn] { closeNow(conn); });
    return;
  }
  closeNow(conn);
}

void UcxTransport::closeNow(ConnId conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  // A failed peer cannot take part in a flush; a healthy one gets its pending sends.
  param.flags = it->second.failed ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  void* req = ucp_ep_close_nbx(it->second.ep, &param);
  if (UCS_PTR_IS_PTR(req)) closing_.push_back(req);
  by_ep_.erase(it->second.ep);
  conns_.erase(it);
}

std::string UcxTransport::peerName(ConnId conn) const {
  auto it = conns_.find(conn);
  return it == conns_.end() ? std::string() : it->second.peer;
}

rdResult_t UcxTransport::registerMemory(void* ptr, size_t len, MemRegion* region) {
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = ptr;
  params.length = len;
  ucp_mem_h memh = nullptr;
  ucs_status_t st = ucp_mem_map(context_, &params, &memh);
  if (st != UCS_OK) return setErrorf(rdSystemError, "ucp_mem_map: %s", ucs_status_string(st));
  *region = memh;
  return rdSuccess;
}

void UcxTransport::deregisterMemory(MemRegion region) {
  if (region != nullptr) ucp_mem_unmap(context_, static_cast<ucp_mem_h>(region));
}

rdResult_t createUcxTransport(const Options& options, Handlers handlers,
                              std::unique_ptr<Transport>* out) {
  Options opts = options;
  int64_t spin = 0;
  RD_CHECK(settings::readInt(settings::Id::kSpinUs, &spin));
  opts.spin_us = static_cast<uint32_t>(spin);
  auto t = std::make_unique<UcxTransport>(opts, std::move(handlers));
  RD_CHECK(t->start());
  *out = std::move(t);
  return rdSuccess;
}

}  // namespace rd::transport
