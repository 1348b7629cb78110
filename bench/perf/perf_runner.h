// SPDX-License-Identifier: BSD-3-Clause
// The measuring loop shared by rd_perf and the baseline programs (gloo_perf, mpi_perf): the
// nccl-tests all_reduce_perf flags, the same sweep, timing, verification and table, so every
// system's figures are measured the same way. A program supplies a Backend; runPerf does the rest.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "libreduce/reduce.h"

namespace rd::perf {

/** Collectives a backend may support. */
enum class Coll { kAllReduce, kReduceScatter, kAllGather, kBroadcast };
const char* collName(Coll c);

/** The nccl-tests flags (see usage()). Sizes are bytes of the full buffer. */
struct Options {
  size_t min_bytes = 32 << 20;
  size_t max_bytes = 32 << 20;
  double factor = 2;      // -f: multiply each step (unless step_bytes is set)
  size_t step_bytes = 0;  // -i: fixed increment
  std::vector<rdDataType_t> dtypes = {rdFloat32};
  std::vector<rdRedOp_t> ops = {rdSum};
  int iters = 20;         // -n: timed iterations
  int warmup = 5;         // -w
  int check = 1;          // -c: verify (one checked run per size and placement); 0 = off
  int average = 1;        // -a: 0 = rank 0's time, 1 = mean, 2 = min, 3 = max over ranks
  int root = 0;           // -r: broadcast root
  bool blocking = true;   // -z (always blocking here; accepted for compatibility)
  std::string json_path;  // -J: rank 0 writes every measurement as JSON
  Coll coll = Coll::kAllReduce;
  std::vector<std::string> extra;  // flags the program handles itself (e.g. --algo)
  std::string program = "perf";    // prefix of error messages ("rd_perf", "gloo_perf" ...)
};

/** Prints the flags shared by every perf program. */
void usage(const char* program, const char* extra_help);

/**
 * Parses argv. Flags listed in @p extra_flags (each takes one value, e.g. "--algo") are kept in
 * Options::extra as flag, value pairs. Returns false (with @p error set) on a bad flag.
 */
bool parseOptions(int argc, char** argv, const std::vector<std::string>& extra_flags, Options* out,
                  std::string* error);

/**
 * parseOptions for a program's main(): sets Options::program; on --help prints the usage (with
 * @p extra_help) and returns 0, on a bad flag the usage and "<program>: <error>" and returns 2;
 * returns -1 when the program goes on. Prints nothing unless @p print (e.g. only rank 0).
 */
int parseCommandLine(int argc, char** argv, const char* program,
                     const std::vector<std::string>& extra_flags, const char* extra_help,
                     bool print, Options* out);

/** One system under test. Every call is collective over all ranks and blocks until done. */
class Backend {
 public:
  virtual ~Backend() = default;
  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  /** Name printed in the header and the JSON ("libreduce rs", "gloo ring" ...). */
  virtual std::string name() const = 0;
  /** Whether this backend can run @p coll on @p dtype with @p op (others are skipped). */
  virtual bool supports(Coll coll, rdDataType_t dtype, rdRedOp_t op) const = 0;
  /**
   * Runs one collective. count = elements per rank's input for all-reduce / broadcast, per
   * rank's share for reduce-scatter (output) and all-gather (input). Returns false on failure
   * with @p error set.
   */
  virtual bool run(Coll coll, const void* send, void* recv, size_t count, rdDataType_t dtype,
                   rdRedOp_t op, int root, std::string* error) = 0;
  /** Combines one double over all ranks: 0 sum, 1 min, 2 max (for times and #wrong). */
  virtual double combine(double value, int how) = 0;
  /**
   * The type results of @p dtype are last rounded to: @p dtype, or what a backend that
   * compresses sends it as (the verification's tolerance for avg).
   */
  virtual rdDataType_t precision(rdDataType_t dtype) const { return dtype; }
};

/** nccl-tests' bus bandwidth factor of @p c at @p n ranks: what a point-to-point algorithm moves
 * per link, per byte of the buffer (busbw = algbw x this). */
double busFactor(Coll c, int n);

/** The sizes a sweep visits: -b to -e by -f (or -i). */
std::vector<size_t> sweepSizes(const Options& options);

/** @p value of this rank combined over the ranks as -a says (0 rank 0's, 1 mean, 2 min, 3 max). */
double aggregateOverRanks(Backend& backend, double value, int average);

/**
 * Runs the sweep and prints the nccl-tests table on rank 0; returns the process exit code (2,
 * said on rank 0, for a broadcast root that is not a rank).
 */
int runPerf(Backend& backend, const Options& options);

/** RANK / WORLD_SIZE from torchrun-style, Open MPI or PMI variables; false when absent. */
bool rankFromEnvironment(int* rank, int* nranks);

}  // namespace rd::perf
