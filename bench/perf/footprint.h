// SPDX-License-Identifier: BSD-3-Clause
// What one rank costs its host, for the scale benchmarks (bench/scale/growth.sh): how long its
// joins took, its peak resident memory, its open files and sockets, its threads. rd_perf writes
// it when asked (--footprint FILE), one line per rank appended to the same file.
#pragma once

#include <string>

namespace rd::perf {

/** A process's cost, read from /proc/self when the run ends. */
struct Footprint {
  int rank = 0;
  int nranks = 0;
  int communicators = 0;  // communicators this process joined
  double join_ms = 0;     // wall time of all its joins, rendezvous included
  long peak_rss_kib = 0;  // VmHWM
  int open_files = 0;     // entries of /proc/self/fd
  int sockets = 0;        // of which sockets
  int threads = 0;
};

/** Fills the /proc fields of @p f (memory, files, sockets, threads). */
void readProcessCost(Footprint* f);

/**
 * Appends @p f as one "key=value ..." line to @p path with a single write, so ranks that share
 * the file do not interleave. False (errno set) when it cannot.
 */
bool appendFootprint(const std::string& path, const Footprint& f);

}  // namespace rd::perf
