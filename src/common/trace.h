// SPDX-License-Identifier: BSD-3-Clause
// A per-process timeline, when LIBREDUCE_TRACE names a directory: every operation of a worker
// and every chunk a reducer serves, with their phases, as spans in Chrome's trace-event format
// (a JSON array of "X" events, as Horovod's timeline writes; chrome://tracing and Perfetto load
// it). The spans live in a ring buffer of LIBREDUCE_TRACE_SPANS (the newest are kept), and the
// file is written at exit, on SIGUSR1 (when the program has no handler of its own for it) and
// when a communicator fails, so that a job that hangs or dies can still be read.
//
// Times are the wall clock (CLOCK_REALTIME) in microseconds: the files of one machine line up
// as they are, and those of several machines as well as their clocks agree (reducectl doctor
// measures the skew). `reducectl trace merge` joins a job's files into one.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace rd::trace {

using Clock = std::chrono::steady_clock;

/** One span of the timeline: what it was, when, and what identifies it. */
struct Span {
  const char* name = "";      // static text: "AllReduce", "transfer", "reduce", ...
  const char* category = "";  // static text: "op", "phase", "chunk"
  Clock::time_point begin{}, end{};
  uint32_t track = 0;  // Chrome's thread: a communicator on a worker, a chunk on a reducer
  uint64_t comm = 0;   // the communicator's id
  uint64_t op = 0;     // the operation's number in its communicator (the wire's seq)
  int64_t chunk = -1;  // the chunk's index; -1: a whole operation's span
  uint64_t bytes = 0;
  const char* algorithm = nullptr;  // static text, an operation's: "RS", "RING"
};

class Tracer {
 public:
  /** This process's timeline, started from the settings on first use; null when off. */
  static Tracer* get();

  /** How the process appears in the trace ("rank 0", "reducer HOST:PORT"). */
  void setProcessName(const std::string& name);
  /** How tracks appear: "@p label N" for track N ("rank 3", "chunk 3"). */
  void setTrackLabel(const std::string& label);

  /** Keeps @p span, pushing out the oldest once the ring is full. Any thread. */
  void record(const Span& span);

  /** Writes the file now (replaced whole, atomically); false when it cannot, said in the log. */
  bool flush();

  /** The file this process writes. */
  const std::string& path() const { return path_; }

  /** The trace as JSON text: metadata, then the kept spans in time order. */
  std::string render();

  /** A tracer writing into @p dir that keeps @p capacity spans; for get() and tests. */
  Tracer(const std::string& dir, size_t capacity);

 private:
  double wallMicros(Clock::time_point t) const;

  std::mutex mu_;
  std::vector<Span> ring_;
  size_t next_ = 0;        // where the next span goes
  uint64_t recorded_ = 0;  // spans ever recorded (those past the capacity were pushed out)
  std::string process_name_;
  std::string track_label_ = "track";
  std::string path_;
  std::mutex file_mu_;  // one writer of the file at a time
  int64_t wall_minus_steady_ns_ = 0;
};

/** Writes the timeline now if there is one (a failure, so that it can be read). */
void flushIfOn();

}  // namespace rd::trace
