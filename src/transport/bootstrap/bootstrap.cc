// SPDX-License-Identifier: BSD-3-Clause
#include "transport/bootstrap/bootstrap.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/check.h"
#include "common/log.h"
#include "common/status.h"
#include "transport/transport.h"

namespace rd::transport::bootstrap {

namespace {

constexpr int kMaxEvents = 64;
constexpr int kAcceptsPerTurn = 64;  // then other sockets get their turn
constexpr size_t kReadChunk = 16 << 10;

std::string hostOf(const std::string& peer) {
  return peer.substr(0, peer.rfind(':'));
}

}  // namespace

std::string formatAddress(const sockaddr_storage& addr) {
  if (addr.ss_family != AF_INET) return "?";
  const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(in->sin_port));
}

Bootstrap::Bootstrap(Config config, Callbacks callbacks)
    : config_(std::move(config)), callbacks_(std::move(callbacks)), refusals_(config_.name) {}

Bootstrap::~Bootstrap() {
  for (auto& [fd, p] : pending_) ::close(fd);
  for (int fd : listen_fds_) ::close(fd);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

rdResult_t Bootstrap::start() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return setErrorf(rdSystemError, "epoll_create1: %s", std::strerror(errno));
  return rdSuccess;
}

void Bootstrap::watch(int fd, uint32_t events, uint32_t serial) {
  epoll_event ev{};
  ev.events = events;
  // The serial tells a socket from a later one that got the same fd number while the batch of
  // events that named the first was being handled.
  ev.data.u64 = static_cast<uint64_t>(serial) << 32 | static_cast<uint32_t>(fd);
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0)
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
}

rdResult_t Bootstrap::listen(const std::string& host, uint16_t port, std::string* address) {
  sockaddr_in addr{};
  RD_CHECK(resolveIpv4(host, port, &addr));
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return setErrorf(rdSystemError, "socket: %s", std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, SOMAXCONN) != 0) {
    int err = errno;
    ::close(fd);
    return setErrorf(rdConnectionError, "cannot listen on %s:%u: %s", host.c_str(), port,
                     std::strerror(err));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  listen_fds_.push_back(fd);
  watch(fd, EPOLLIN, 0);
  *address = formatAddress(bound);
  return rdSuccess;
}

rdResult_t Bootstrap::connect(uint64_t conn, uint64_t tag, const std::string& address,
                              const std::string& worker_address) {
  std::string host;
  uint16_t port = 0;
  RD_CHECK(splitAddress(address, &host, &port));
  sockaddr_in addr{};
  RD_CHECK(resolveIpv4(host, port, &addr));
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return setErrorf(rdSystemError, "socket: %s", std::strerror(errno));
  auto p = std::make_unique<Pending>();
  p->fd = fd;
  p->outgoing = true;
  p->conn = conn;
  p->tag = tag;
  p->peer = address;
  p->handshake = std::make_unique<Handshake>(Handshake::Side::kConnector, config_.secret,
                                             Endpoint{tag, worker_address, config_.scope});
  p->out = p->handshake->takeOutput();
  p->deadline = Clock::now() + config_.timeout;
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  // Even an immediate result is reported from progress(), as connect's contract says.
  p->connecting = rc != 0 && errno == EINPROGRESS;
  if (rc != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return setErrorf(rdConnectionError, "cannot connect to %s: %s", address.c_str(),
                     std::strerror(errno));
  }
  p->serial = nextSerial();
  watch(fd, EPOLLOUT, p->serial);
  outgoing_[conn] = fd;
  pending_[fd] = std::move(p);
  return rdSuccess;
}

void Bootstrap::cancel(uint64_t conn) {
  auto it = outgoing_.find(conn);
  if (it != outgoing_.end()) drop(it->second);
}

void Bootstrap::drop(int fd) {
  auto it = pending_.find(fd);
  if (it == pending_.end()) return;
  Pending& p = *it->second;
  if (p.outgoing) {
    outgoing_.erase(p.conn);
  } else {
    incoming_by_age_.erase(p.age);
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  pending_.erase(it);
}

void Bootstrap::fail(Pending& p, rdResult_t status, const std::string& why) {
  // Best effort: a refused peer learns why (a wrong proof) if its socket takes it now.
  if (!p.out.empty()) (void)::send(p.fd, p.out.data(), p.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (p.outgoing) {
    uint64_t conn = p.conn;
    std::string message = p.peer + ": " + why;
    drop(p.fd);
    if (callbacks_.connect_failed) callbacks_.connect_failed(conn, status, message);
    return;
  }
  if (!p.handed_over) refusals_.refused(p.peer_host, why, Clock::now());
  drop(p.fd);
}

bool Bootstrap::progress() {
  epoll_event events[kMaxEvents];
  int n = epoll_wait(epoll_fd_, events, kMaxEvents, 0);
  for (int i = 0; i < n; ++i) {
    int fd = static_cast<int>(events[i].data.u64 & 0xffffffffu);
    auto serial = static_cast<uint32_t>(events[i].data.u64 >> 32);
    if (serial == 0) {
      onListenReady(fd);
      continue;
    }
    auto it = pending_.find(fd);
    if (it != pending_.end() && it->second->serial == serial) {
      onConnReady(*it->second, events[i].events);
    }
  }
  return n > 0;
}

void Bootstrap::onListenReady(int listen_fd) {
  for (int i = 0; i < kAcceptsPerTurn; ++i) {
    sockaddr_storage from{};
    socklen_t len = sizeof from;
    int fd =
        accept4(listen_fd, reinterpret_cast<sockaddr*>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      std::string peer = formatAddress(from);
      acceptOne(fd, peer, hostOf(peer));
      continue;
    }
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      // Out of fds: the listen socket stays readable, so stop watching it until the next
      // tick instead of spinning on it.
      RD_LOG_WARN("%s: cannot accept: %s (pausing accepts for a moment)", config_.name.c_str(),
                  std::strerror(errno));
      accept_paused_ = true;
      for (int l : listen_fds_) watch(l, 0, 0);
    }
    return;  // EAGAIN, or a connection that was reset before we took it
  }
}

void Bootstrap::acceptOne(int fd, const std::string& peer, const std::string& host) {
  if (incoming_by_age_.size() >= config_.max_pending) {
    // The oldest unauthenticated connection makes room: an idle one held open for a slot
    // is the likeliest to be hostile, and a real peer's handshake takes milliseconds.
    auto oldest = pending_.find(incoming_by_age_.front());
    if (oldest != pending_.end()) {
      fail(*oldest->second, rdConnectionError,
           "too many connections that have not authenticated (the oldest is dropped)");
    }
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto p = std::make_unique<Pending>();
  p->fd = fd;
  p->tag = callbacks_.new_tag();
  p->peer = peer;
  p->peer_host = host;
  p->handshake = std::make_unique<Handshake>(Handshake::Side::kListener,
                                             Keys{config_.secret, config_.pool_secret},
                                             Endpoint{p->tag, config_.worker_address, 0});
  p->deadline = Clock::now() + config_.timeout;
  p->age = incoming_by_age_.insert(incoming_by_age_.end(), fd);
  p->serial = nextSerial();
  watch(fd, EPOLLIN, p->serial);
  pending_[fd] = std::move(p);
}

bool Bootstrap::stillPending(int fd, uint32_t serial) const {
  auto it = pending_.find(fd);
  return it != pending_.end() && it->second->serial == serial;
}

void Bootstrap::onConnReady(Pending& p, uint32_t events) {
  if (p.connecting) {
    finishConnect(p);
    return;
  }
  // Each step may end the connection (failed or handed over), which frees p.
  const int fd = p.fd;
  const uint32_t serial = p.serial;
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    readFrom(p);
    if (!stillPending(fd, serial)) return;
  }
  if (events & EPOLLOUT) flush(p);
  if (stillPending(fd, serial)) afterIo(p);
}

void Bootstrap::finishConnect(Pending& p) {
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    fail(p, rdConnectionError, std::string("cannot connect: ") + std::strerror(err));
    return;
  }
  p.connecting = false;
  int one = 1;
  setsockopt(p.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const int fd = p.fd;
  const uint32_t serial = p.serial;
  flush(p);  // may fail, which frees p
  if (stillPending(fd, serial)) afterIo(p);
}

void Bootstrap::readFrom(Pending& p) {
  char buf[kReadChunk];
  ssize_t n = ::recv(p.fd, buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    const char* why = n == 0 ? "closed by the peer during the handshake"
                             : "connection reset during the handshake";
    if (p.outgoing && p.handshake->status() == Handshake::Status::kRunning &&
        p.handshake->buffered() == 0 && n == 0) {
      why =
          "closed by the listener during the handshake (not a libreduce listener, or it "
          "refused us)";
    }
    fail(p, rdConnectionError, why);
    return;
  }
  Handshake::Status st = p.handshake->consume(buf, static_cast<size_t>(n));
  p.out += p.handshake->takeOutput();
  if (st == Handshake::Status::kFailed) {
    fail(p, p.handshake->failure(), p.handshake->error());
    return;
  }
  flush(p);
}

void Bootstrap::flush(Pending& p) {
  while (!p.out.empty()) {
    ssize_t n = ::send(p.fd, p.out.data(), p.out.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n < 0) {
      fail(p, rdConnectionError, std::string("send: ") + std::strerror(errno));
      return;
    }
    p.out.erase(0, static_cast<size_t>(n));
  }
}

void Bootstrap::afterIo(Pending& p) {
  if (p.handshake->status() != Handshake::Status::kDone) {
    watch(p.fd, EPOLLIN | (p.out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT)), p.serial);
    return;
  }
  if (p.outgoing) {
    uint64_t conn = p.conn;
    Endpoint peer = p.handshake->peer();
    drop(p.fd);
    if (callbacks_.connected) callbacks_.connected(conn, peer);
    return;
  }
  if (!p.out.empty()) {  // the welcome is still being written
    p.handed_over = true;
    watch(p.fd, EPOLLOUT, p.serial);
    return;
  }
  uint64_t tag = p.tag;
  Endpoint peer = p.handshake->peer();
  std::string name = p.peer;
  drop(p.fd);
  if (callbacks_.accepted) callbacks_.accepted(tag, peer, name);
}

void Bootstrap::onTick(Clock::time_point now) {
  refusals_.onTick(now);
  if (accept_paused_) {
    accept_paused_ = false;
    for (int l : listen_fds_) watch(l, EPOLLIN, 0);
  }
  std::vector<int> late;
  for (auto& [fd, p] : pending_) {
    if (now >= p->deadline) late.push_back(fd);
  }
  for (int fd : late) {
    auto it = pending_.find(fd);
    if (it == pending_.end()) continue;
    Pending& p = *it->second;
    fail(p, rdTimeout,
         p.connecting ? "no TCP connection within the handshake deadline"
                      : "the handshake did not finish within its deadline");
  }
}

}  // namespace rd::transport::bootstrap
