// SPDX-License-Identifier: BSD-3-Clause
// The public C API and the C++ layer, linked against libreduce.so exactly as users link it.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "libreduce/reduce.h"
#include "libreduce/reduce.hpp"

namespace {

TEST(CApi, VersionAndNames) {
  int version = 0;
  ASSERT_EQ(rdGetVersion(&version), rdSuccess);
  EXPECT_EQ(version, LIBREDUCE_VERSION_CODE);
  EXPECT_EQ(rdGetVersion(nullptr), rdInvalidArgument);
  EXPECT_NE(std::strstr(rdGetLastError(), "NULL"), nullptr);
  EXPECT_STREQ(rdDataTypeName(rdBfloat16), "bfloat16");
  EXPECT_STREQ(rdDataTypeName(static_cast<rdDataType_t>(13)), "invalid");
  EXPECT_STREQ(rdRedOpName(rdAvg), "avg");
  EXPECT_EQ(rdDataTypeSize(rdFloat64), 8u);
  EXPECT_EQ(rdDataTypeSize(rdNumDataTypes), 0u);
  EXPECT_STREQ(rdGetErrorString(rdTimeout), "timeout");
}

TEST(CApi, LocalReduceSumsAndAverages) {
  std::array<float, 5> a{1, 2, 3, 4, 5}, b{10, 20, 30, 40, 50}, out{};
  const void* srcs[] = {a.data(), b.data()};
  ASSERT_EQ(rdLocalReduce(srcs, 2, out.data(), out.size(), rdFloat32, rdSum), rdSuccess);
  EXPECT_EQ(out, (std::array<float, 5>{11, 22, 33, 44, 55}));
  ASSERT_EQ(rdLocalReduce(srcs, 2, out.data(), out.size(), rdFloat32, rdAvg), rdSuccess);
  EXPECT_EQ(out, (std::array<float, 5>{5.5f, 11, 16.5f, 22, 27.5f}));
  EXPECT_EQ(rdLocalReduce(srcs, 2, out.data(), out.size(), rdNumDataTypes, rdSum),
            rdInvalidArgument);
  EXPECT_NE(std::strstr(rdGetLastError(), "invalid data type"), nullptr) << rdGetLastError();
}

TEST(CppLayer, SpansAndExceptions) {
  std::array<int32_t, 3> a{1, -5, 9}, b{2, 7, -9}, out{};
  std::array<std::span<const int32_t>, 2> srcs{std::span<const int32_t>(a),
                                               std::span<const int32_t>(b)};
  rd::localReduce<int32_t>(srcs, out, rdMax);
  EXPECT_EQ(out, (std::array<int32_t, 3>{2, 7, 9}));
  std::array<int32_t, 2> short_src{1, 2};
  std::array<std::span<const int32_t>, 2> bad{std::span<const int32_t>(a),
                                              std::span<const int32_t>(short_src)};
  try {
    rd::localReduce<int32_t>(bad, out, rdSum);
    FAIL() << "expected rd::Error";
  } catch (const rd::Error& e) {
    EXPECT_EQ(e.status(), rdInvalidArgument);
  }
  try {
    rd::check(rdGetVersion(nullptr));
    FAIL() << "expected rd::Error";
  } catch (const rd::Error& e) {
    EXPECT_EQ(e.status(), rdInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("invalid argument: rdGetVersion"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(rd::versionString(), LIBREDUCE_VERSION_STRING);
}

}  // namespace

// An id stripped of its secret may travel through a store anyone can read; each rank then needs
// its own secret, and one without is told so instead of failing at the reducers.
TEST(CApi, UniqueIdWithoutSecret) {
  rdUniqueId id;
  ASSERT_EQ(rdGetUniqueIdFor("127.0.0.1:1", "s3cret-value", &id), rdSuccess);
  ASSERT_NE(std::string(id.internal).find("73336372"), std::string::npos);  // hex of "s3cr"
  ASSERT_EQ(rdUniqueIdStripSecret(&id), rdSuccess);
  EXPECT_EQ(std::string(id.internal).find("73336372"), std::string::npos);
  rdUniqueId again = id;
  ASSERT_EQ(rdUniqueIdStripSecret(&again), rdSuccess);  // idempotent
  EXPECT_EQ(std::string(again.internal), std::string(id.internal));

  unsetenv("LIBREDUCE_SECRET");
  unsetenv("LIBREDUCE_SECRET_FILE");
  rdComm_t comm = nullptr;
  EXPECT_EQ(rdCommInitRank(&comm, 1, id, 0), rdInvalidArgument);
  EXPECT_NE(std::string(rdGetLastError()).find("set LIBREDUCE_SECRET_FILE"), std::string::npos)
      << rdGetLastError();
  EXPECT_EQ(comm, nullptr);

  rdUniqueId garbage{};
  std::strcpy(garbage.internal, "not an id");
  EXPECT_EQ(rdUniqueIdStripSecret(&garbage), rdInvalidArgument);
  EXPECT_EQ(rdUniqueIdStripSecret(nullptr), rdInvalidArgument);
}

namespace {

// Two ranks of one process, joined through the rendezvous rdGetUniqueIdFor starts, over UCX.
class TwoRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    rdUniqueId id;
    ASSERT_EQ(rdGetUniqueIdFor("", "two-ranks-secret", &id), rdSuccess) << rdGetLastError();
    rdResult_t joined[2] = {rdInternalError, rdInternalError};
    std::thread other([&] { joined[1] = rdCommInitRank(&comms_[1], 2, id, 1); });
    joined[0] = rdCommInitRank(&comms_[0], 2, id, 0);
    other.join();
    ASSERT_EQ(joined[0], rdSuccess);
    ASSERT_EQ(joined[1], rdSuccess);
  }
  void TearDown() override {
    std::thread other([&] { rdCommDestroy(comms_[1]); });
    rdCommDestroy(comms_[0]);
    other.join();
  }
  rdComm_t comms_[2] = {nullptr, nullptr};
};

TEST_F(TwoRanks, SendAndReceiveFromAnyRankWithTags) {
  std::vector<float> a(1000), b(3);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = -static_cast<float>(i);
  std::vector<float> got_a(a.size()), got_b(b.size());
  rdRequest_t sends[2];
  ASSERT_EQ(rdSendAsync(a.data(), a.size(), rdFloat32, 1, 4, comms_[0], &sends[0]), rdSuccess);
  ASSERT_EQ(rdSendAsync(b.data(), b.size(), rdFloat32, 1, 9, comms_[0], &sends[1]), rdSuccess);
  int source = -1;
  ASSERT_EQ(rdRecv(got_b.data(), b.size(), rdFloat32, RD_ANY_SOURCE, 9, comms_[1], &source),
            rdSuccess)
      << rdGetLastError();
  EXPECT_EQ(source, 0);
  ASSERT_EQ(rdRecv(got_a.data(), a.size(), rdFloat32, 0, 4, comms_[1], nullptr), rdSuccess)
      << rdGetLastError();
  EXPECT_EQ(got_a, a);
  EXPECT_EQ(got_b, b);
  for (rdRequest_t r : sends) {
    EXPECT_EQ(rdRequestWait(r, -1), rdSuccess);
    rdRequestFree(r);
  }
}

TEST_F(TwoRanks, ArgumentErrorsCancelAndCompletionCallbacks) {
  float x = 1;
  rdRequest_t r = nullptr;
  EXPECT_EQ(rdSendAsync(&x, 1, rdFloat32, 2, 0, comms_[0], &r), rdInvalidArgument);
  EXPECT_NE(std::string(rdGetLastError()).find("peer 2 is not a rank"), std::string::npos);
  EXPECT_EQ(rdSendAsync(&x, 1, rdFloat32, 0, 0, comms_[0], &r), rdInvalidArgument);
  EXPECT_NE(std::string(rdGetLastError()).find("cannot send to itself"), std::string::npos);
  EXPECT_EQ(rdSendAsync(&x, 1, rdFloat32, RD_ANY_SOURCE, 0, comms_[0], &r), rdInvalidArgument);
  EXPECT_EQ(rdRecvAsync(nullptr, 1, rdFloat32, 0, 0, comms_[1], &r), rdInvalidArgument);
  EXPECT_EQ(rdRecvAsync(&x, 1, rdNumDataTypes, 0, 0, comms_[1], &r), rdInvalidArgument);
  EXPECT_EQ(rdSend(&x, 1, rdFloat32, 1, 0, nullptr), rdInvalidArgument);
  EXPECT_EQ(rdRequestCancel(nullptr), rdInvalidArgument);
  // A ring communicator has no reducer to name the transports of.
  char transports[64] = "untouched";
  EXPECT_EQ(rdCommGetReducerTransports(comms_[0], 0, transports, sizeof transports),
            rdInvalidArgument);
  EXPECT_NE(std::string(rdGetLastError()).find("reducer 0 of 0"), std::string::npos);
  EXPECT_EQ(rdCommGetReducerTransports(comms_[0], -1, transports, sizeof transports),
            rdInvalidArgument);
  EXPECT_EQ(rdCommGetReducerTransports(comms_[0], 0, nullptr, 0), rdInvalidArgument);
  EXPECT_STREQ(transports, "untouched");

  // A receive nothing matched is cancelled; its callback runs once, on completion.
  std::atomic<int> called{0};
  auto bump = [](void* arg) { ++*static_cast<std::atomic<int>*>(arg); };
  ASSERT_EQ(rdRecvAsync(&x, 1, rdFloat32, 0, 3, comms_[1], &r), rdSuccess);
  ASSERT_EQ(rdRequestSetCallback(r, bump, &called), rdSuccess);
  EXPECT_EQ(called.load(), 0);
  EXPECT_EQ(rdRequestCancel(r), rdSuccess);
  EXPECT_EQ(rdRequestWait(r, -1), rdAborted);
  EXPECT_EQ(called.load(), 1);
  EXPECT_EQ(rdRequestCancel(r), rdInProgress);  // already complete
  rdRequestFree(r);
  // A later message goes to the next receive, and a send cannot be cancelled.
  float y = 7, got = 0;
  ASSERT_EQ(rdSendAsync(&y, 1, rdFloat32, 1, 3, comms_[0], &r), rdSuccess);
  EXPECT_EQ(rdRequestCancel(r), rdInProgress);
  ASSERT_EQ(rdRecv(&got, 1, rdFloat32, 0, 3, comms_[1], nullptr), rdSuccess);
  EXPECT_EQ(got, 7);
  EXPECT_EQ(rdRequestWait(r, -1), rdSuccess);
  ASSERT_EQ(rdRequestSetCallback(r, bump, &called), rdSuccess);  // complete: runs at once
  EXPECT_EQ(called.load(), 2);
  rdRequestFree(r);
}

TEST(CppLayer, PointToPoint) {
  rdUniqueId id;
  ASSERT_EQ(rdGetUniqueIdFor("", "cpp-secret", &id), rdSuccess) << rdGetLastError();
  std::array<int64_t, 4> sent{1, 2, 3, -4}, got{};
  int source = -1;
  std::thread receiver([&] {
    rd::Communicator comm(2, id, 1);
    rd::Request r = comm.recvAsync(got.data(), got.size(), RD_ANY_SOURCE, 5);
    r.wait();
    source = r.source();
    comm.send(got.data(), 1, 0, 6);
  });
  rd::Communicator comm(2, id, 0);
  comm.sendAsync(sent.data(), sent.size(), 1, 5).wait();
  int64_t first = 0;
  EXPECT_EQ(comm.recv(&first, 1, 1, 6), 1);
  receiver.join();
  EXPECT_EQ(got, sent);
  EXPECT_EQ(source, 0);
  EXPECT_EQ(first, 1);
}

}  // namespace
