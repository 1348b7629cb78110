// SPDX-License-Identifier: BSD-3-Clause
// The bootstrap over real TCP on 127.0.0.1, driven by a private progress engine: a connector
// and a listener complete; a wrong secret fails fast on both sides; idle connections held open
// past the pending cap cannot lock a real peer out; a silent connection is dropped at its
// deadline; an unreachable address is reported with its address.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/bootstrap/bootstrap.h"
#include "transport/transport.h"

namespace rd::transport::bootstrap {
namespace {

using namespace std::chrono_literals;

struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Endpoint> accepted;
  std::vector<Endpoint> connected;
  std::vector<std::pair<rdResult_t, std::string>> failed;
};

class Side {
 public:
  Side(std::shared_ptr<ProgressEngine> engine, const std::string& secret, const std::string& addr,
       Clock::duration timeout = 10s, size_t max_pending = 256)
      : engine_(std::move(engine)), worker_address_(addr) {
    Config config{"test-" + addr, secret, addr, timeout, max_pending, "", 0};
    Callbacks cb;
    cb.new_tag = [this] { return ++tags_; };
    cb.accepted = [this](uint64_t, const Endpoint& peer, const std::string&) {
      record([&] { seen.accepted.push_back(peer); });
    };
    cb.connected = [this](uint64_t, const Endpoint& peer) {
      record([&] { seen.connected.push_back(peer); });
    };
    cb.connect_failed = [this](uint64_t, rdResult_t st, const std::string& why) {
      record([&] { seen.failed.emplace_back(st, why); });
    };
    bootstrap_ = std::make_unique<Bootstrap>(config, cb);
    EXPECT_EQ(engine_->runSync([&] {
      rdResult_t st = bootstrap_->start();
      if (st == rdSuccess) engine_->addSource(bootstrap_.get());
      return st;
    }),
              rdSuccess);
  }
  ~Side() {
    engine_->runSync([&] {
      engine_->removeSource(bootstrap_.get());
      bootstrap_.reset();
      return rdSuccess;
    });
  }

  std::string listen() {
    std::string address;
    EXPECT_EQ(engine_->runSync([&] { return bootstrap_->listen("127.0.0.1", 0, &address); }),
              rdSuccess);
    return address;
  }
  void connect(const std::string& address, uint64_t conn) {
    EXPECT_EQ(engine_->runSync(
                  [&] { return bootstrap_->connect(conn, 100 + conn, address, worker_address_); }),
              rdSuccess);
  }
  uint64_t refusals() {
    uint64_t n = 0;
    engine_->runSync([&] {
      n = bootstrap_->refusals();
      return rdSuccess;
    });
    return n;
  }
  template <typename Pred>
  bool waitFor(Pred pred, std::chrono::milliseconds limit = 10s) {
    std::unique_lock<std::mutex> lock(seen.mu);
    return seen.cv.wait_for(lock, limit, [&] { return pred(seen); });
  }

  Seen seen;

 private:
  template <typename F>
  void record(F f) {
    std::lock_guard<std::mutex> lock(seen.mu);
    f();
    seen.cv.notify_all();
  }
  std::shared_ptr<ProgressEngine> engine_;
  std::string worker_address_;  // what this side hands out, as a connector too
  std::unique_ptr<Bootstrap> bootstrap_;
  uint64_t tags_ = 0;
};

int rawConnect(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  EXPECT_EQ(splitAddress(address, &host, &port), rdSuccess);
  sockaddr_in addr{};
  EXPECT_EQ(resolveIpv4(host, port, &addr), rdSuccess);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

// True once the peer closed @p fd (read returns 0 or a reset), within @p limit.
bool closedByPeer(int fd, std::chrono::milliseconds limit) {
  timeval tv{static_cast<time_t>(limit.count() / 1000),
             static_cast<suseconds_t>(limit.count() % 1000 * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char byte;
  ssize_t n = ::recv(fd, &byte, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

TEST(BootstrapListener, ConnectorAndListenerCompleteOverTcp) {
  auto engine = ProgressEngine::create(0);
  Side listener(engine, "s", "listener-worker");
  Side connector(engine, "s", "connector-worker");
  connector.connect(listener.listen(), 1);
  ASSERT_TRUE(listener.waitFor([](Seen& s) { return s.accepted.size() == 1; }));
  ASSERT_TRUE(connector.waitFor([](Seen& s) { return s.connected.size() == 1; }));
  EXPECT_EQ(listener.seen.accepted[0].worker_address, "connector-worker");
  EXPECT_EQ(listener.seen.accepted[0].tag, 101u);
  EXPECT_EQ(connector.seen.connected[0].worker_address, "listener-worker");
  EXPECT_EQ(listener.refusals(), 0u);
}

TEST(BootstrapListener, WrongSecretFailsTheConnectorAndIsCountedByTheListener) {
  auto engine = ProgressEngine::create(0);
  Side listener(engine, "right", "listener-worker");
  Side connector(engine, "wrong", "connector-worker");
  connector.connect(listener.listen(), 1);
  ASSERT_TRUE(connector.waitFor([](Seen& s) { return !s.failed.empty(); }));
  EXPECT_EQ(connector.seen.failed[0].first, rdAuthFailed);
  EXPECT_NE(connector.seen.failed[0].second.find("authentication failed"), std::string::npos);
  EXPECT_TRUE(listener.seen.accepted.empty());
  for (int i = 0; i < 100 && listener.refusals() == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(listener.refusals(), 1u);
}

TEST(BootstrapListener, IdleConnectionsPastTheCapCannotLockOutARealPeer) {
  auto engine = ProgressEngine::create(0);
  Side listener(engine, "s", "listener-worker", 30s, 4);
  std::string address = listener.listen();
  std::vector<int> idle;
  for (int i = 0; i < 10; ++i) idle.push_back(rawConnect(address));
  // The oldest six were dropped to make room for the newest four.
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(closedByPeer(idle[i], 10s)) << "idle connection " << i;
  Side connector(engine, "s", "connector-worker");
  connector.connect(address, 1);
  EXPECT_TRUE(listener.waitFor([](Seen& s) { return s.accepted.size() == 1; }));
  for (int fd : idle) ::close(fd);
}

TEST(BootstrapListener, SilentConnectionIsDroppedAtTheDeadline) {
  auto engine = ProgressEngine::create(0);
  Side listener(engine, "s", "listener-worker", 300ms);
  int fd = rawConnect(listener.listen());
  EXPECT_TRUE(closedByPeer(fd, 10s));
  ::close(fd);
  EXPECT_EQ(listener.refusals(), 1u);
}

TEST(BootstrapListener, UnreachableAddressIsReportedWithIt) {
  auto engine = ProgressEngine::create(0);
  Side connector(engine, "s", "connector-worker");
  connector.connect("127.0.0.1:9", 1);
  ASSERT_TRUE(connector.waitFor([](Seen& s) { return !s.failed.empty(); }));
  EXPECT_EQ(connector.seen.failed[0].first, rdConnectionError);
  EXPECT_NE(connector.seen.failed[0].second.find("127.0.0.1:9"), std::string::npos);
}

}  // namespace
}  // namespace rd::transport::bootstrap
