// SPDX-License-Identifier: BSD-3-Clause
// How soon a test expects a frozen peer to be named. The docs promise: nothing heard from it for
// a heartbeat period (LIBREDUCE_HEARTBEAT_MS), seen at the next progress tick (100 ms). The
// slack is for a loaded 2-core machine; sanitizer builds, several times slower, get a second
// more. Measured 20 runs each (2026-12-06, beside a full build): in-process detection took
// period + 1..102 ms, a worker process named the peer and exited period + 13..197 ms after the
// freeze.
#pragma once

#include <chrono>

#include "transport/progress_engine.h"

namespace rd::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

inline std::chrono::milliseconds detectionBound(std::chrono::milliseconds period,
                                                std::chrono::milliseconds slack) {
  return period + transport::kTickInterval + slack +
         (kSanitized ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(0));
}

}  // namespace rd::test
