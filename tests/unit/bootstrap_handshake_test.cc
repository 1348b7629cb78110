// SPDX-License-Identifier: BSD-3-Clause
// The bootstrap handshake on its own (no sockets): both sides complete with one secret and learn
// each other's tag and address; a wrong secret is refused on both sides with a clear reason; a
// replayed handshake, garbage, an oversized frame and bytes after the end are refused; every
// byte split gives the same result. A shared pool's listener keys each connection with the job
// key of the communicator it names; a tag or address changed on the way is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "common/auth.h"
#include "transport/bootstrap/handshake.h"

namespace rd::transport::bootstrap {
namespace {

using Status = Handshake::Status;

struct Pair {
  Handshake connector;
  Handshake listener;
  Pair(const std::string& connector_secret, const std::string& listener_secret)
      : connector(Handshake::Side::kConnector, connector_secret, Endpoint{11, "connector-addr"}),
        listener(Handshake::Side::kListener, listener_secret, Endpoint{22, "listener-addr"}) {}
};

// Moves bytes both ways, @p piece at a time, until neither side has anything to say.
template <typename P>
void run(P& p, size_t piece = 1 << 20) {
  for (int round = 0; round < 10; ++round) {
    std::string to_listener = p.connector.takeOutput();
    std::string to_connector = p.listener.takeOutput();
    if (to_listener.empty() && to_connector.empty()) return;
    for (size_t at = 0; at < to_listener.size(); at += piece)
      p.listener.consume(to_listener.data() + at, std::min(piece, to_listener.size() - at));
    for (size_t at = 0; at < to_connector.size(); at += piece)
      p.connector.consume(to_connector.data() + at, std::min(piece, to_connector.size() - at));
  }
}

// Runs hello and challenge; returns the connector's auth frame, not yet delivered (and the hello).
template <typename P>
std::string authFrameOf(P& p, std::string* hello) {
  *hello = p.connector.takeOutput();
  p.listener.consume(hello->data(), hello->size());
  std::string challenge = p.listener.takeOutput();
  p.connector.consume(challenge.data(), challenge.size());
  return p.connector.takeOutput();
}

TEST(BootstrapHandshake, SameSecretCompletesAndExchangesTagsAndAddresses) {
  for (size_t piece : {size_t{1}, size_t{5}, size_t{12}, size_t{1} << 20}) {
    Pair p("s3cret", "s3cret");
    run(p, piece);
    ASSERT_EQ(p.connector.status(), Status::kDone) << p.connector.error();
    ASSERT_EQ(p.listener.status(), Status::kDone) << p.listener.error();
    EXPECT_EQ(p.connector.peer().tag, 22u);
    EXPECT_EQ(p.connector.peer().worker_address, "listener-addr");
    EXPECT_EQ(p.listener.peer().tag, 11u);
    EXPECT_EQ(p.listener.peer().worker_address, "connector-addr");
  }
}

TEST(BootstrapHandshake, EmptySecretOnBothSidesStillCompletes) {
  Pair p("", "");
  run(p);
  EXPECT_EQ(p.connector.status(), Status::kDone);
  EXPECT_EQ(p.listener.status(), Status::kDone);
}

TEST(BootstrapHandshake, WrongSecretIsRefusedOnBothSidesBeforeAnyAddressMoves) {
  Pair p("mine", "theirs");
  // The connector checks the listener's proof first and refuses it; the listener hears why.
  p.listener.consume(p.connector.takeOutput().data(), 12 + 40);
  std::string challenge = p.listener.takeOutput();
  p.connector.consume(challenge.data(), challenge.size());
  EXPECT_EQ(p.connector.status(), Status::kFailed);
  EXPECT_EQ(p.connector.failure(), rdAuthFailed);
  EXPECT_NE(p.connector.error().find("authentication failed"), std::string::npos);
  std::string refusal = p.connector.takeOutput();
  EXPECT_EQ(refusal.find("connector-addr"), std::string::npos) << "address sent to a stranger";
  p.listener.consume(refusal.data(), refusal.size());
  EXPECT_EQ(p.listener.status(), Status::kFailed);
  EXPECT_EQ(p.listener.failure(), rdAuthFailed);
  EXPECT_NE(p.listener.error().find("secret differs"), std::string::npos) << p.listener.error();
  EXPECT_EQ(p.listener.takeOutput().find("listener-addr"), std::string::npos);
}

// Sends @p listener a hello, then an auth frame whose proof is made with @p proof_secret (as a
// connector that skipped its own check would); returns the listener's status after it.
Status sendProofMadeWith(Handshake& listener, const std::string& proof_secret) {
  auth::Nonce cn{};
  std::string hello = encodeFrame(FrameType::kHello, std::string(40, '\0'));
  listener.consume(hello.data(), hello.size());
  std::string challenge = listener.takeOutput();
  auth::Nonce ln{};
  std::memcpy(ln.data(), challenge.data() + kHeaderBytes, ln.size());
  Endpoint mine{0x0101010101010101ull, "addr"};
  auth::Mac proof = bootstrapMac(MacRole::kConnector, proof_secret, cn, ln, 0, &mine);
  std::string body(reinterpret_cast<const char*>(proof.data()), proof.size());
  body += std::string(8, '\1') + "addr";
  std::string auth_frame = encodeFrame(FrameType::kAuth, body);
  return listener.consume(auth_frame.data(), auth_frame.size());
}

// The connector's error says which side lacks a secret where that can be known, so a worker
// without LIBREDUCE_SECRET_FILE is not told that the reducer is at fault.
TEST(BootstrapHandshake, TheConnectorSaysWhichSideLacksASecret) {
  struct Case {
    const char* connector_secret;
    const char* listener_secret;
    const char* says;
  };
  for (const Case& c : {Case{"", "theirs",
                             "the listener requires a job secret and this process "
                             "has none (set LIBREDUCE_SECRET_FILE"},
                        Case{"mine", "",
                             "the listener has no job secret and this process has "
                             "one (start the reducer with --secret-file"},
                        Case{"mine", "theirs",
                             "the listener's job secret differs from this "
                             "process's"}}) {
    Pair p(c.connector_secret, c.listener_secret);
    run(p);
    EXPECT_EQ(p.connector.failure(), rdAuthFailed);
    EXPECT_NE(p.connector.error().find(c.says), std::string::npos) << p.connector.error();
  }
}

// The listener sees a proof only from a connector that skipped its own check (a stranger's
// program); the reason still names the side without a secret.
TEST(BootstrapHandshake, TheListenerSaysWhichSideLacksASecret) {
  struct Case {
    const char* listener_secret;
    const char* proof_secret;
    const char* says;
  };
  for (const Case& c :
       {Case{"right", "", "the connecting peer has no job secret and this listener requires one"},
        Case{"", "wrong", "the connecting peer has a job secret and this listener has none"},
        Case{"right", "wrong", "the connecting peer's job secret differs from this listener's"}}) {
    Handshake listener(Handshake::Side::kListener, c.listener_secret, Endpoint{1, "addr"});
    sendProofMadeWith(listener, c.proof_secret);
    EXPECT_EQ(listener.failure(), rdAuthFailed);
    EXPECT_NE(listener.error().find(c.says), std::string::npos) << listener.error();
  }
}

TEST(BootstrapHandshake, ListenerRefusesAWrongProofAndTellsTheConnector) {
  Handshake listener(Handshake::Side::kListener, "right", Endpoint{1, "listener-addr"});
  EXPECT_EQ(sendProofMadeWith(listener, "wrong"), Status::kFailed);
  EXPECT_EQ(listener.failure(), rdAuthFailed);
  std::string reply = listener.takeOutput();
  ASSERT_EQ(reply.size(), kHeaderBytes + 4);
  EXPECT_EQ(reply.find("listener-addr"), std::string::npos);
}

TEST(BootstrapHandshake, ReplayedHandshakeIsRefused) {
  // A whole exchange recorded on the wire...
  Pair first("s", "s");
  std::string hello;
  std::string auth_frame = authFrameOf(first, &hello);
  // ...replayed to a fresh listener, which picks a new nonce.
  Handshake listener(Handshake::Side::kListener, "s", Endpoint{3, "listener-addr"});
  listener.consume(hello.data(), hello.size());
  (void)listener.takeOutput();
  EXPECT_EQ(listener.consume(auth_frame.data(), auth_frame.size()), Status::kFailed);
  EXPECT_EQ(listener.failure(), rdAuthFailed);
}

TEST(BootstrapHandshake, GarbageFailsAtTheFirstHeaderWithoutBufferingMore) {
  for (std::string garbage :
       {std::string(16, '\0'), std::string(100000, '\0'), std::string(100000, '\xff'),
        std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n")}) {
    Handshake listener(Handshake::Side::kListener, "s", Endpoint{3, "a"});
    EXPECT_EQ(listener.consume(garbage.data(), garbage.size()), Status::kFailed);
    EXPECT_EQ(listener.failure(), rdConnectionError);
    EXPECT_NE(listener.error().find("bad magic"), std::string::npos) << listener.error();
    EXPECT_EQ(listener.buffered(), 0u);
    EXPECT_TRUE(listener.takeOutput().empty());
  }
}

TEST(BootstrapHandshake, OversizedOrMistypedFramesAreRefusedFromTheirHeader) {
  Handshake a(Handshake::Side::kListener, "s", Endpoint{3, "a"});
  std::string huge = encodeFrame(FrameType::kHello, std::string(41, 'x')).substr(0, kHeaderBytes);
  EXPECT_EQ(a.consume(huge.data(), huge.size()), Status::kFailed);
  EXPECT_NE(a.error().find("hello frame of 41 bytes"), std::string::npos) << a.error();
  Handshake b(Handshake::Side::kListener, "s", Endpoint{3, "a"});
  std::string welcome = encodeFrame(FrameType::kWelcome, std::string(20, 'x'));
  EXPECT_EQ(b.consume(welcome.data(), welcome.size()), Status::kFailed);
  EXPECT_NE(b.error().find("where hello belongs"), std::string::npos) << b.error();
  Handshake c(Handshake::Side::kListener, "s", Endpoint{3, "a"});
  std::string header = encodeFrame(FrameType::kHello, std::string(40, 'x'));
  header[4] = 9;  // version
  EXPECT_EQ(c.consume(header.data(), header.size()), Status::kFailed);
  EXPECT_NE(c.error().find("version 9"), std::string::npos) << c.error();
}

TEST(BootstrapHandshake, BytesAfterTheEndFailTheConnection) {
  Pair p("s", "s");
  std::string hello;
  std::string auth_frame = authFrameOf(p, &hello) + "extra";
  EXPECT_EQ(p.listener.consume(auth_frame.data(), auth_frame.size()), Status::kFailed);
  EXPECT_NE(p.listener.error().find("after the handshake"), std::string::npos);
}

// A shared pool's listener holds the pool secret; a connector holds one job's key and names its
// communicator.
struct PoolPair {
  Handshake connector;
  Handshake listener;
  PoolPair(const std::string& connector_key, uint64_t scope)
      : connector(Handshake::Side::kConnector, connector_key,
                  Endpoint{11, "connector-addr", scope}),
        listener(Handshake::Side::kListener, Keys{"", "pool-secret"},
                 Endpoint{22, "listener-addr"}) {}
};

TEST(BootstrapHandshake, PoolListenerAdmitsTheJobKeyOfTheNamedCommunicator) {
  PoolPair p(auth::jobKey("pool-secret", 0xA), 0xA);
  run(p);
  ASSERT_EQ(p.connector.status(), Status::kDone) << p.connector.error();
  ASSERT_EQ(p.listener.status(), Status::kDone) << p.listener.error();
  EXPECT_EQ(p.listener.peer().scope, 0xAu);
  EXPECT_EQ(p.listener.peer().worker_address, "connector-addr");
}

TEST(BootstrapHandshake, PoolListenerRefusesAnotherJobsKeyBeforeAnyAddressMoves) {
  PoolPair p(auth::jobKey("pool-secret", 0xA), 0xB);  // job A's key, naming job B
  std::string hello;
  std::string auth_frame = authFrameOf(p, &hello);
  EXPECT_EQ(p.connector.status(), Status::kFailed);
  EXPECT_EQ(p.connector.failure(), rdAuthFailed);
  EXPECT_NE(p.connector.error().find("not the job key of the communicator it named"),
            std::string::npos)
      << p.connector.error();
  EXPECT_EQ(auth_frame.find("connector-addr"), std::string::npos);
  p.listener.consume(auth_frame.data(), auth_frame.size());
  EXPECT_EQ(p.listener.status(), Status::kFailed);
  EXPECT_EQ(p.listener.takeOutput().find("listener-addr"), std::string::npos);
}

TEST(BootstrapHandshake, PoolListenerRefusesAConnectionThatNamesNoCommunicator) {
  PoolPair p("pool-secret", 0);
  run(p);
  EXPECT_EQ(p.listener.failure(), rdAuthFailed);
  EXPECT_NE(p.listener.error().find("named no communicator"), std::string::npos)
      << p.listener.error();
  EXPECT_EQ(p.connector.failure(), rdAuthFailed);
  EXPECT_NE(p.connector.error().find("serves a shared reducer pool"), std::string::npos)
      << p.connector.error();
}

// The proofs cover the tag and the worker address: one changed on the way is refused.
TEST(BootstrapHandshake, ATagOrAddressChangedOnTheWayIsRefused) {
  Pair p("s", "s");
  std::string hello;
  std::string auth_frame = authFrameOf(p, &hello);
  size_t at = auth_frame.find("connector-addr");
  ASSERT_NE(at, std::string::npos);
  auth_frame.replace(at, 14, "attacker-addr!");
  EXPECT_EQ(p.listener.consume(auth_frame.data(), auth_frame.size()), Status::kFailed);
  EXPECT_EQ(p.listener.failure(), rdAuthFailed);

  Pair q("s", "s");
  std::string auth2 = authFrameOf(q, &hello);
  q.listener.consume(auth2.data(), auth2.size());
  std::string welcome = q.listener.takeOutput();
  welcome[kHeaderBytes + 32] ^= 1;  // the listener's tag
  EXPECT_EQ(q.connector.consume(welcome.data(), welcome.size()), Status::kFailed);
  EXPECT_EQ(q.connector.failure(), rdAuthFailed);
  EXPECT_NE(q.connector.error().find("welcome does not carry its proof"), std::string::npos)
      << q.connector.error();
}

TEST(JobKey, IsTheDocumentedHmacAndDiffersPerCommunicator) {
  std::string a = auth::jobKey("pool", 1), b = auth::jobKey("pool", 2);
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  EXPECT_NE(a, auth::jobKey("other pool", 1));
  std::string message = "libreduce-job-key-v1";
  message += std::string("\x01\0\0\0\0\0\0\0", 8);
  auth::Mac mac = auth::hmac("pool", message);
  char hex[3];
  std::snprintf(hex, sizeof hex, "%02x", mac[0]);
  EXPECT_EQ(a.substr(0, 2), hex);
}

}  // namespace
}  // namespace rd::transport::bootstrap
