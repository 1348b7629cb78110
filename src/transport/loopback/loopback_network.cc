// SPDX-License-Identifier: BSD-3-Clause
#include "transport/loopback/loopback_network.h"

#include <algorithm>

#include "common/status.h"
#include "transport/loopback/loopback_transport.h"

namespace rd::transport::loopback {

Network& Network::get() {
  static Network* network = new Network;  // lives until exit: engines may still deliver
  return *network;
}

uint64_t Network::add(LoopbackTransport* t, std::string* name) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = next_id_++;
  transports_[id] = t;
  *name = "loopback-" + std::to_string(id);
  names_[id] = *name;
  return id;
}

void Network::remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  transports_.erase(id);
  for (auto it = listeners_.begin(); it != listeners_.end();) {
    it = it->second == id ? listeners_.erase(it) : std::next(it);
  }
  links_.erase(id);
  frozen_.erase(id);
}

rdResult_t Network::bind(uint64_t id, const std::string& host, uint16_t port,
                         std::string* address) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string at;
  if (port == 0) {
    do {
      at = host + ":" + std::to_string(next_port_++);
    } while (listeners_.count(at) != 0);
  } else {
    at = host + ":" + std::to_string(port);
    if (listeners_.count(at) != 0) {
      return setErrorf(rdConnectionError, "cannot listen on %s: address in use", at.c_str());
    }
  }
  listeners_[at] = id;
  if (names_[id].rfind("loopback-", 0) == 0) names_[id] = at;  // named by its first address
  *address = at;
  return rdSuccess;
}

uint64_t Network::listener(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = listeners_.find(address);
  return it == listeners_.end() || dead_.count(it->second) != 0 ? 0 : it->second;
}

bool Network::isDead(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return dead_.count(id) != 0;
}

std::string Network::nameOf(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = names_.find(id);
  return it == names_.end() ? std::string() : it->second;
}

bool Network::isFrozen(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return frozen_.count(id) != 0 || dead_.count(id) != 0;
}

void Network::track(uint64_t id, const std::shared_ptr<Link>& link) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& list = links_[id];
  list.erase(std::remove_if(list.begin(), list.end(), [](const auto& w) { return w.expired(); }),
             list.end());
  list.push_back(link);
}

void Network::trackRendezvous(uint64_t sender, const std::shared_ptr<Rendezvous>& r) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& list = rendezvous_[sender];
  list.erase(std::remove_if(list.begin(), list.end(), [](const auto& w) { return w.expired(); }),
             list.end());
  list.push_back(r);
}

void Network::forgetRendezvous(uint64_t sender) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& weak : rendezvous_[sender]) {
    if (auto r = weak.lock()) r->senderGone();
  }
  rendezvous_.erase(sender);
}

size_t Network::eagerLimit() {
  std::lock_guard<std::mutex> lock(mu_);
  return faults_.eager_limit;
}

void Network::send(Delivery d, size_t payload_len) {
  std::lock_guard<std::mutex> lock(mu_);
  const int from = 1 - d.to;
  Fate fate;
  if (filter_) {
    MessageView view{names_[d.link->transport[from]], names_[d.link->transport[d.to]],
                     d.header.data(), d.header.size(), payload_len};
    fate = filter_(view);
  }
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  if (fate.kind == Fate::kDeliver && faults_.drop > 0 && uniform(rng_) < faults_.drop) {
    fate.kind = Fate::kDrop;
  }
  if (fate.kind == Fate::kDeliver && faults_.duplicate > 0 && uniform(rng_) < faults_.duplicate) {
    fate.kind = Fate::kDuplicate;
  }
  if (fate.kind == Fate::kDeliver && faults_.corrupt > 0 && uniform(rng_) < faults_.corrupt) {
    fate.kind = Fate::kCorrupt;
    fate.corrupt_at = static_cast<size_t>(rng_());
  }
  if (fate.kind == Fate::kCorrupt && !d.header.empty()) {
    d.header[fate.corrupt_at % d.header.size()] ^= static_cast<char>(0x5a);
  }
  if (faults_.max_delay.count() > 0) {
    std::uniform_int_distribution<int64_t> jitter(0, faults_.max_delay.count());
    fate.delay += std::chrono::microseconds(jitter(rng_));
  }
  count(fate);
  if (fate.kind == Fate::kDrop) {
    // Lost on the way: for the sender it left; its buffer is free again.
    if (d.rendezvous && d.rendezvous->finish()) Rendezvous::completeSend(d.rendezvous, rdSuccess);
    return;
  }
  Clock::time_point at = Clock::now() + fate.delay;
  if (fate.kind == Fate::kDuplicate) {
    Delivery copy = d;
    if (copy.rendezvous) {  // the copy carries its own bytes: the original may be fetched first
      std::lock_guard<std::mutex> held(copy.rendezvous->mu);
      copy.eager = std::make_shared<const std::string>(
          static_cast<const char*>(copy.rendezvous->src), copy.rendezvous->len);
      copy.rendezvous.reset();
    }
    dispatchLocked(std::move(copy), at);
  }
  dispatchLocked(std::move(d), at);
}

void Network::deliver(Delivery d) {
  std::lock_guard<std::mutex> lock(mu_);
  dispatchLocked(std::move(d), Clock::now());
}

void Network::dispatchLocked(Delivery d, Clock::time_point at) {
  auto target = transports_.find(d.link->transport[d.to]);
  if (target == transports_.end()) {
    // Nobody there any more: a large payload is not going to be fetched.
    if (d.rendezvous && d.rendezvous->finish()) {
      Rendezvous::completeSend(d.rendezvous, rdConnectionError);
    }
    return;
  }
  Clock::time_point& last = d.link->last_arrival[d.to];
  if (faults_.keep_order || d.kind != Delivery::kMessage) at = std::max(at, last);
  last = std::max(last, at);
  auto delay = std::chrono::duration_cast<std::chrono::microseconds>(at - Clock::now());
  std::shared_ptr<ProgressEngine> engine = target->second->engineRef();
  engine->postAfter(std::max(delay, std::chrono::microseconds(0)),
                    [this, d = std::move(d)]() mutable { arrive(std::move(d)); });
}

void Network::arrive(Delivery d) {
  LoopbackTransport* target = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t to = d.link->transport[d.to];
    uint64_t from = d.link->transport[1 - d.to];
    if (frozen_.count(to) != 0 || (frozen_.count(from) != 0 && d.kind == Delivery::kMessage)) {
      parked_.push_back(std::move(d));
      return;
    }
    auto it = transports_.find(to);
    if (it == transports_.end() || dead_.count(to) != 0) return;
    target = it->second;
    ++delivered;
  }
  // On the receiver's engine thread: it cannot stop while this runs.
  target->arrive(d);
}

void Network::breakLink(const std::shared_ptr<Link>& link, int to, const std::string& reason) {
  Delivery d;
  d.kind = Delivery::kClose;
  d.link = link;
  d.to = to;
  d.reason = reason;
  std::lock_guard<std::mutex> lock(mu_);
  link->broken = true;
  dispatchLocked(std::move(d), Clock::now());
}

void Network::count(const Fate& fate) {
  injected_.dropped += fate.kind == Fate::kDrop ? 1 : 0;
  injected_.duplicated += fate.kind == Fate::kDuplicate ? 1 : 0;
  injected_.corrupted += fate.kind == Fate::kCorrupt ? 1 : 0;
  injected_.delayed += fate.delay.count() > 0 ? 1 : 0;
}

FaultCounts Network::injectedCounts() {
  std::lock_guard<std::mutex> lock(mu_);
  return injected_;
}

void Network::setFaults(const Faults& f) {
  std::lock_guard<std::mutex> lock(mu_);
  faults_ = f;
  rng_.seed(f.seed);
}

void Network::setFilter(Filter f) {
  std::lock_guard<std::mutex> lock(mu_);
  filter_ = std::move(f);
}

void Network::reset() {
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> lock(mu_);
    faults_ = Faults{};
    filter_ = nullptr;
    for (uint64_t id : frozen_) names.push_back(names_[id]);
  }
  for (const auto& n : names) freeze(n, false);
}

uint64_t Network::byName(const std::string& name) {
  for (const auto& [id, n] : names_) {
    if (n == name && transports_.count(id) != 0) return id;
  }
  return 0;
}

void Network::freeze(const std::string& name, bool frozen) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = byName(name);
  if (id == 0) return;
  if (frozen) {
    frozen_.insert(id);
    return;
  }
  frozen_.erase(id);
  // What waited for it goes on, in the order it arrived.
  std::vector<Delivery> parked = std::move(parked_);
  parked_.clear();
  for (auto& d : parked) dispatchLocked(std::move(d), Clock::now());
}

void Network::kill(const std::string& name) {
  std::vector<std::pair<std::shared_ptr<Link>, int>> broken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t id = byName(name);
    if (id == 0) return;
    dead_.insert(id);
    frozen_.erase(id);
    for (auto& weak : links_[id]) {
      auto link = weak.lock();
      if (!link || link->broken) continue;
      link->broken = true;
      broken.emplace_back(link, link->transport[0] == id ? 1 : 0);
    }
    for (auto& weak : rendezvous_[id]) {
      if (auto r = weak.lock()) r->senderGone();
    }
  }
  for (auto& [link, peer_side] : broken) {
    Delivery d;
    d.kind = Delivery::kClose;
    d.link = link;
    d.to = peer_side;
    d.reason = "connection to " + name + " failed: peer died";
    std::lock_guard<std::mutex> lock(mu_);
    dispatchLocked(std::move(d), Clock::now());
  }
}

// --- Fabric: the test-facing controls -----------------------------------------------------

void Fabric::setFaults(const Faults& faults) {
  Network::get().setFaults(faults);
}

void Fabric::setFilter(Filter filter) {
  Network::get().setFilter(std::move(filter));
}

void Fabric::reset() {
  Network::get().reset();
}

void Fabric::freeze(const std::string& name) {
  Network::get().freeze(name, true);
}

void Fabric::thaw(const std::string& name) {
  Network::get().freeze(name, false);
}

void Fabric::kill(const std::string& name) {
  Network::get().kill(name);
}

uint64_t Fabric::delivered() {
  return Network::get().delivered.load();
}

FaultCounts Fabric::injected() {
  return Network::get().injectedCounts();
}

}  // namespace rd::transport::loopback
