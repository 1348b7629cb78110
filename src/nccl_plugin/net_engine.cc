// SPDX-License-Identifier: BSD-3-Clause
#include "nccl_plugin/net_engine.h"

#include <cstring>
#include <unordered_map>

#include "collectives/communicator.h"
#include "collectives/host_address.h"
#include "collectives/unique_id.h"
#include "common/auth.h"
#include "common/check.h"
#include "common/settings.h"
#include "common/status.h"
#include "nccl_plugin/net_comms.h"
#include "nccl_plugin/plugin_log.h"

namespace rd::nccl::net {

using transport::ConnId;
using transport::Payload;

void Request::fail(rdResult_t error, const std::string& why) {
  std::lock_guard<std::mutex> lock(reason_mu);
  if (status.load() != rdSuccess) return;
  reason = why;
  status.store(error);
}

void Request::finishOne(rdResult_t result, const char* what) {
  if (result < 0) fail(result, what);
  pending.fetch_sub(1);
}

namespace {

// The process's one transport and listener, and what its handlers need to find comms.
class Engine {
 public:
  rdResult_t start();
  transport::Transport& transport() { return *transport_; }
  const std::string& address() const { return address_; }

  // Progress thread only.
  std::unordered_map<uint64_t, ListenComm*> listens;
  std::unordered_map<ConnId, RecvComm*> recvs;
  std::unordered_map<ConnId, SendComm*> sends;

 private:
  void onMessage(ConnId conn, const void* header, size_t len, Payload payload);
  void onFailure(ConnId conn, rdResult_t status, const std::string& reason);

  std::unique_ptr<transport::Transport> transport_;
  std::string address_;
};

std::mutex g_engine_mu;
Engine* g_engine = nullptr;  // lives until the process exits: NCCL may call from any thread

Engine* engine() {
  std::lock_guard<std::mutex> lock(g_engine_mu);
  return g_engine;
}

// Delivers @p payload into receive @p i of @p req (progress thread).
void deliver(const std::shared_ptr<Request>& req, int i, Payload payload) {
  req->matched[i] = true;
  size_t len = payload.size();
  if (len > req->capacity[i]) {
    payload.discard();
    req->fail(rdProtocolError, "a message of " + std::to_string(len) +
                                   " bytes arrived for a receive of " +
                                   std::to_string(req->capacity[i]) + " bytes (tag " +
                                   std::to_string(req->tags[i]) + ")");
    req->pending.fetch_sub(1);
    return;
  }
  req->sizes[i].store(len);
  if (len == 0) {
    payload.discard();
    req->pending.fetch_sub(1);
    return;
  }
  payload.receiveInto(
      req->data[i], [req](rdResult_t st) { req->finishOne(st, "receiving a message failed"); },
      req->regions[i]);
}

bool fullyMatched(const Request& req) {
  for (int i = 0; i < req.n; ++i) {
    if (!req.matched[i]) return false;
  }
  return true;
}

// A data message arrived on @p rc: the oldest unmatched receive with its tag takes it.
void matchArrival(RecvComm* rc, int64_t tag, Payload payload) {
  for (auto it = rc->posted.begin(); it != rc->posted.end(); ++it) {
    auto req = *it;
    for (int i = 0; i < req->n; ++i) {
      if (req->matched[i] || req->tags[i] != tag) continue;
      deliver(req, i, std::move(payload));
      if (fullyMatched(*req)) rc->posted.erase(it);
      return;
    }
  }
  rc->unexpected.push_back(Unexpected{tag, std::move(payload)});
}

// A new irecv on @p rc: messages that came first are matched now, the rest wait (progress thread).
void postReceive(RecvComm* rc, const std::shared_ptr<Request>& req) {
  if (rc->failed != rdSuccess) {
    req->fail(rc->failed, rc->reason);
    return;
  }
  for (int i = 0; i < req->n; ++i) {
    for (auto it = rc->unexpected.begin(); it != rc->unexpected.end(); ++it) {
      if (it->tag != req->tags[i]) continue;
      Payload payload = std::move(it->payload);
      rc->unexpected.erase(it);
      deliver(req, i, std::move(payload));
      break;
    }
  }
  if (!fullyMatched(*req)) rc->posted.push_back(req);
}

// The address peers on other nodes reach this process at: LIBREDUCE_LISTEN_HOST, else the
// local address toward the first reducer, else coll::routableHost's choice.
std::string listenHost() {
  std::string configured = settings::rawValue(settings::Id::kListenHost);
  if (!configured.empty()) return configured;
  std::vector<std::string> reducers;
  if (coll::parseReducerList(settings::rawValue(settings::Id::kReducers), &reducers) == rdSuccess &&
      !reducers.empty()) {
    return coll::localAddressToward(reducers.front());
  }
  return coll::routableHost();
}

rdResult_t Engine::start() {
  transport::Handlers handlers;
  handlers.on_accept = [](ConnId, const std::string&) {};
  handlers.on_message = [this](ConnId conn, const void* header, size_t len, Payload payload) {
    onMessage(conn, header, len, std::move(payload));
  };
  handlers.on_failure = [this](ConnId conn, rdResult_t status, const std::string& reason) {
    onFailure(conn, status, reason);
  };
  handlers.on_tick = [] {};
  transport::Options options;
  options.name = "libreduce-nccl-net";
  RD_CHECK(auth::secretFromSettings(&options.secret));
  std::string host = listenHost();
  options.local_host = host;
  RD_CHECK(transport::createTransport("ucx", nullptr, options, std::move(handlers), &transport_));
  return transport_->runSync([&] { return transport_->listen(host, 0, &address_); });
}

void Engine::onMessage(ConnId conn, const void* header, size_t len, Payload payload) {
  Frame frame{};
  if (len != sizeof frame) return;  // not ours: dropped with its payload
  std::memcpy(&frame, header, sizeof frame);
  if (frame.magic != kFrameMagic) return;
  if (frame.kind == kHello) {
    auto listen = listens.find(frame.listen_id);
    if (listen == listens.end() || recvs.count(conn) != 0) {
      transport_->close(conn);  // for a listen comm already closed, or a second hello
      return;
    }
    auto* rc = new RecvComm;
    rc->conn = conn;
    rc->peer = transport_->peerName(conn);
    recvs[conn] = rc;
    std::lock_guard<std::mutex> lock(listen->second->mu);
    listen->second->ready.push_back(rc);
    return;
  }
  auto it = recvs.find(conn);
  if (frame.kind != kData || it == recvs.end()) return;
  matchArrival(it->second, frame.tag, std::move(payload));
}

void Engine::onFailure(ConnId conn, rdResult_t status, const std::string& reason) {
  if (auto it = recvs.find(conn); it != recvs.end()) {
    RecvComm* rc = it->second;
    rc->failed = status;
    rc->reason = "receiving from " + rc->peer + ": " + reason;
    for (auto& req : rc->posted) req->fail(status, rc->reason);
    rc->posted.clear();
    rc->unexpected.clear();
  }
  if (auto it = sends.find(conn); it != sends.end()) {
    SendComm* sc = it->second;
    std::lock_guard<std::mutex> lock(sc->reason_mu);
    sc->reason = "sending to " + sc->peer + ": " + reason;
    sc->failed.store(status);
  }
}

template <typename Comm>
void logCommFailure(Comm* comm, const char* what) {
  std::lock_guard<std::mutex> lock(comm->reason_mu);
  RD_NCCL_WARN("%s: %s", what, comm->reason.c_str());
}

}  // namespace

ncclResult_t init(ncclDebugLogger_t logger) {
  setLogger(logger);
  std::lock_guard<std::mutex> lock(g_engine_mu);
  if (g_engine != nullptr) return ncclSuccess;
  auto fresh = std::make_unique<Engine>();
  rdResult_t st = fresh->start();
  if (st != rdSuccess) return RD_NCCL_FAIL(st, "starting the UCX transport");
  g_engine = fresh.release();
  RD_NCCL_INFO(kNcclLogInit | kNcclLogNet, "Net over UCX, listening on %s",
               g_engine->address().c_str());
  return ncclSuccess;
}

ncclResult_t devices(int* ndev) {
  if (ndev == nullptr) return ncclInvalidArgument;
  *ndev = 1;
  return ncclSuccess;
}

ncclResult_t fillProperties(int dev, ncclNetProperties_v8_t* props) {
  if (dev != 0 || props == nullptr) return ncclInvalidArgument;
  static char name[] = "libreduce";
  *props = ncclNetProperties_v8_t{};
  props->name = name;
  props->pciPath = nullptr;  // not tied to one NIC: UCX picks the interfaces
  props->guid = 0x6c6962726564ull;
  props->ptrSupport = kNcclPtrHost;
  props->regIsGlobal = 0;
  props->speed = 100000;
  props->port = 0;
  props->latency = 0;
  props->maxComms = 1 << 16;
  props->maxRecvs = kMaxRecvs;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = 0;
  return ncclSuccess;
}

ncclResult_t listen(int dev, void* handle, void** listen_comm) {
  Engine* e = engine();
  if (e == nullptr) return ncclInvalidUsage;
  if (dev != 0 || handle == nullptr || listen_comm == nullptr) return ncclInvalidArgument;
  auto* lc = new ListenComm;
  if (auth::randomBytes(&lc->id, sizeof lc->id) != rdSuccess) {
    delete lc;
    return RD_NCCL_FAIL(rdSystemError, "listen");
  }
  e->transport().runSync([&] {
    e->listens[lc->id] = lc;
    return rdSuccess;
  });
  NetHandle h{};
  h.magic = kHandleMagic;
  h.listen_id = lc->id;
  std::snprintf(h.address, sizeof h.address, "%s", e->address().c_str());
  std::memset(handle, 0, kNcclNetHandleMaxSize);
  std::memcpy(handle, &h, sizeof h);
  *listen_comm = lc;
  return ncclSuccess;
}

ncclResult_t connect(int dev, void* handle, void** send_comm) {
  Engine* e = engine();
  if (e == nullptr) return ncclInvalidUsage;
  if (dev != 0 || handle == nullptr || send_comm == nullptr) return ncclInvalidArgument;
  NetHandle h{};
  std::memcpy(&h, handle, sizeof h);
  h.address[sizeof h.address - 1] = '\0';
  if (h.magic != kHandleMagic) {
    RD_NCCL_WARN("connect: the handle was not made by this plugin's listen");
    return ncclInvalidArgument;
  }
  auto* sc = new SendComm;
  sc->peer = h.address;
  rdResult_t st = e->transport().runSync([&] {
    RD_CHECK(e->transport().connect(h.address, &sc->conn));
    e->sends[sc->conn] = sc;
    Frame hello{kFrameMagic, kHello, h.listen_id, 0};
    e->transport().send(sc->conn, &hello, sizeof hello, nullptr, 0, nullptr);
    return rdSuccess;
  });
  if (st != rdSuccess) {
    delete sc;
    return RD_NCCL_FAIL(st, std::string("connecting to ") + h.address);
  }
  *send_comm = sc;
  return ncclSuccess;
}

ncclResult_t accept(void* listen_comm, void** recv_comm) {
  if (listen_comm == nullptr || recv_comm == nullptr) return ncclInvalidArgument;
  auto* lc = static_cast<ListenComm*>(listen_comm);
  std::lock_guard<std::mutex> lock(lc->mu);
  *recv_comm = nullptr;
  if (!lc->ready.empty()) {
    *recv_comm = lc->ready.front();
    lc->ready.pop_front();
  }
  return ncclSuccess;
}

ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  Engine* e = engine();
  if (e == nullptr) return ncclInvalidUsage;
  if (comm == nullptr || mhandle == nullptr) return ncclInvalidArgument;
  if (type != kNcclPtrHost) {
    RD_NCCL_WARN("regMr: only host memory is supported (type %d)", type);
    return ncclInvalidArgument;
  }
  auto* mh = new MemHandle;
  rdResult_t st = e->transport().runSync(
      [&] { return e->transport().registerMemory(data, size, &mh->region); });
  if (st != rdSuccess) {
    delete mh;
    return RD_NCCL_FAIL(st, "registering " + std::to_string(size) + " bytes");
  }
  *mhandle = mh;
  return ncclSuccess;
}

ncclResult_t deregMr(void* /*comm*/, void* mhandle) {
  Engine* e = engine();
  auto* mh = static_cast<MemHandle*>(mhandle);
  if (e == nullptr || mh == nullptr) return ncclInvalidArgument;
  e->transport().runSync([&] {
    e->transport().deregisterMemory(mh->region);
    return rdSuccess;
  });
  delete mh;
  return ncclSuccess;
}

ncclResult_t isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                   void** request) {
  Engine* e = engine();
  auto* sc = static_cast<SendComm*>(send_comm);
  if (e == nullptr || sc == nullptr || request == nullptr) return ncclInvalidArgument;
  if (sc->failed.load() != rdSuccess) {
    logCommFailure(sc, "isend");
    return toNccl(static_cast<rdResult_t>(sc->failed.load()));
  }
  auto req = std::make_shared<Request>();
  req->self = req;
  req->n = 1;
  req->pending.store(1);
  req->sizes[0].store(size);
  transport::MemRegion region = mhandle ? static_cast<MemHandle*>(mhandle)->region : nullptr;
  ConnId conn = sc->conn;
  e->transport().post([e, req, conn, data, size, tag, region] {
    Frame frame{kFrameMagic, kData, 0, tag};
    e->transport().send(
        conn, &frame, sizeof frame, data, size,
        [req](rdResult_t st) { req->finishOne(st, "sending a message failed"); }, region);
  });
  *request = req.get();
  return ncclSuccess;
}

ncclResult_t irecv(void* recv_comm, int n, void** data, const size_t* sizes, const int* tags,
                   void** mhandles, void** request) {
  Engine* e = engine();
  auto* rc = static_cast<RecvComm*>(recv_comm);
  if (e == nullptr || rc == nullptr || request == nullptr || n < 1 || n > kMaxRecvs) {
    return ncclInvalidArgument;
  }
  auto req = std::make_shared<Request>();
  req->self = req;
  req->n = n;
  req->pending.store(n);
  for (int i = 0; i < n; ++i) {
    req->data[i] = data[i];
    req->capacity[i] = sizes[i];
    req->tags[i] = tags[i];
    req->regions[i] =
        mhandles && mhandles[i] ? static_cast<MemHandle*>(mhandles[i])->region : nullptr;
  }
  e->transport().post([rc, req] { postReceive(rc, req); });
  *request = req.get();
  return ncclSuccess;
}

ncclResult_t iflush(void*, int, void**, int*, void**, void** request) {
  if (request == nullptr) return ncclInvalidArgument;
  *request = nullptr;
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* sizes) {
  auto* req = static_cast<Request*>(request);
  if (req == nullptr || done == nullptr) return ncclInvalidArgument;
  *done = 0;
  int status = req->status.load();
  if (status != rdSuccess) {
    {
      std::lock_guard<std::mutex> lock(req->reason_mu);
      RD_NCCL_WARN("%s", req->reason.c_str());
    }
    req->self.reset();  // callbacks still running keep their own reference
    return toNccl(static_cast<rdResult_t>(status));
  }
  if (req->pending.load() > 0) return ncclSuccess;
  *done = 1;
  if (sizes != nullptr) {
    for (int i = 0; i < req->n; ++i) sizes[i] = static_cast<int>(req->sizes[i].load());
  }
  req->self.reset();
  return ncclSuccess;
}

ncclResult_t closeSend(void* send_comm) {
  Engine* e = engine();
  auto* sc = static_cast<SendComm*>(send_comm);
  if (e == nullptr || sc == nullptr) return ncclInvalidArgument;
  e->transport().runSync([&] {
    e->transport().close(sc->conn);
    e->sends.erase(sc->conn);
    return rdSuccess;
  });
  delete sc;
  return ncclSuccess;
}

ncclResult_t closeRecv(void* recv_comm) {
  Engine* e = engine();
  auto* rc = static_cast<RecvComm*>(recv_comm);
  if (e == nullptr || rc == nullptr) return ncclInvalidArgument;
  e->transport().runSync([&] {
    for (auto& req : rc->posted) req->fail(rdAborted, "the recv comm was closed");
    e->transport().close(rc->conn);
    e->recvs.erase(rc->conn);
    delete rc;
    return rdSuccess;
  });
  return ncclSuccess;
}

ncclResult_t closeListen(void* listen_comm) {
  Engine* e = engine();
  auto* lc = static_cast<ListenComm*>(listen_comm);
  if (e == nullptr || lc == nullptr) return ncclInvalidArgument;
  e->transport().runSync([&] {
    e->listens.erase(lc->id);
    for (RecvComm* rc : lc->ready) {  // connected but never accepted
      e->transport().close(rc->conn);
      e->recvs.erase(rc->conn);
      delete rc;
    }
    return rdSuccess;
  });
  delete lc;
  return ncclSuccess;
}

}  // namespace rd::nccl::net
