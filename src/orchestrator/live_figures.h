// SPDX-License-Identifier: BSD-3-Clause
// The figures `reducectl status` shows of a local job: its reducers' live from their metrics
// endpoints, its ranks' from the metrics textfiles they write (LIBREDUCE_METRICS=DIR, which a
// local job gives each rank a directory for unless its spec or environment says otherwise).
#pragma once

#include <string>

namespace rd::orch {

/** The file naming each built-in reducer's metrics endpoint: "NAME HOST:PORT" lines. */
std::string reducerMetricsList(const std::string& output_dir);

/** The directory @p replica (a rank: "workerpool0-0", ...) writes its metrics textfile into. */
std::string rankMetricsDir(const std::string& output_dir, const std::string& replica);

/** How often ranks rewrite that file, for status to be current (the library's default: 10 s). */
constexpr const char* kRankMetricsIntervalMs = "2000";

/**
 * Prints a line per reducer (when @p live: scraped now) and per rank (its newest textfile, with
 * its age) of the job in @p output_dir, indented for `reducectl status`.
 */
void showLiveFigures(const std::string& output_dir, bool live);

}  // namespace rd::orch
