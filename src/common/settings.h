// SPDX-License-Identifier: BSD-3-Clause
// The one table of libreduce settings. Every setting has a name, an environment variable
// (LIBREDUCE_<NAME>), a default and a description; reduce-info prints them all. Code reads
// settings only through this table, never with a stray getenv.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>

#include "libreduce/reduce.h"

namespace rd::settings {

enum class Id : int {
  kLogLevel,
  kCpuIsa,
  kKernelThreads,
  kKernelSplitBytes,
  kKernelStreamBytes,
  kReducers,
  kSecret,
  kSecretFile,
  kCommId,
  kRank,
  kWorldSize,
  kAlgo,
  kChunkBytes,
  kWindow,
  kTimeoutMs,
  kConnectTimeoutMs,
  kHeartbeatMs,
  kFailover,
  kEventsFile,
  kDeterministic,
  kListenHost,
  kSpinUs,
  kBootstrapTimeoutMs,
  kBootstrapPending,
  kEagerBytes,
  kIngressBytes,
  kReducerThreads,
  kReducerLanes,
  kReducerMaxCommunicators,
  kReducerMaxRanks,
  kReducerCommMemoryPercent,
  kWireDtype,
  kNcclTuner,
  kNcclCollNetLatencyUs,
  kNcclChunkBytes,
  kMetrics,
  kMetricsIntervalMs,
  kTrace,
  kTraceSpans,
  kCount
};

enum class Kind { kString, kInt, kSize, kChoice };

/** An open end of a kInt / kSize range. */
inline constexpr int64_t kUnbounded = INT64_MAX;

struct Setting {
  Id id;
  const char* name;  // short name, e.g. "kernel_threads"
  const char* env;   // environment variable, e.g. "LIBREDUCE_KERNEL_THREADS"
  Kind kind;
  const char* default_value;  // as text, parsed like an environment value
  const char* description;
  int64_t min = 0;                       // kInt / kSize: smallest value
  int64_t max = kUnbounded;              // kInt / kSize: largest value (kUnbounded: none)
  std::span<const char* const> choices;  // kChoice: the allowed values, lower case
  // kInt / kSize: "auto" (and 0) are allowed too and read as 0: the library chooses per use.
  bool has_auto = false;
};

/** What a value may be, for messages and docs: "4K..64M", "auto|rs|ring", "auto|1..64", "any". */
std::string allowedText(const Setting& s);

/** Every setting, in table order. */
std::span<const Setting> all();

/** The entry for @p id. */
const Setting& info(Id id);

/** True when the environment variable of @p id is set (non-empty). */
bool isSetInEnv(Id id);

/** The environment value of @p id if set, else its default, as text. */
std::string rawValue(Id id);

/** Reads an integer setting; rdInvalidArgument naming the variable when malformed/out of range. */
rdResult_t readInt(Id id, int64_t* out);

/** Reads a size setting: a byte count with optional K/M/G/T suffix (powers of 1024). */
rdResult_t readSize(Id id, uint64_t* out);

/** Reads a choice setting, lower-cased; rdInvalidArgument listing the allowed values. */
rdResult_t readChoice(Id id, std::string* out);

/**
 * Checks @p text as a value of @p id the way the read functions check an environment value (same
 * parsing, ranges and messages, naming the variable); string settings accept any text. For values
 * that come from elsewhere than the environment, e.g. a reducectl job spec.
 */
rdResult_t checkValue(Id id, const std::string& text);

/** Parses "64", "64K", "1M", "2g" into bytes; false on malformed text or overflow. */
bool parseSize(const std::string& text, uint64_t* out);

}  // namespace rd::settings
