// SPDX-License-Identifier: BSD-3-Clause
// The bootstrap: libreduce's own TCP listeners and outgoing handshakes, which a transport puts
// in front of UCX. Every connection runs the handshake (handshake.h) within a deadline; only a
// peer that proved the secret gets this side's worker address and tag. A listener holds at most
// max_pending connections that have not authenticated yet (the oldest goes when a new one comes,
// so held-open idle connections cannot lock out a real peer), and logs refusals once per peer
// address (refusal_log.h).
//
// An event source of the progress engine: one epoll fd over every socket, no thread of its own.
#pragma once

#include <sys/socket.h>

#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/bootstrap/handshake.h"
#include "transport/bootstrap/refusal_log.h"
#include "transport/progress_engine.h"

namespace rd::transport::bootstrap {

struct Config {
  std::string name;            // for logs
  std::string secret;          // both sides prove it
  std::string worker_address;  // what peers that authenticated on a listener get
  Clock::duration timeout = std::chrono::seconds(10);  // for a whole handshake
  size_t max_pending = 256;  // unauthenticated connections a listener holds
  std::string pool_secret;   // listeners of a shared reducer pool: key by the scope named
  uint64_t scope = 0;        // the communicator this side's connections name (0: none)
};

struct Callbacks {
  /** A fresh random tag no live connection of the owner uses. */
  std::function<uint64_t()> new_tag;
  /** A peer authenticated on one of our listeners; @p tag is the one we gave it. */
  std::function<void(uint64_t tag, const Endpoint& peer, const std::string& peer_name)> accepted;
  /** connect(@p conn) authenticated the listener. */
  std::function<void(uint64_t conn, const Endpoint& peer)> connected;
  /** connect(@p conn) failed: refused, unreachable, timed out, or a wrong proof. */
  std::function<void(uint64_t conn, rdResult_t status, const std::string& why)> connect_failed;
};

class Bootstrap final : public EventSource {
 public:
  Bootstrap(Config config, Callbacks callbacks);
  ~Bootstrap() override;
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  /** Makes the epoll fd; call before any other method. */
  rdResult_t start();

  /** Listens on @p host : @p port (0: any free port); @p address gets "host:port". */
  rdResult_t listen(const std::string& host, uint16_t port, std::string* address);

  /**
   * Starts a handshake with the listener at "host:port" for the owner's connection @p conn,
   * giving it @p tag and, once it proved the secret, @p worker_address; connected or
   * connect_failed follows (never inline).
   */
  rdResult_t connect(uint64_t conn, uint64_t tag, const std::string& address,
                     const std::string& worker_address);

  /** Drops the handshake of @p conn, if one is running; no callback follows. */
  void cancel(uint64_t conn);

  /** Refusals so far. */
  uint64_t refusals() const { return refusals_.total(); }

  int eventFd() const override { return epoll_fd_; }
  bool levelTriggered() const override { return true; }  // its epoll set is level-triggered
  bool progress() override;
  void onTick(Clock::time_point now) override;

 private:
  struct Pending {
    int fd = -1;
    bool outgoing = false;
    bool connecting = false;   // outgoing: the TCP connect is still running
    bool handed_over = false;  // incoming: authenticated, flushing the welcome
    uint64_t conn = 0;         // outgoing: the owner's connection
    uint64_t tag = 0;          // the tag we give the peer
    std::string peer;          // "host:port"
    std::string peer_host;     // for the refusal log
    std::unique_ptr<Handshake> handshake;
    std::string out;  // bytes not written yet
    Clock::time_point deadline;
    std::list<int>::iterator age;  // incoming: place in arrival order
    uint32_t serial = 0;           // never 0 (listeners' mark)
  };

  void onListenReady(int listen_fd);
  void acceptOne(int fd, const std::string& peer, const std::string& host);
  bool stillPending(int fd, uint32_t serial) const;
  void onConnReady(Pending& p, uint32_t events);
  void finishConnect(Pending& p);
  void readFrom(Pending& p);
  void flush(Pending& p);
  void afterIo(Pending& p);
  void watch(int fd, uint32_t events, uint32_t serial);
  void fail(Pending& p, rdResult_t status, const std::string& why);
  void drop(int fd);
  uint32_t nextSerial() { return ++serial_ == 0 ? ++serial_ : serial_; }

  Config config_;
  Callbacks callbacks_;
  RefusalLog refusals_;
  int epoll_fd_ = -1;
  std::vector<int> listen_fds_;
  bool accept_paused_ = false;  // out of fds: listeners wait for the next tick
  std::unordered_map<int, std::unique_ptr<Pending>> pending_;  // by fd
  std::unordered_map<uint64_t, int> outgoing_;                 // conn -> fd
  std::list<int> incoming_by_age_;                             // oldest first
  uint32_t serial_ = 0;
};

/** "ip:port" of @p addr (IPv4), "?" for other families. */
std::string formatAddress(const sockaddr_storage& addr);

}  // namespace rd::transport::bootstrap
