// SPDX-License-Identifier: BSD-3-Clause
// The few check macros libreduce code uses. A failed check logs "file:line -> status" at debug
// level, so a failure reads as a trace from the root cause up; invariants print their values.
#pragma once

#include "common/log.h"
#include "common/status.h"

/** Evaluates a call returning rdResult_t; returns its status from the caller on error. */
#define RD_CHECK(call)                                                  \
  do {                                                                  \
    rdResult_t rd_check_res_ = (call);                                  \
    if (rd_check_res_ < 0) {                                            \
      RD_LOG_DEBUG("%s -> %s", #call, rdGetErrorString(rd_check_res_)); \
      return rd_check_res_;                                             \
    }                                                                   \
  } while (0)

/** Like RD_CHECK but stores the status in @p res and jumps to @p label for cleanup. */
#define RD_CHECK_GOTO(call, res, label)                       \
  do {                                                        \
    (res) = (call);                                           \
    if ((res) < 0) {                                          \
      RD_LOG_DEBUG("%s -> %s", #call, rdGetErrorString(res)); \
      goto label;                                             \
    }                                                         \
  } while (0)

/** Invariant: @p a == @p b (integers). On failure records an internal error with both values. */
#define RD_ENFORCE_EQ(a, b)                                                                      \
  do {                                                                                           \
    auto rd_a_ = (a);                                                                            \
    auto rd_b_ = (b);                                                                            \
    if (!(rd_a_ == rd_b_)) {                                                                     \
      return ::rd::setErrorf(rdInternalError, "%s:%d: invariant %s == %s failed (%lld vs %lld)", \
                             __FILE__, __LINE__, #a, #b, static_cast<long long>(rd_a_),          \
                             static_cast<long long>(rd_b_));                                     \
    }                                                                                            \
  } while (0)
