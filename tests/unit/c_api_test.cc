// The public C API and the C++ layer, linked against libreduce.so exactly as users link it.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>

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
