// SPDX-License-Identifier: BSD-3-Clause
#include "transport/loopback/loopback_transport.h"

#include <cstring>

#include "common/check.h"
#include "common/status.h"
#include "transport/loopback/loopback_network.h"

namespace rd::transport::loopback {

namespace {

// An arrived payload: bytes copied at send, or a rendezvous the receiver fetches.
class LoopbackPayload final : public PayloadImpl {
 public:
  LoopbackPayload(std::shared_ptr<const std::string> eager, std::shared_ptr<Rendezvous> rndv,
                  std::shared_ptr<ProgressEngine> engine)
      : eager_(std::move(eager)), rndv_(std::move(rndv)), engine_(std::move(engine)) {}
  ~LoopbackPayload() override { discard(); }

  size_t size() const override { return eager_ ? eager_->size() : rndv_ ? rndv_->len : 0; }
  const void* data() const override { return done_ || !eager_ ? nullptr : eager_->data(); }
  bool keepsData() const override { return data() != nullptr; }

  void receiveInto(void* dst, MemRegion /*region*/, Completion done) override {
    if (done_) {
      if (done) done(rdInternalError);
      return;
    }
    done_ = true;
    if (eager_) {
      if (!eager_->empty()) std::memcpy(dst, eager_->data(), eager_->size());
      if (done) done(rdSuccess);
      return;
    }
    if (!rndv_) {
      if (done) done(rdSuccess);
      return;
    }
    // Fetched later, on the progress thread, as a UCX rendezvous is.
    auto rndv = rndv_;
    engine_->post([rndv, dst, done = std::move(done)] { fetch(rndv, dst, done); });
  }

  void discard() override {
    if (done_) return;
    done_ = true;
    if (rndv_) finishSend(rndv_, rdSuccess);
  }

 private:
  static void fetch(const std::shared_ptr<Rendezvous>& r, void* dst, const Completion& done) {
    bool ok = false;
    {
      std::lock_guard<std::mutex> lock(r->mu);
      if (!r->sender_gone && !r->finished) {
        if (r->len != 0) std::memcpy(dst, r->src, r->len);
        r->finished = true;
        ok = true;
      }
    }
    if (ok) Rendezvous::completeSend(r, rdSuccess);
    if (done) done(ok ? rdSuccess : rdConnectionError);
  }

  static void finishSend(const std::shared_ptr<Rendezvous>& r, rdResult_t status) {
    if (r->finish()) Rendezvous::completeSend(r, status);
  }

  std::shared_ptr<const std::string> eager_;
  std::shared_ptr<Rendezvous> rndv_;
  std::shared_ptr<ProgressEngine> engine_;
  bool done_ = false;
};

}  // namespace

LoopbackTransport::LoopbackTransport(std::shared_ptr<ProgressEngine> engine, Options options,
                                     Handlers handlers)
    : Transport(std::move(engine)), options_(std::move(options)), handlers_(std::move(handlers)) {}

LoopbackTransport::~LoopbackTransport() {
  stop();
}

rdResult_t LoopbackTransport::start() {
  return runSync([this] {
    id_ = Network::get().add(this, &name_);
    engine_->addSource(this);
    started_ = true;
    return rdSuccess;
  });
}

void LoopbackTransport::stop() {
  runSync([this] {
    if (!started_ || stopped_) return rdSuccess;
    stopped_ = true;
    engine_->removeSource(this);
    Network& net = Network::get();
    net.forgetRendezvous(id_);
    for (auto& [id, conn] : conns_) {
      net.breakLink(conn.link, 1 - conn.side, "connection to " + name_ + " failed: closed by peer");
    }
    conns_.clear();
    net.remove(id_);
    return rdSuccess;
  });
}

ConnId LoopbackTransport::addConn(std::shared_ptr<Link> link, int side, std::string peer) {
  ConnId id = next_conn_++;
  link->conn[side] = id;
  Network::get().track(id_, link);
  conns_[id] = Conn{std::move(link), side, std::move(peer)};
  return id;
}

rdResult_t LoopbackTransport::listen(const std::string& host, uint16_t port, std::string* address) {
  RD_CHECK(Network::get().bind(id_, host.empty() ? "0.0.0.0" : host, port, address));
  if (name_.rfind("loopback-", 0) == 0) name_ = *address;
  return rdSuccess;
}

rdResult_t LoopbackTransport::connect(const std::string& address, ConnId* conn, Lane /*lane*/) {
  std::string host;
  uint16_t port = 0;
  RD_CHECK(splitAddress(address, &host, &port));
  Network& net = Network::get();
  auto link = std::make_shared<Link>();
  link->transport[0] = id_;
  link->transport[1] = net.listener(address);
  *conn = addConn(link, 0, address);
  if (link->transport[1] == 0) {
    // As UCX: the connect returns, the failure comes later.
    link->transport[1] = id_;
    link->broken = true;
    ConnId id = *conn;
    engine_->post([this, id, address] {
      auto it = conns_.find(id);
      if (it == conns_.end()) return;
      conns_.erase(it);
      if (handlers_.on_failure) {
        handlers_.on_failure(id, rdConnectionError,
                             "connection to " + address + " failed: Connection refused");
      }
    });
    return rdSuccess;
  }
  net.track(link->transport[1], link);
  Delivery accept;
  accept.kind = Delivery::kAccept;
  accept.link = link;
  accept.to = 1;
  net.deliver(std::move(accept));
  return rdSuccess;
}

void LoopbackTransport::arrive(const Delivery& d) {
  if (stopped_) return;
  const int side = d.to;
  if (d.link->conn[side] == 0 && d.kind != Delivery::kClose) {
    // The peer's connection: accepted with its first arrival.
    ConnId id = addConn(d.link, side, Network::get().nameOf(d.link->transport[1 - side]));
    if (handlers_.on_accept) handlers_.on_accept(id, conns_[id].peer);
  }
  ConnId id = d.link->conn[side];
  auto it = conns_.find(id);
  if (it == conns_.end()) return;  // closed here meanwhile
  if (d.kind == Delivery::kAccept) return;
  if (d.kind == Delivery::kClose) {
    conns_.erase(it);
    if (handlers_.on_failure) handlers_.on_failure(id, rdConnectionError, d.reason);
    return;
  }
  if (!handlers_.on_message) return;
  Payload payload(std::make_unique<LoopbackPayload>(d.eager, d.rendezvous, engine_));
  handlers_.on_message(id, d.header.data(), d.header.size(), std::move(payload));
}

void LoopbackTransport::send(ConnId conn, const void* header, size_t header_len,
                             const void* payload, size_t payload_len, Completion done,
                             MemRegion /*region*/) {
  Network& net = Network::get();
  auto it = conns_.find(conn);
  if (stopped_ || it == conns_.end() || it->second.link->broken) {
    if (done) done(rdConnectionError);
    return;
  }
  if (net.isDead(id_)) return;  // a dead process sends nothing and hears nothing back
  Delivery d;
  d.kind = Delivery::kMessage;
  d.link = it->second.link;
  d.to = 1 - it->second.side;
  d.header.assign(static_cast<const char*>(header), header_len);
  if (payload_len <= net.eagerLimit()) {
    d.eager = std::make_shared<const std::string>(static_cast<const char*>(payload), payload_len);
    net.send(std::move(d), payload_len);
    if (done) done(rdSuccess);  // copied: the buffer is free again, as a UCX eager send
    return;
  }
  auto r = std::make_shared<Rendezvous>();
  r->src = payload;
  r->len = payload_len;
  r->done = std::move(done);
  r->sender_engine = engine_;
  net.trackRendezvous(id_, r);
  d.rendezvous = r;
  net.send(std::move(d), payload_len);
}

void LoopbackTransport::close(ConnId conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  std::shared_ptr<Link> link = it->second.link;
  int peer = 1 - it->second.side;
  conns_.erase(it);
  if (!link->broken) {
    Network::get().breakLink(link, peer, "connection to " + name_ + " failed: closed by peer");
  }
}

std::string LoopbackTransport::peerName(ConnId conn) const {
  auto it = conns_.find(conn);
  return it == conns_.end() ? std::string() : it->second.peer;
}

std::string LoopbackTransport::linkTransports(ConnId conn) const {
  return conns_.count(conn) != 0 ? "loopback" : "";
}

rdResult_t LoopbackTransport::registerMemory(void* ptr, size_t /*len*/, MemRegion* region) {
  *region = ptr;  // nothing to register in one address space
  return rdSuccess;
}

void LoopbackTransport::deregisterMemory(MemRegion /*region*/) {}

void LoopbackTransport::onTick(Clock::time_point /*now*/) {
  // A frozen or dead process runs no timers.
  if (handlers_.on_tick && !Network::get().isFrozen(id_)) handlers_.on_tick();
}

rdResult_t createLoopbackTransport(std::shared_ptr<ProgressEngine> engine, const Options& options,
                                   Handlers handlers, std::unique_ptr<Transport>* out) {
  auto t = std::make_unique<LoopbackTransport>(std::move(engine), options, std::move(handlers));
  RD_CHECK(t->start());
  *out = std::move(t);
  return rdSuccess;
}

}  // namespace rd::transport::loopback
