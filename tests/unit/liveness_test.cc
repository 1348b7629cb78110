// SPDX-License-Identifier: BSD-3-Clause
// SilenceWatch (transport/liveness.h): an observer's own hold-ups are credited to its peers'
// silence, its normal pace is not, and a credit never moves a peer's last word into the future.
#include <gtest/gtest.h>

#include <chrono>

#include "transport/liveness.h"

namespace rd::transport {
namespace {

using std::chrono::milliseconds;

TEST(SilenceWatch, LooksAtItsPaceCreditNothing) {
  SilenceWatch watch;
  Clock::time_point t = Clock::now();
  for (int i = 0; i < 50; ++i) {
    t += kTickInterval + milliseconds(i % 3 == 0 ? 150 : 0);  // ticks, some of them late
    EXPECT_EQ(watch.look(t), Clock::duration{0});
  }
  EXPECT_EQ(watch.stalled(), Clock::duration{0});
}

TEST(SilenceWatch, AHoldUpIsCreditedLessOneTick) {
  SilenceWatch watch;
  Clock::time_point t = Clock::now();
  watch.look(t);
  t += milliseconds(2000);
  EXPECT_EQ(watch.look(t), milliseconds(2000) - kTickInterval);
  t += kTickInterval;
  EXPECT_EQ(watch.look(t), Clock::duration{0});  // back at its pace
  t += milliseconds(500);
  watch.look(t);
  EXPECT_EQ(watch.stalled(), milliseconds(2000 + 500) - 2 * kTickInterval);
}

TEST(SilenceWatch, AHoldUpBeforeTheFirstLookCounts) {
  SilenceWatch watch;  // made now: the first look a second later was held up
  EXPECT_GE(watch.look(Clock::now() + milliseconds(1000)), milliseconds(1000) - kTickInterval);
}

TEST(SilenceWatch, ACreditNeverPassesNow) {
  const Clock::time_point now = Clock::now();
  Clock::time_point heard = now - milliseconds(300);
  SilenceWatch::credit(&heard, milliseconds(200), now);
  EXPECT_EQ(heard, now - milliseconds(100));
  SilenceWatch::credit(&heard, milliseconds(5000), now);
  EXPECT_EQ(heard, now);
  SilenceWatch::credit(&heard, Clock::duration{0}, now + milliseconds(10));
  EXPECT_EQ(heard, now);
}

}  // namespace
}  // namespace rd::transport
