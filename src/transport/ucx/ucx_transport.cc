#include "transport/ucx/ucx_transport.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <chrono>
#include <cstring>

#include "common/check.h"
#include "common/log.h"
#include "common/status.h"
#include "transport/ucx/ucx_payload.h"

namespace rd::transport {

namespace {

constexpr unsigned kAmId = 17;
// How long a stopped transport's healthy peers get to take what was queued for them.
constexpr auto kCloseGrace = std::chrono::seconds(1);

void onSendDone(void* request, ucs_status_t status, void* user_data) {
  UcxWorker::completeRequest(static_cast<RequestContext*>(user_data),
                             status == UCS_OK ? rdSuccess : rdConnectionError);
  ucp_request_free(request);
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

// UCX callbacks carry the worker; its owner is null once the transport stopped.
UcxTransport* ownerOf(void* arg) {
  return static_cast<UcxWorker*>(arg)->owner();
}

ucs_status_t amCallback(void* arg, const void* header, size_t header_len, void* data, size_t len,
                        const ucp_am_recv_param_t* param) {
  UcxTransport* owner = ownerOf(arg);
  if (owner == nullptr) return UCS_OK;  // stopped: UCX drops the message
  return owner->onAm(header, header_len, data, len, param);
}

void epErrorCallback(void* arg, ucp_ep_h ep, ucs_status_t status) {
  if (UcxTransport* owner = ownerOf(arg)) owner->onEpError(ep, status);
}

void connRequestCallback(ucp_conn_request_h request, void* arg) {
  if (UcxTransport* owner = ownerOf(arg)) owner->onConnRequest(request);
}

}  // namespace

UcxTransport::UcxTransport(std::shared_ptr<ProgressEngine> engine, Options options,
                           Handlers handlers)
    : Transport(std::move(engine)), options_(std::move(options)), handlers_(std::move(handlers)) {}

rdResult_t UcxTransport::start() {
  return runSync([this] {
    RD_CHECK(UcxWorker::create(engine_.get(), &worker_));
    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                    UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = kAmId;
    am.flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA;
    am.cb = &amCallback;
    am.arg = worker_.get();
    ucs_status_t st = ucp_worker_set_am_recv_handler(worker_->handle(), &am);
    if (st != UCS_OK) {
      worker_.reset();
      return ucxError(st, "ucp_worker_set_am_recv_handler");
    }
    RD_CHECK(UcxContext::shared(&context_));
    worker_->setOwner(this);
    engine_->addSource(worker_.get());
    return rdSuccess;
  });
}

UcxTransport::~UcxTransport() {
  stop();
}

void UcxTransport::stop() {
  runSync([this] {
    stopOnThread();
    return rdSuccess;
  });
}

void UcxTransport::stopOnThread() {
  if (!worker_) return;
  for (ucp_listener_h l : listeners_) ucp_listener_destroy(l);
  listeners_.clear();
  // First nothing reaches the owner any more: a forced close completes what it purges at once,
  // and those completions must not call back into this transport.
  worker_->detach();
  std::unordered_map<ConnId, Conn> conns = std::move(conns_);
  conns_.clear();
  by_ep_.clear();
  auto deadline = Clock::now() + kCloseGrace;
  // Healthy peers get what is still queued for them; failed ones are dropped at once.
  for (auto& [id, conn] : conns) worker_->closeEndpoint(conn.ep, conn.failed, deadline);
  // Transfers still running read or write the owner's buffers, which it frees once this
  // returns: they finish (bounded), or their endpoints are force-closed, which purges them.
  worker_->drainRequests(deadline);
  if (worker_->requestsInFlight()) {
    worker_->forceCloseAll();
    worker_->drainRequests(Clock::now() + std::chrono::milliseconds(100));
  }
  if (worker_->requestsInFlight()) {
    RD_LOG_WARN("%s: transfers still running after their endpoints were closed",
                options_.name.c_str());
  }
  // Only closes are left: the engine finishes them and then destroys the worker.
  engine_->retire(std::move(worker_), deadline);
}

ucp_ep_params_t UcxTransport::epParams() {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = &epErrorCallback;
  p.err_handler.arg = worker_.get();
  return p;
}

ConnId UcxTransport::addConn(ucp_ep_h ep, std::string peer) {
  ConnId id = next_conn_++;
  conns_[id] = Conn{ep, std::move(peer)};
  by_ep_[ep] = id;
  return id;
}

rdResult_t UcxTransport::listen(const std::string& host, uint16_t port, std::string* address) {
  if (!worker_) return setError(rdInvalidUsage, "transport stopped");
  sockaddr_in addr{};
  RD_CHECK(resolve(host, port, &addr));
  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  params.sockaddr.addrlen = sizeof addr;
  params.conn_handler.cb = &connRequestCallback;
  params.conn_handler.arg = worker_.get();
  ucp_listener_h listener = nullptr;
  ucs_status_t st = ucp_listener_create(worker_->handle(), &params, &listener);
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
  *address = formatAddress(attr.sockaddr);
  return rdSuccess;
}

rdResult_t UcxTransport::connect(const std::string& address, ConnId* conn) {
  if (!worker_) return setError(rdInvalidUsage, "transport stopped");
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
  ucs_status_t st = ucp_ep_create(worker_->handle(), &p, &ep);
  if (st != UCS_OK) {
    return setErrorf(rdConnectionError, "cannot connect to %s: %s", address.c_str(),
                     ucs_status_string(st));
  }
  *conn = addConn(ep, address);
  return rdSuccess;
}

void UcxTransport::onConnRequest(ucp_conn_request_h request) {
  ucp_conn_request_attr_t attr{};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  std::string peer = "?";
  if (ucp_conn_request_query(request, &attr) == UCS_OK) peer = formatAddress(attr.client_address);
  ucp_ep_params_t p = epParams();
  p.field_mask |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
  p.conn_request = request;
  ucp_ep_h ep = nullptr;
  ucs_status_t st = ucp_ep_create(worker_->handle(), &p, &ep);
  if (st != UCS_OK) {
    RD_LOG_WARN("%s: cannot accept a connection from %s: %s", options_.name.c_str(), peer.c_str(),
                ucs_status_string(st));
    return;
  }
  ConnId id = addConn(ep, peer);
  if (handlers_.on_accept) handlers_.on_accept(id, peer);
}

void UcxTransport::onEpError(ucp_ep_h ep, ucs_status_t status) {
  auto it = by_ep_.find(ep);
  if (it == by_ep_.end()) return;
  ConnId id = it->second;
  Conn& conn = conns_[id];
  if (conn.failed) return;
  conn.failed = true;
  std::string reason =
      std::string("connection to ") + conn.peer + " failed: " + ucs_status_string(status);
  // Close outside the UCX callback.
  engine_->defer([this, id] { close(id); });
  if (handlers_.on_failure) handlers_.on_failure(id, rdConnectionError, reason);
}

void UcxTransport::onTick() {
  if (handlers_.on_tick) handlers_.on_tick();
}

ucs_status_t UcxTransport::onAm(const void* header, size_t header_len, void* data, size_t len,
                                const ucp_am_recv_param_t* param) {
  auto msg = std::make_shared<UcxMessage>();
  msg->worker = worker_->ref();
  msg->data = data;
  msg->len = len;
  msg->rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  msg->ucx_owned = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0;
  ConnId id = 0;
  if (param->reply_ep != nullptr) {
    auto it = by_ep_.find(param->reply_ep);
    if (it != by_ep_.end()) {
      const Conn& conn = conns_[it->second];
      if (!conn.failed && !conn.closing) id = it->second;
    }
  }
  if (id == 0 || !handlers_.on_message) {
    msg->done = true;  // from an endpoint we no longer know: drop
    return msg->finishCallback();
  }
  handlers_.on_message(id, header, header_len, Payload(std::make_unique<UcxPayload>(msg)));
  return msg->finishCallback();
}

void UcxTransport::send(ConnId conn, const void* header, size_t header_len, const void* payload,
                        size_t payload_len, Completion done, MemRegion region) {
  auto it = conns_.find(conn);
  if (!worker_ || it == conns_.end() || it->second.failed || it->second.closing) {
    if (done) done(rdConnectionError);
    return;
  }
  RequestContext* ctx = worker_->newRequest(
      std::string(static_cast<const char*>(header), header_len), std::move(done));
  if (engine_->inSourceProgress()) {
    engine_->defer([this, conn, ctx, payload, payload_len, region] {
      startSend(conn, ctx, payload, payload_len, region);
    });
    return;
  }
  startSend(conn, ctx, payload, payload_len, region);
}

void UcxTransport::startSend(ConnId conn, RequestContext* ctx, const void* payload,
                             size_t payload_len, MemRegion region) {
  auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.failed) {
    UcxWorker::completeRequest(ctx, rdConnectionError);
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
  UcxWorker::completeRequest(ctx, UCS_PTR_STATUS(req) == UCS_OK ? rdSuccess : rdConnectionError);
}

void UcxTransport::close(ConnId conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.closing) return;
  if (engine_->inSourceProgress()) {
    it->second.closing = true;  // nothing more in or out; sends already asked for still go
    engine_->defer([this, conn] { closeNow(conn); });
    return;
  }
  closeNow(conn);
}

void UcxTransport::closeNow(ConnId conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end() || !worker_) return;
  Conn gone = it->second;
  // Forgotten first: completions of what a forced close purges may send again, and must find
  // the connection closed.
  by_ep_.erase(gone.ep);
  conns_.erase(it);
  // A healthy peer gets its pending sends (within the grace); a failed one cannot flush.
  worker_->closeEndpoint(gone.ep, gone.failed, Clock::now() + kCloseGrace);
}

std::string UcxTransport::peerName(ConnId conn) const {
  auto it = conns_.find(conn);
  return it == conns_.end() ? std::string() : it->second.peer;
}

rdResult_t UcxTransport::registerMemory(void* ptr, size_t len, MemRegion* region) {
  if (!context_) return setError(rdInvalidUsage, "transport not started");
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = ptr;
  params.length = len;
  ucp_mem_h memh = nullptr;
  ucs_status_t st = ucp_mem_map(context_->handle(), &params, &memh);
  if (st != UCS_OK) return setErrorf(rdSystemError, "ucp_mem_map: %s", ucs_status_string(st));
  *region = memh;
  return rdSuccess;
}

void UcxTransport::deregisterMemory(MemRegion region) {
  if (region != nullptr && context_)
    ucp_mem_unmap(context_->handle(), static_cast<ucp_mem_h>(region));
}

rdResult_t createUcxTransport(std::shared_ptr<ProgressEngine> engine, const Options& options,
                              Handlers handlers, std::unique_ptr<Transport>* out) {
  auto t = std::make_unique<UcxTransport>(std::move(engine), options, std::move(handlers));
  RD_CHECK(t->start());
  *out = std::move(t);
  return rdSuccess;
}

}  // namespace rd::transport
