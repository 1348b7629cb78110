// SPDX-License-Identifier: BSD-3-Clause
#include "common/log.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "common/check.h"

namespace rd {
namespace {

TEST(Log, LevelsParseByNameOrNumber) {
  log::Level l = log::Level::kNone;
  EXPECT_TRUE(log::parseLevel("debug", &l));
  EXPECT_EQ(l, log::Level::kDebug);
  EXPECT_TRUE(log::parseLevel("WARN", &l));
  EXPECT_EQ(l, log::Level::kWarn);
  EXPECT_TRUE(log::parseLevel("5", &l));
  EXPECT_EQ(l, log::Level::kTrace);
  EXPECT_FALSE(log::parseLevel("verbose", &l));
  EXPECT_FALSE(log::parseLevel("6", &l));
  EXPECT_FALSE(log::parseLevel(nullptr, &l));
}

TEST(Log, LinesCarryLevelFileAndMessage) {
  log::setLevel(log::Level::kInfo);
  testing::internal::CaptureStderr();
  RD_LOG_INFO("hello %d", 42);
  RD_LOG_DEBUG("filtered out");
  std::string out = testing::internal::GetCapturedStderr();
  log::setLevel(log::Level::kWarn);
  EXPECT_NE(out.find("info log_test.cc:"), std::string::npos) << out;
  EXPECT_NE(out.find("hello 42"), std::string::npos) << out;
  EXPECT_EQ(out.find("filtered out"), std::string::npos) << out;
}

rdResult_t failing() {
  return setError(rdTimeout, "peer 3 did not answer");
}
rdResult_t caller() {
  RD_CHECK(failing());
  return rdSuccess;
}
rdResult_t withCleanup(bool* cleaned) {
  rdResult_t res = rdSuccess;
  RD_CHECK_GOTO(failing(), res, out);
  return rdInternalError;  // not reached
out:
  *cleaned = true;
  return res;
}
rdResult_t invariant(int a, int b) {
  RD_ENFORCE_EQ(a, b);
  return rdSuccess;
}

TEST(Check, MacrosPropagateStatusAndMessages) {
  EXPECT_EQ(caller(), rdTimeout);
  EXPECT_STREQ(rdGetLastError(), "peer 3 did not answer");
  bool cleaned = false;
  EXPECT_EQ(withCleanup(&cleaned), rdTimeout);
  EXPECT_TRUE(cleaned);
  EXPECT_EQ(invariant(2, 2), rdSuccess);
  EXPECT_EQ(invariant(2, 3), rdInternalError);
  EXPECT_NE(lastError().find("a == b failed (2 vs 3)"), std::string::npos) << lastError();
}

TEST(Status, LongMessagesAreCutAndMarked) {
  setError(rdInternalError, std::string(10000, 'x'));
  std::string kept = lastError();
  EXPECT_EQ(kept.size(), 4095u);
  EXPECT_EQ(kept.substr(kept.size() - 6), " [...]");
  clearLastError();
  EXPECT_STREQ(rdGetLastError(), "");
}

// Records an error from a thread_local destructor that runs after the error buffer's own
// thread-exit cleanup would have (thread_local destructors run in reverse order of construction).
struct ErrorAtThreadExit {
  std::string* seen;
  ~ErrorAtThreadExit() {
    setError(rdInvalidUsage, "recorded while the thread exits");
    *seen = lastError();
  }
};

TEST(Status, ErrorsCanBeRecordedWhileAThreadExits) {
  std::string seen;
  std::thread([&] {
    thread_local ErrorAtThreadExit guard{nullptr};
    guard.seen = &seen;
    setError(rdTimeout, "first error of the thread");  // touches the buffer after the guard
  }).join();
  EXPECT_EQ(seen, "recorded while the thread exits");
}

TEST(Status, EveryCodeHasText) {
  for (int s = 1; s >= -13; --s) {
    EXPECT_STRNE(rdGetErrorString(static_cast<rdResult_t>(s)), "unknown status") << s;
  }
  EXPECT_STREQ(rdGetErrorString(static_cast<rdResult_t>(-14)), "unknown status");
}

}  // namespace
}  // namespace rd
