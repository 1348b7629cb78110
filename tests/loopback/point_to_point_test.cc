// SPDX-License-Identifier: BSD-3-Clause
// Point-to-point messages through the real communicator code over the loopback transport:
// tags and their order, receives from any rank, messages in several pieces, receives posted
// before and after the send, wrong sizes, timeouts, a sender that dies or leaves, and forged
// pieces. Every case verifies the bytes that arrived.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "protocol/wire.h"
#include "world.h"

namespace rd::test {
namespace {

using coll::P2PDesc;
using coll::PointToPoint;
using coll::Request;
using transport::loopback::Fabric;
using transport::loopback::Fate;
using transport::loopback::MessageView;

constexpr int kWaitMs = 10000;

std::shared_ptr<Request> post(World& w, int rank, bool is_send, void* buf, size_t count,
                              rdDataType_t dtype, int peer, uint32_t tag) {
  P2PDesc d;
  d.buffer = buf;
  d.count = count;
  d.dtype = dtype;
  d.peer = peer;
  d.tag = tag;
  std::shared_ptr<Request> request;
  rdResult_t posted = w.rank(rank).postPointToPoint(is_send, d, &request);
  EXPECT_EQ(posted, rdSuccess) << lastError();
  if (posted != rdSuccess) {  // a request that reports the refusal, for the caller's wait
    request = std::make_shared<Request>();
    request->complete(posted, lastError());
  }
  return request;
}

// Values that say who sent them and which message they belong to.
std::vector<int32_t> payload(size_t count, int from, int message) {
  std::vector<int32_t> v(count);
  std::iota(v.begin(), v.end(), from * 1000000 + message * 10000);
  return v;
}

WorldOptions worldOf(int ranks, int reducers, uint32_t timeout_ms = 5000) {
  WorldOptions o;
  o.ranks = ranks;
  o.reducers = reducers;
  o.timeout_ms = timeout_ms;
  return o;
}

class Sizes : public ::testing::TestWithParam<int> {};  // reducers (0 = ring world)

// Sizes from empty to several pieces (wire::kP2PPieceBytes), received by tag out of the order
// they were sent in; each tag's messages in the order sent.
TEST_P(Sizes, TaggedMessagesOfEverySizeArriveExactlyInSendOrderPerTag) {
  World world(worldOf(2, GetParam()));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  const size_t big = wire::kP2PPieceBytes / sizeof(int32_t) * 2 + 3;  // three pieces
  const std::vector<size_t> counts = {0, 1, 7, 5003, big};
  for (size_t count : counts) {
    SCOPED_TRACE("count " + std::to_string(count));
    auto a = payload(count, 0, 1), b = payload(count, 0, 2), c = payload(count, 0, 3);
    std::vector<int32_t> got_a(count), got_b(count), got_c(count);
    auto s1 = post(world, 0, true, a.data(), count, rdInt32, 1, 7);
    auto s2 = post(world, 0, true, b.data(), count, rdInt32, 1, 9);
    auto s3 = post(world, 0, true, c.data(), count, rdInt32, 1, 7);
    auto r_b = post(world, 1, false, got_b.data(), count, rdInt32, 0, 9);
    auto r_a = post(world, 1, false, got_a.data(), count, rdInt32, 0, 7);
    auto r_c = post(world, 1, false, got_c.data(), count, rdInt32, 0, 7);
    for (auto& r : {s1, s2, s3, r_a, r_b, r_c})
      ASSERT_EQ(r->wait(kWaitMs), rdSuccess) << lastError();
    EXPECT_EQ(got_a, a);
    EXPECT_EQ(got_b, b);
    EXPECT_EQ(got_c, c);
    EXPECT_EQ(r_a->source(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(RingAndReducers, Sizes, ::testing::Values(0, 1));

TEST(PointToPoint, ReceivesPostedBeforeTheSendsGetTheirMessages) {
  World world(worldOf(2, 0));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  auto x = payload(20000, 1, 1), y = payload(3, 1, 2);
  std::vector<int32_t> got_x(x.size()), got_y(y.size());
  auto r_y = post(world, 0, false, got_y.data(), y.size(), rdInt32, 1, 2);
  auto r_x = post(world, 0, false, got_x.data(), x.size(), rdInt32, 1, 1);
  EXPECT_EQ(r_x->wait(50), rdInProgress);
  auto s_x = post(world, 1, true, x.data(), x.size(), rdInt32, 0, 1);
  auto s_y = post(world, 1, true, y.data(), y.size(), rdInt32, 0, 2);
  for (auto& r : {r_x, r_y, s_x, s_y}) ASSERT_EQ(r->wait(kWaitMs), rdSuccess) << lastError();
  EXPECT_EQ(got_x, x);
  EXPECT_EQ(got_y, y);
}

TEST(PointToPoint, AnySourceTakesEachSenderOnceAndReportsWhichRank) {
  World world(worldOf(4, 1));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  std::vector<std::vector<int32_t>> sent, got(3, std::vector<int32_t>(100));
  std::vector<std::shared_ptr<Request>> receives;
  receives.push_back(
      post(world, 0, false, got[0].data(), 100, rdInt32, PointToPoint::kAnySource, 5));
  for (int from = 1; from < 4; ++from) sent.push_back(payload(100, from, 0));
  std::vector<std::shared_ptr<Request>> sends;
  for (int from = 1; from < 4; ++from) {
    sends.push_back(post(world, from, true, sent[from - 1].data(), 100, rdInt32, 0, 5));
  }
  for (int i = 1; i < 3; ++i) {
    receives.push_back(
        post(world, 0, false, got[i].data(), 100, rdInt32, PointToPoint::kAnySource, 5));
  }
  std::vector<int> sources;
  for (size_t i = 0; i < receives.size(); ++i) {
    ASSERT_EQ(receives[i]->wait(kWaitMs), rdSuccess) << lastError();
    int source = receives[i]->source();
    ASSERT_GE(source, 1);
    ASSERT_LE(source, 3);
    EXPECT_EQ(got[i], sent[source - 1]) << "from rank " << source;
    sources.push_back(source);
  }
  std::sort(sources.begin(), sources.end());
  EXPECT_EQ(sources, (std::vector<int>{1, 2, 3}));
  for (auto& s : sends) EXPECT_EQ(s->wait(kWaitMs), rdSuccess) << lastError();
}

TEST(PointToPoint, AWrongSizeFailsTheReceiveNamingBothAndTheNextMessageArrives) {
  World world(worldOf(2, 0));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  auto first = payload(10, 0, 1), second = payload(8, 0, 2);
  std::vector<float> wrong(12);
  std::vector<int32_t> got(8);
  auto s1 = post(world, 0, true, first.data(), first.size(), rdInt32, 1, 0);
  auto s2 = post(world, 0, true, second.data(), second.size(), rdInt32, 1, 0);
  auto bad = post(world, 1, false, wrong.data(), wrong.size(), rdFloat32, 0, 0);
  EXPECT_EQ(bad->wait(kWaitMs), rdInvalidArgument);
  const std::string& error = lastError();
  EXPECT_NE(error.find("rank 0 sent 10 elements of int32"), std::string::npos) << error;
  EXPECT_NE(error.find("expects 12 elements of float32"), std::string::npos) << error;
  auto good = post(world, 1, false, got.data(), got.size(), rdInt32, 0, 0);
  ASSERT_EQ(good->wait(kWaitMs), rdSuccess) << lastError();
  EXPECT_EQ(got, second);
}

TEST(PointToPoint, AReceiveNobodySendsToAndASendNobodyReceivesTimeOut) {
  constexpr uint32_t kTimeoutMs = 300;
  World world(worldOf(2, 0, kTimeoutMs));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  std::vector<int32_t> buf(100000);  // past the eager limit: the receiver must take it
  auto start = Clock::now();
  auto r = post(world, 0, false, buf.data(), 10, rdInt32, 1, 3);
  auto s = post(world, 1, true, buf.data(), buf.size(), rdInt32, 0, 4);
  EXPECT_EQ(r->wait(kWaitMs), rdTimeout);
  EXPECT_NE(std::string(lastError()).find("receive from rank 1 (tag 3): no message arrived"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(s->wait(kWaitMs), rdTimeout);
  EXPECT_NE(std::string(lastError()).find("send to rank 0 (tag 4): not received"),
            std::string::npos)
      << lastError();
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(10 * kTimeoutMs));
  // Neither failed the communicator.
  EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 100, rdFloat32, rdSum)));
}

TEST(PointToPoint, ASenderThatDiesFailsTheReceiveNamingItBeforeTheTimeout) {
  World world(worldOf(3, 0, 20000));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  std::vector<int32_t> buf(10);
  auto r = post(world, 0, false, buf.data(), buf.size(), rdInt32, 2, 0);
  auto start = Clock::now();
  Fabric::kill(world.rank(0).peerAddress(2));
  EXPECT_EQ(r->wait(kWaitMs), rdConnectionError);
  const std::string& error = lastError();
  EXPECT_NE(error.find("receive from rank 2 (tag 0)"), std::string::npos) << error;
  EXPECT_NE(error.find("lost"), std::string::npos) << error;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  // Later operations with it fail at once, naming it; the others go on.
  auto again = post(world, 0, true, buf.data(), buf.size(), rdInt32, 2, 0);
  EXPECT_EQ(again->wait(kWaitMs), rdConnectionError);
  EXPECT_NE(std::string(lastError()).find("rank 2"), std::string::npos) << lastError();
  auto x = payload(10, 1, 0);
  auto s = post(world, 1, true, x.data(), x.size(), rdInt32, 0, 0);
  auto from1 = post(world, 0, false, buf.data(), buf.size(), rdInt32, 1, 0);
  EXPECT_EQ(from1->wait(kWaitMs), rdSuccess) << lastError();
  EXPECT_EQ(buf, x);
  EXPECT_EQ(s->wait(kWaitMs), rdSuccess) << lastError();
  Fabric::reset();
}

TEST(PointToPoint, MessagesThatArrivedBeforeTheSenderLeftCanStillBeReceived) {
  World world(worldOf(2, 0));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  auto x = payload(64, 1, 0);
  auto s = post(world, 1, true, x.data(), x.size(), rdInt32, 0, 1);
  ASSERT_EQ(s->wait(kWaitMs), rdSuccess) << lastError();
  world.destroyRank(1);
  std::vector<int32_t> got(x.size());
  auto r = post(world, 0, false, got.data(), got.size(), rdInt32, 1, 1);
  ASSERT_EQ(r->wait(kWaitMs), rdSuccess) << lastError();
  EXPECT_EQ(got, x);
  auto more = post(world, 0, false, got.data(), got.size(), rdInt32, 1, 1);
  EXPECT_EQ(more->wait(kWaitMs), rdConnectionError);
  EXPECT_NE(std::string(lastError()).find("rank 1"), std::string::npos) << lastError();
}

bool isP2P(const MessageView& m) {
  wire::Header h;
  if (m.header_len != sizeof h) return false;
  std::memcpy(&h, m.header, sizeof h);
  return h.type == static_cast<uint8_t>(wire::MsgType::kP2P);
}

// A piece whose header was changed in flight (its index or the message's element count no
// longer fit its length) or that comes twice is a protocol error, never data.
TEST(PointToPoint, ForgedOrRepeatedPiecesFailTheCommunicator) {
  const size_t offsets[] = {offsetof(wire::Header, chunk), offsetof(wire::Header, count)};
  for (size_t at : offsets) {
    World world(worldOf(2, 0));
    ASSERT_EQ(world.join(), rdSuccess) << lastError();
    Fabric::setFilter([at](const MessageView& m) {
      Fate f;
      if (isP2P(m)) {
        f.kind = Fate::kCorrupt;
        f.corrupt_at = at;
      }
      return f;
    });
    std::vector<int32_t> x(100, 1), got(100);
    auto r = post(world, 1, false, got.data(), got.size(), rdInt32, 0, 0);
    auto s = post(world, 0, true, x.data(), x.size(), rdInt32, 1, 0);
    EXPECT_EQ(r->wait(kWaitMs), rdProtocolError) << "header byte " << at;
    EXPECT_NE(std::string(lastError()).find("malformed point-to-point message"), std::string::npos)
        << lastError();
    Fabric::reset();
  }
  World world(worldOf(2, 0));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  Fabric::setFilter([](const MessageView& m) {
    Fate f;
    if (isP2P(m)) f.kind = Fate::kDuplicate;
    return f;
  });
  std::vector<int32_t> x(100, 1), got(100);
  // The receive first: the repeat may fail the communicator as soon as it arrives.
  auto r = post(world, 1, false, got.data(), got.size(), rdInt32, 0, 0);
  auto s = post(world, 0, true, x.data(), x.size(), rdInt32, 1, 0);
  (void)r->wait(kWaitMs);  // the first copy may complete it; the second fails the communicator
  auto deadline = Clock::now() + std::chrono::milliseconds(kWaitMs);
  while (world.rank(1).asyncError() == rdSuccess && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(world.rank(1).asyncError(), rdProtocolError);
  EXPECT_NE(std::string(lastError()).find("malformed point-to-point message"), std::string::npos)
      << lastError();
  Fabric::reset();
}

}  // namespace
}  // namespace rd::test
