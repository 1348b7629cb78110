// SPDX-License-Identifier: BSD-3-Clause
// The progress engine and the loopback transport on their own: ordering of posted work and
// timers, deferral, retirement, and the transport semantics the protocol relies on (connect
// failures reported later, in-order delivery, rendezvous completing on fetch, a closed or killed
// peer failing the connection after what it sent).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/check.h"
#include "transport/loopback/loopback_fabric.h"
#include "transport/progress_engine.h"
#include "transport/transport.h"

namespace rd::transport {
namespace {

using loopback::Fabric;
using std::chrono::milliseconds;

TEST(ProgressEngine, PostedWorkAndTimersRunInOrderOnItsThread) {
  auto engine = ProgressEngine::create(0);
  std::vector<int> order;
  std::promise<void> done;
  EXPECT_FALSE(engine->onProgressThread());
  engine->postAfter(std::chrono::microseconds(3000), [&] { order.push_back(3); });
  engine->postAfter(std::chrono::microseconds(1000), [&] { order.push_back(2); });
  engine->post([&] {
    EXPECT_TRUE(engine->onProgressThread());
    order.push_back(1);
  });
  engine->postAfter(std::chrono::microseconds(3000), [&] {
    order.push_back(4);  // same time as 3, posted later: after it
    done.set_value();
  });
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

TEST(ProgressEngine, RunSyncReturnsStatusAndError) {
  auto engine = ProgressEngine::create(0);
  EXPECT_EQ(engine->runSync([] { return setError(rdTimeout, "late"); }), rdTimeout);
  EXPECT_EQ(lastError(), "late");
  // From the thread itself it runs inline (no deadlock).
  rdResult_t inner = rdInternalError;
  engine->runSync([&] {
    inner = engine->runSync([] { return rdSuccess; });
    return rdSuccess;
  });
  EXPECT_EQ(inner, rdSuccess);
}

struct CountingSource final : EventSource {
  std::atomic<int> progressed{0};
  std::atomic<int> ticks{0};
  int left = 3;  // finished after this many progress calls
  std::vector<int>* log = nullptr;
  bool progress() override {
    ++progressed;
    if (left > 0) --left;
    return false;
  }
  void onTick(Clock::time_point) override { ++ticks; }
  bool finished() const override { return left == 0; }
  ~CountingSource() override {
    if (log != nullptr) log->push_back(99);
  }
};

TEST(ProgressEngine, SourcesAreTickedAndRetireesDestroyedWhenFinished) {
  auto engine = ProgressEngine::create(0);
  CountingSource source;
  engine->runSync([&] {
    engine->addSource(&source);
    return rdSuccess;
  });
  auto deadline = Clock::now() + std::chrono::seconds(5);
  while (source.ticks < 2 && Clock::now() < deadline) std::this_thread::yield();
  EXPECT_GE(source.ticks.load(), 2);
  engine->runSync([&] {
    engine->removeSource(&source);
    return rdSuccess;
  });
  std::vector<int> log;
  std::promise<void> gone;
  auto retiree = std::make_unique<CountingSource>();
  retiree->log = &log;
  engine->runSync([&] {
    engine->retire(std::move(retiree), Clock::now() + std::chrono::seconds(5));
    return rdSuccess;
  });
  // Its destructor runs on the engine's thread once finished; the engine then sees no source.
  deadline = Clock::now() + std::chrono::seconds(5);
  bool destroyed = false;
  while (!destroyed && Clock::now() < deadline) {
    engine->runSync([&] {
      destroyed = !log.empty();
      return rdSuccess;
    });
  }
  EXPECT_TRUE(destroyed);
}

TEST(ProgressEngine, DeferRunsAfterTheSourcesProgressCall) {
  auto engine = ProgressEngine::create(0);
  struct Deferring final : EventSource {
    ProgressEngine* engine;
    std::vector<std::string> log;
    bool once = true;
    bool progress() override {
      if (!once) return false;
      once = false;
      EXPECT_TRUE(engine->inSourceProgress());
      engine->defer([this] { log.push_back("deferred"); });
      log.push_back("progress");
      return true;
    }
  } source;
  source.engine = engine.get();
  engine->runSync([&] {
    engine->addSource(&source);
    return rdSuccess;
  });
  std::vector<std::string> seen;
  auto deadline = Clock::now() + std::chrono::seconds(5);
  while (seen.size() < 2 && Clock::now() < deadline) {
    engine->runSync([&] {
      seen = source.log;
      return rdSuccess;
    });
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"progress", "deferred"}));
  engine->runSync([&] {
    engine->removeSource(&source);
    return rdSuccess;
  });
}

TEST(ProgressEngine, ReleasedFromItsOwnThreadDoesNotDeadlock) {
  auto engine = ProgressEngine::create(0);
  std::promise<void> ran;
  ProgressEngine* raw = engine.get();
  auto holder = std::make_shared<std::shared_ptr<ProgressEngine>>(std::move(engine));
  raw->post([holder, &ran] {
    holder->reset();  // the last owner, from a callback
    ran.set_value();
  });
  holder.reset();
  EXPECT_EQ(ran.get_future().wait_for(std::chrono::seconds(5)), std::future_status::ready);
}

// At exit every progress thread stops where it is: a retiree that cannot finish within the
// exit's wait is neither finished nor destroyed, nothing posted later runs, a runSync fails at
// once instead of waiting, and the engine's owner can still let it go. In a child process,
// since the halt is process-wide.
void haltedEngineChild() {
  auto require = [](bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "not so: %s\n", what);
    std::exit(1);
  };
  auto engine = ProgressEngine::create(0);
  auto source = std::make_unique<CountingSource>();
  source->left = 1 << 30;  // never finished
  std::vector<int> log;
  source->log = &log;
  require(engine->runSync([&] {
    engine->retire(std::move(source), Clock::now() + std::chrono::hours(1));
    return rdSuccess;
  }) == rdSuccess,
          "retired");
  haltProgressAtExit();
  std::atomic<bool> ran{false};
  engine->post([&] { ran = true; });
  auto start = Clock::now();
  require(engine->runSync([] { return rdSuccess; }) == rdInvalidUsage, "runSync fails");
  require(Clock::now() - start < std::chrono::seconds(1), "at once");
  engine.reset();
  require(!ran, "nothing posted after the halt ran");
  require(log.empty(), "the retiree was left as it was");
  std::fprintf(stderr, "halted cleanly\n");
  std::exit(0);
}

TEST(ProgressEngineDeathTest, HaltedAtExitLeavesWhatCannotFinishAndWaitsForNothingAfter) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(haltedEngineChild(), ::testing::ExitedWithCode(0), "halted cleanly");
}

// A retiree still closing at exit (a communicator destroyed just before it, whose endpoints
// still flush their last messages) finishes and is destroyed before the threads halt.
void closingAtExitChild() {
  struct SlowClose final : EventSource {
    Clock::time_point done_at = Clock::now() + milliseconds(300);
    std::atomic<bool>* destroyed = nullptr;
    bool progress() override { return false; }
    bool finished() const override { return Clock::now() >= done_at; }
    ~SlowClose() override { *destroyed = true; }
  };
  auto engine = ProgressEngine::create(0);
  std::atomic<bool> destroyed{false};
  auto source = std::make_unique<SlowClose>();
  source->destroyed = &destroyed;
  engine->runSync([&] {
    engine->retire(std::move(source), Clock::now() + std::chrono::seconds(30));
    return rdSuccess;
  });
  haltProgressAtExit();
  engine.reset();  // its halted thread is joined
  if (!destroyed) {
    std::fprintf(stderr, "not so: the retiree was still closing when the threads halted\n");
    std::exit(1);
  }
  std::fprintf(stderr, "closed before the halt\n");
  std::exit(0);
}

TEST(ProgressEngineDeathTest, ClosesUnderWayAtExitFinishBeforeTheHalt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(closingAtExitChild(), ::testing::ExitedWithCode(0), "closed before the halt");
}

TEST(TransportFactory, UnknownNameIsRefusedWithTheKnownOnes) {
  std::unique_ptr<Transport> t;
  EXPECT_EQ(createTransport("carrier-pigeon", nullptr, {}, {}, &t), rdInvalidArgument);
  EXPECT_NE(lastError().find("ucx, loopback"), std::string::npos) << lastError();
}

// Two loopback transports on one engine, with everything they are told recorded.
struct Pair {
  struct Seen {
    std::mutex mu;
    std::vector<std::string> messages;  // header text of each message, in arrival order
    std::vector<std::string> failures;
    std::vector<Payload> held;
    ConnId accepted = 0;
  };
  std::shared_ptr<ProgressEngine> engine = ProgressEngine::create(0);
  Seen server_seen, client_seen;
  std::unique_ptr<Transport> server, client;
  std::string address;

  static Handlers record(Seen* seen, bool hold_large) {
    Handlers h;
    h.on_accept = [seen](ConnId conn, const std::string&) { seen->accepted = conn; };
    h.on_message = [seen, hold_large](ConnId, const void* header, size_t len, Payload p) {
      std::lock_guard<std::mutex> lock(seen->mu);
      seen->messages.emplace_back(static_cast<const char*>(header), len);
      if (hold_large && p.data() == nullptr && p.size() != 0) seen->held.push_back(std::move(p));
    };
    h.on_failure = [seen](ConnId, rdResult_t, const std::string& why) {
      std::lock_guard<std::mutex> lock(seen->mu);
      seen->failures.push_back(why);
    };
    return h;
  }

  explicit Pair(bool hold_large = false) {
    EXPECT_EQ(createTransport("loopback", engine, {}, record(&server_seen, hold_large), &server),
              rdSuccess);
    EXPECT_EQ(createTransport("loopback", engine, {}, record(&client_seen, false), &client),
              rdSuccess);
    server->runSync([&] { return server->listen("server", 0, &address); });
  }
  ~Pair() {
    server->runSync([&] {
      server_seen.held.clear();
      return rdSuccess;
    });
    client->stop();
    server->stop();
    Fabric::reset();
  }
  template <typename Pred>
  bool waitFor(Seen& seen, Pred pred) {
    auto deadline = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(seen.mu);
        if (pred()) return true;
      }
      std::this_thread::yield();
    }
    return false;
  }
};

TEST(LoopbackTransport, ConnectToNobodyFailsLaterThroughTheHandler) {
  Pair p;
  ConnId conn = 0;
  ASSERT_EQ(p.client->runSync([&] { return p.client->connect("nobody:1", &conn); }), rdSuccess);
  ASSERT_TRUE(p.waitFor(p.client_seen, [&] { return !p.client_seen.failures.empty(); }));
  EXPECT_NE(p.client_seen.failures[0].find("nobody:1"), std::string::npos);
}

TEST(LoopbackTransport, MessagesArriveInOrderThenTheCloseFailsThePeer) {
  Pair p;
  ConnId conn = 0;
  p.client->runSync([&] {
    RD_CHECK(p.client->connect(p.address, &conn));
    for (int i = 0; i < 50; ++i) {
      std::string h = "m" + std::to_string(i);
      p.client->send(conn, h.data(), h.size(), nullptr, 0, nullptr);
    }
    p.client->close(conn);
    return rdSuccess;
  });
  ASSERT_TRUE(p.waitFor(p.server_seen, [&] { return !p.server_seen.failures.empty(); }));
  ASSERT_EQ(p.server_seen.messages.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(p.server_seen.messages[i], "m" + std::to_string(i));
  EXPECT_NE(p.server_seen.failures[0].find("closed by peer"), std::string::npos);
}

TEST(LoopbackTransport, LargePayloadCompletesTheSendOnlyWhenFetched) {
  Pair p(/*hold_large=*/true);
  std::vector<char> big(100000, 'x');
  std::atomic<int> sent{-100};
  ConnId conn = 0;
  p.client->runSync([&] {
    RD_CHECK(p.client->connect(p.address, &conn));
    p.client->send(conn, "h", 1, big.data(), big.size(), [&](rdResult_t st) { sent = st; });
    return rdSuccess;
  });
  ASSERT_TRUE(p.waitFor(p.server_seen, [&] { return p.server_seen.held.size() == 1; }));
  EXPECT_EQ(sent.load(), -100) << "completed before the receiver fetched it";
  std::vector<char> into(big.size());
  std::promise<rdResult_t> landed;
  p.server->runSync([&] {
    p.server_seen.held[0].receiveInto(into.data(), [&](rdResult_t st) { landed.set_value(st); });
    return rdSuccess;
  });
  EXPECT_EQ(landed.get_future().get(), rdSuccess);
  EXPECT_EQ(into, big);
  auto deadline = Clock::now() + std::chrono::seconds(5);
  while (sent.load() == -100 && Clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(sent.load(), rdSuccess);
}

TEST(LoopbackTransport, KilledPeerFailsTheConnectionAndItsPayloadsCannotBeFetched) {
  Pair p(/*hold_large=*/true);
  std::vector<char> big(100000, 'y');
  ConnId conn = 0;
  std::string client_name;  // the client listens too, so that the fabric knows it by name
  p.client->runSync([&] { return p.client->listen("client", 0, &client_name); });
  p.client->runSync([&] {
    RD_CHECK(p.client->connect(p.address, &conn));
    p.client->send(conn, "h", 1, big.data(), big.size(), nullptr);
    return rdSuccess;
  });
  ASSERT_TRUE(p.waitFor(p.server_seen, [&] { return p.server_seen.held.size() == 1; }));
  Fabric::kill(client_name);
  ASSERT_TRUE(p.waitFor(p.server_seen, [&] { return !p.server_seen.failures.empty(); }));
  EXPECT_NE(p.server_seen.failures[0].find("peer died"), std::string::npos);
  std::vector<char> into(big.size());
  std::promise<rdResult_t> landed;
  p.server->runSync([&] {
    p.server_seen.held[0].receiveInto(into.data(), [&](rdResult_t st) { landed.set_value(st); });
    return rdSuccess;
  });
  EXPECT_EQ(landed.get_future().get(), rdConnectionError);
}

TEST(LoopbackTransport, FrozenPeerHearsNothingUntilThawed) {
  Pair p;
  ConnId conn = 0;
  Fabric::freeze(p.address);
  p.client->runSync([&] {
    RD_CHECK(p.client->connect(p.address, &conn));
    p.client->send(conn, "one", 3, nullptr, 0, nullptr);
    return rdSuccess;
  });
  // Let the engine deliver everything else first: a round trip through it.
  for (int i = 0; i < 10; ++i) p.engine->runSync([] { return rdSuccess; });
  {
    std::lock_guard<std::mutex> lock(p.server_seen.mu);
    EXPECT_TRUE(p.server_seen.messages.empty());
  }
  Fabric::thaw(p.address);
  ASSERT_TRUE(p.waitFor(p.server_seen, [&] { return p.server_seen.messages.size() == 1; }));
}

}  // namespace
}  // namespace rd::transport
