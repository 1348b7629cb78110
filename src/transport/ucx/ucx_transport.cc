// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ucx/ucx_transport.h"

#include <chrono>
#include <cstring>

#include "common/auth.h"
#include "common/check.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"
#include "transport/ucx/ucx_devices.h"
#include "transport/ucx/ucx_ep_info.h"
#include "transport/ucx/ucx_payload.h"

namespace rd::transport {

namespace {

constexpr unsigned kAmId = 17;       // a message: header = receiver's tag | owner's header
constexpr unsigned kCloseAmId = 18;  // a close notice: header = receiver's tag
constexpr size_t kTagBytes = sizeof(uint64_t);
// How long a stopped transport's healthy peers get to take what was queued for them.
constexpr auto kCloseGrace = std::chrono::seconds(1);

void onSendDone(void* request, ucs_status_t status, void* user_data) {
  UcxWorker::completeRequest(static_cast<RequestContext*>(user_data),
                             status == UCS_OK ? rdSuccess : rdConnectionError);
  ucp_request_free(request);
}

// UCX callbacks carry the worker; its owner is null once the transport stopped.
UcxTransport* ownerOf(void* arg) {
  return static_cast<UcxWorker*>(arg)->owner();
}

ucs_status_t amCallback(void* arg, const void* header, size_t header_len, void* data, size_t len,
                        const ucp_am_recv_param_t* param) {
  UcxTransport* owner = ownerOf(arg);
  if (owner == nullptr) return UCS_OK;  // stopped: UCX drops the message
  return owner->onAm(static_cast<UcxWorker*>(arg), header, header_len, data, len, param);
}

ucs_status_t closeNoticeCallback(void* arg, const void* header, size_t header_len, void*, size_t,
                                 const ucp_am_recv_param_t*) {
  UcxTransport* owner = ownerOf(arg);
  return owner == nullptr ? UCS_OK : owner->onCloseNotice(header, header_len);
}

void epErrorCallback(void* arg, ucp_ep_h ep, ucs_status_t status) {
  if (UcxTransport* owner = ownerOf(arg)) owner->onEpError(ep, status);
}

rdResult_t setAmHandler(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t cb, void* arg) {
  ucp_am_handler_param_t am{};
  am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                  UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  am.id = id;
  am.flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA;
  am.cb = cb;
  am.arg = arg;
  ucs_status_t st = ucp_worker_set_am_recv_handler(worker, &am);
  return st == UCS_OK ? rdSuccess : ucxError(st, "ucp_worker_set_am_recv_handler");
}

uint64_t tagOf(const void* header) {
  uint64_t tag = 0;
  std::memcpy(&tag, header, sizeof tag);
  return tag;
}

}  // namespace

UcxTransport::UcxTransport(std::shared_ptr<ProgressEngine> engine, Options options,
                           Handlers handlers)
    : Transport(std::move(engine)), options_(std::move(options)), handlers_(std::move(handlers)) {}

rdResult_t UcxTransport::start() {
  int64_t timeout_ms = 0, max_pending = 0;
  uint64_t eager = 0;
  RD_CHECK(settings::readInt(settings::Id::kBootstrapTimeoutMs, &timeout_ms));
  RD_CHECK(settings::readInt(settings::Id::kBootstrapPending, &max_pending));
  RD_CHECK(settings::readSize(settings::Id::kEagerBytes, &eager));
  eager_bytes_ = eager;
  // Made here, on the caller's thread: the progress thread may be serving other communicators
  // of this process, whose heartbeats must not wait seconds for it (prepareLane).
  std::unique_ptr<UcxWorker> worker;
  RD_CHECK(UcxWorker::create(engine_.get(), netDevicesFor(options_.local_host), &worker));
  return runSync([&] {
    bootstrap::Config config;
    config.name = options_.name;
    config.secret = options_.secret;
    config.pool_secret = options_.pool_secret;
    config.scope = options_.scope;
    config.timeout = std::chrono::milliseconds(timeout_ms);
    config.max_pending = static_cast<size_t>(max_pending);
    RD_CHECK(worker->address(&config.worker_address));
    bootstrap::Callbacks callbacks;
    callbacks.new_tag = [this] { return newTag(); };
    callbacks.accepted = [this](uint64_t tag, const bootstrap::Endpoint& peer,
                                const std::string& name) { onAccepted(tag, peer, name); };
    callbacks.connected = [this](uint64_t conn, const bootstrap::Endpoint& peer) {
      onConnected(conn, peer);
    };
    callbacks.connect_failed = [this](uint64_t conn, rdResult_t status, const std::string& why) {
      failConn(conn, status, "cannot connect to " + why);
    };
    bootstrap_ = std::make_unique<bootstrap::Bootstrap>(std::move(config), std::move(callbacks));
    rdResult_t st = bootstrap_->start();
    if (st == rdSuccess) st = startWorker(worker.get());
    if (st != rdSuccess) {
      bootstrap_.reset();
      return st;
    }
    context_ = worker->context();
    lanes_[0] = std::move(worker);
    engine_->addSource(bootstrap_.get());
    return rdSuccess;
  });
}

rdResult_t UcxTransport::startWorker(UcxWorker* worker) {
  RD_CHECK(setAmHandler(worker->handle(), kAmId, &amCallback, worker));
  RD_CHECK(setAmHandler(worker->handle(), kCloseAmId, &closeNoticeCallback, worker));
  worker->setOwner(this);
  engine_->addSource(worker);
  return rdSuccess;
}

rdResult_t UcxTransport::prepareLane(Lane lane) {
  std::unique_ptr<UcxWorker> worker;
  RD_CHECK(UcxWorker::create(engine_.get(), netDevicesFor(options_.local_host), &worker));
  return runSync([&] {
    auto& slot = lanes_[static_cast<size_t>(lane)];
    if (slot || stopped_) return rdSuccess;  // the worker made above goes unused
    RD_CHECK(startWorker(worker.get()));
    slot = std::move(worker);
    return rdSuccess;
  });
}

UcxWorker* UcxTransport::laneWorker(Lane lane) {
  auto& slot = lanes_[static_cast<size_t>(lane)];
  if (slot || stopped_) return slot.get();
  std::unique_ptr<UcxWorker> worker;
  if (UcxWorker::create(engine_.get(), netDevicesFor(options_.local_host), &worker) != rdSuccess ||
      startWorker(worker.get()) != rdSuccess) {
    return nullptr;
  }
  slot = std::move(worker);
  return slot.get();
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
  if (stopped_) return;
  stopped_ = true;
  if (!lanes_[0]) return;  // never started
  engine_->removeSource(bootstrap_.get());
  bootstrap_.reset();  // handshakes still running end here, unreported
  // Peers hear that each connection closed, after what was already sent on it.
  for (auto& [id, conn] : conns_) {
    if (!conn.failed && !conn.link.empty()) sendCloseNotice(conn);
  }
  // First nothing reaches the owner any more: a forced close completes what it purges at once,
  // and those completions must not call back into this transport.
  for (auto& worker : lanes_) {
    if (worker) worker->detach();
  }
  std::unordered_map<std::string, Link> links = std::move(links_);
  conns_.clear();
  by_tag_.clear();
  links_.clear();
  link_by_ep_.clear();
  auto deadline = Clock::now() + kCloseGrace;
  // Healthy peers get what is still queued for them; failed links were already dropped.
  for (auto& [key, link] : links) link.worker->closeEndpoint(link.ep, false, deadline);
  for (auto& worker : lanes_) {
    if (!worker) continue;
    // Transfers still running read or write the owner's buffers, which it frees once this
    // returns: they finish (bounded), or their endpoints are force-closed, which purges them.
    worker->drainRequests(deadline);
    if (worker->requestsInFlight()) {
      worker->forceCloseAll();
      worker->drainRequests(Clock::now() + std::chrono::milliseconds(100));
    }
    if (worker->requestsInFlight()) {
      RD_LOG_WARN("%s: transfers still running after their endpoints were closed",
                  options_.name.c_str());
    }
    // Only closes are left: the engine finishes them and then destroys the worker.
    engine_->retire(std::move(worker), deadline);
  }
}

ucp_ep_params_t UcxTransport::epParams(UcxWorker* worker) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = &epErrorCallback;
  p.err_handler.arg = worker;
  return p;
}

uint64_t UcxTransport::newTag() {
  uint64_t tag = 0;
  // Unguessable, so that only the authenticated peer can address a connection; 0 is never one.
  while (tag == 0 || by_tag_.count(tag) != 0) {
    if (auth::randomBytes(&tag, sizeof tag) != rdSuccess) tag = next_conn_ * 0x9e3779b97f4a7c15ull;
  }
  return tag;
}

ConnId UcxTransport::addConn(std::string peer, uint64_t tag) {
  ConnId id = next_conn_++;
  Conn& conn = conns_[id];
  conn.peer = std::move(peer);
  conn.tag = tag;
  by_tag_[tag] = id;
  return id;
}

rdResult_t UcxTransport::linkTo(const std::string& worker_address, ConnId conn) {
  Conn& c = conns_[conn];
  UcxWorker* worker = laneWorker(c.lane);
  if (worker == nullptr) return setError(rdConnectionError, "transport stopped");
  std::string key = std::to_string(static_cast<int>(c.lane)) + ":" + worker_address;
  auto it = links_.find(key);
  if (it == links_.end()) {
    ucp_ep_params_t p = epParams(worker);
    p.field_mask |= UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    p.address = reinterpret_cast<const ucp_address_t*>(worker_address.data());
    ucp_ep_h ep = nullptr;
    ucs_status_t st = ucp_ep_create(worker->handle(), &p, &ep);
    if (st != UCS_OK) return ucxError(st, "ucp_ep_create");
    it = links_.emplace(key, Link{ep, worker, {}}).first;
    link_by_ep_[ep] = key;
  }
  it->second.conns.insert(conn);
  c.link = key;
  return rdSuccess;
}

rdResult_t UcxTransport::listen(const std::string& host, uint16_t port, std::string* address) {
  if (stopped_) return setError(rdInvalidUsage, "transport stopped");
  return bootstrap_->listen(host, port, address);
}

rdResult_t UcxTransport::connect(const std::string& address, ConnId* conn, Lane lane) {
  if (stopped_) return setError(rdInvalidUsage, "transport stopped");
  UcxWorker* worker = laneWorker(lane);
  if (worker == nullptr) return rdConnectionError;  // the lane's worker said why
  std::string worker_address;
  RD_CHECK(worker->address(&worker_address));
  uint64_t tag = newTag();
  ConnId id = addConn(address, tag);
  conns_[id].lane = lane;
  rdResult_t st = bootstrap_->connect(id, tag, address, worker_address);
  if (st != rdSuccess) {
    forget(id);
    return st;
  }
  *conn = id;
  return rdSuccess;
}

void UcxTransport::onAccepted(uint64_t tag, const bootstrap::Endpoint& peer,
                              const std::string& name) {
  ConnId id = addConn(name, tag);
  conns_[id].remote_tag = peer.tag;
  if (linkTo(peer.worker_address, id) != rdSuccess) {
    RD_LOG_WARN("%s: cannot reach the UCX worker of %s: %s", options_.name.c_str(), name.c_str(),
                rdGetLastError());
    forget(id);
    return;
  }
  if (handlers_.on_accept) handlers_.on_accept(id, name);
}

void UcxTransport::onConnected(ConnId id, const bootstrap::Endpoint& peer) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  it->second.remote_tag = peer.tag;
  if (linkTo(peer.worker_address, id) != rdSuccess) {
    failConn(id, rdConnectionError,
             "cannot reach the UCX worker of " + it->second.peer + ": " + rdGetLastError());
    return;
  }
  // What was sent while the handshake ran goes now, in order.
  std::vector<QueuedSend> queued = std::move(it->second.queued);
  for (QueuedSend& q : queued) {
    send(id, q.header.data(), q.header.size(), q.payload, q.payload_len, std::move(q.done),
         q.region);
  }
}

void UcxTransport::failConn(ConnId id, rdResult_t status, const std::string& reason) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second.failed) return;
  it->second.failed = true;
  std::vector<QueuedSend> queued = std::move(it->second.queued);
  for (QueuedSend& q : queued) {
    if (q.done) q.done(rdConnectionError);
  }
  // Close outside the callback that reported it.
  engine_->defer([this, id] { close(id); });
  if (handlers_.on_failure) handlers_.on_failure(id, status, reason);
}

void UcxTransport::onEpError(ucp_ep_h ep, ucs_status_t status) {
  auto it = link_by_ep_.find(ep);
  if (it == link_by_ep_.end()) return;
  auto link = links_.find(it->second);
  link_by_ep_.erase(it);
  if (link == links_.end()) return;
  std::unordered_set<ConnId> conns = std::move(link->second.conns);
  UcxWorker* worker = link->second.worker;
  links_.erase(link);
  // The endpoint cannot flush; closed outside the UCX callback.
  engine_->defer([this, worker, ep] {
    if (!stopped_) worker->closeEndpoint(ep, true, Clock::now());
  });
  for (ConnId id : conns) {
    auto c = conns_.find(id);
    if (c == conns_.end()) continue;
    c->second.link.clear();  // nothing more goes out on it
    failConn(id, rdConnectionError,
             "connection to " + c->second.peer + " failed: " + ucs_status_string(status));
  }
}

ucs_status_t UcxTransport::onCloseNotice(const void* header, size_t header_len) {
  if (header_len != kTagBytes) return UCS_OK;
  auto it = by_tag_.find(tagOf(header));
  if (it == by_tag_.end()) return UCS_OK;
  ConnId id = it->second;
  failConn(id, rdConnectionError, "connection to " + conns_[id].peer + " closed by the peer");
  return UCS_OK;
}

void UcxTransport::onTick() {
  if (handlers_.on_tick) handlers_.on_tick();
}

ucs_status_t UcxTransport::onAm(UcxWorker* worker, const void* header, size_t header_len,
                                void* data, size_t len, const ucp_am_recv_param_t* param) {
  auto msg = std::make_shared<UcxMessage>();
  msg->worker = worker->ref();
  msg->data = data;
  msg->len = len;
  msg->rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  msg->ucx_owned = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0;
  ConnId id = 0;
  if (header_len >= kTagBytes) {
    auto it = by_tag_.find(tagOf(header));
    if (it != by_tag_.end()) {
      const Conn& conn = conns_[it->second];
      if (!conn.failed && !conn.closing && !conn.link.empty()) id = it->second;
    }
  }
  if (id == 0 || !handlers_.on_message) {
    msg->done = true;  // for no connection we know: drop
    return msg->finishCallback();
  }
  handlers_.on_message(id, static_cast<const char*>(header) + kTagBytes, header_len - kTagBytes,
                       Payload(std::make_unique<UcxPayload>(msg)));
  return msg->finishCallback();
}

std::string UcxTransport::taggedHeader(uint64_t tag, const void* header, size_t header_len) const {
  std::string tagged(reinterpret_cast<const char*>(&tag), kTagBytes);
  tagged.append(static_cast<const char*>(header), header_len);
  return tagged;
}

void UcxTransport::send(ConnId conn, const void* header, size_t header_len, const void* payload,
                        size_t payload_len, Completion done, MemRegion region) {
  auto it = conns_.find(conn);
  if (stopped_ || it == conns_.end() || it->second.failed || it->second.closing) {
    if (done) done(rdConnectionError);
    return;
  }
  Conn& c = it->second;
  if (c.link.empty()) {  // the handshake is still running
    c.queued.push_back(QueuedSend{std::string(static_cast<const char*>(header), header_len),
                                  payload, payload_len, std::move(done), region});
    return;
  }
  RequestContext* ctx = links_.at(c.link).worker->newRequest(
      taggedHeader(c.remote_tag, header, header_len), std::move(done));
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
  auto link = it == conns_.end() ? links_.end() : links_.find(it->second.link);
  if (it == conns_.end() || it->second.failed || link == links_.end()) {
    UcxWorker::completeRequest(ctx, rdConnectionError);
    return;
  }
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = onSendDone;
  param.user_data = ctx;
  if (region != nullptr) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    param.memh = static_cast<ucp_mem_h>(region);
  }
  // Eager: the payload goes at once instead of after a rendezvous round trip, which would wait
  // in every queue on the way (the senders' flow control bounds what the receiver holds).
  if (payload_len != 0 && payload_len <= eager_bytes_) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_AM_SEND_FLAG_EAGER;
  }
  ucs_status_ptr_t req = ucp_am_send_nbx(link->second.ep, kAmId, ctx->header.data(),
                                         ctx->header.size(), payload, payload_len, &param);
  if (UCS_PTR_IS_PTR(req)) return;
  UcxWorker::completeRequest(ctx, UCS_PTR_STATUS(req) == UCS_OK ? rdSuccess : rdConnectionError);
}

void UcxTransport::sendCloseNotice(const Conn& conn) {
  auto link = links_.find(conn.link);
  if (link == links_.end()) return;
  RequestContext* ctx = link->second.worker->newRequest(
      std::string(reinterpret_cast<const char*>(&conn.remote_tag), kTagBytes), nullptr);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = onSendDone;
  param.user_data = ctx;
  ucs_status_ptr_t req = ucp_am_send_nbx(link->second.ep, kCloseAmId, ctx->header.data(),
                                         ctx->header.size(), nullptr, 0, &param);
  if (!UCS_PTR_IS_PTR(req)) UcxWorker::completeRequest(ctx, rdSuccess);
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
  if (it == conns_.end() || stopped_) return;
  // The peer hears of it after what was sent before (one endpoint keeps the order); the link
  // stays for the other connections between the two transports.
  if (!it->second.failed && !it->second.link.empty()) sendCloseNotice(it->second);
  forget(conn);
}

void UcxTransport::forget(ConnId conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  Conn gone = std::move(it->second);
  conns_.erase(it);
  by_tag_.erase(gone.tag);
  if (bootstrap_) bootstrap_->cancel(conn);
  auto link = links_.find(gone.link);
  if (link != links_.end()) link->second.conns.erase(conn);
  for (QueuedSend& q : gone.queued) {
    if (q.done) q.done(rdConnectionError);
  }
}

std::string UcxTransport::peerName(ConnId conn) const {
  auto it = conns_.find(conn);
  return it == conns_.end() ? std::string() : it->second.peer;
}

std::string UcxTransport::linkTransports(ConnId conn) const {
  auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.link.empty()) return "";
  auto link = links_.find(it->second.link);
  return link == links_.end() ? std::string() : endpointTransports(link->second.ep);
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
