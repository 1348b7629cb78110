// SPDX-License-Identifier: BSD-3-Clause
// rd_worker_check: one rank of a multi-process test. Creates a communicator from the environment
// (RANK, WORLD_SIZE, LIBREDUCE_REDUCERS, LIBREDUCE_COMM_ID ...), runs every requested collective
// x dtype x op x count x placement, and checks each result against rdLocalReduce over all ranks'
// inputs, which every rank can regenerate. Prints one line per failure and a summary:
//   worker <rank>: <checks> checks, <failed> failed
// Exit status 0 when every check passed, 1 on a wrong result, 2 on an API error (its message is
// printed as "worker <rank>: error: ...").
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "libreduce/reduce.h"
#include "perf/exact_data.h"

namespace {

struct Options {
  std::vector<size_t> counts = {0, 1, 7, 1000, (1u << 20) + 3};
  std::vector<int> dtypes;  // empty = all
  std::vector<int> ops;     // empty = all
  std::vector<std::string> colls = {"allreduce"};
  std::string placement = "both";  // both | in | out
  bool random = false;             // random floats, tolerance check
  int iters = 1;
  int hang_after = -1;  // fault injection: stop calling after this many operations
  bool print_hash = false;
  bool constant = false;    // every element = rank + 1 + a shift per operation (huge buffers)
  int abort_after_ms = -1;  // post one all-reduce, abort after this long, time abort + destroy
  // NCCL-style init: rank 0 makes a unique id for these reducers and writes it to id_file;
  // every rank joins with it (LIBREDUCE_REDUCERS is not read).
  std::string id_file;
  std::string id_reducers;
  // Print "worker R: N operations done" after each of these many (a comma-separated list).
  std::vector<int> announce_after;
  bool report_times = false;  // print the median and the slowest operations' times at the end
  // Print the median time of the collective calls alone (no input or check) in each of these
  // ranges of operations ("0-99,400-499"), to compare rates before and after a fault.
  std::vector<std::pair<int, int>> report_windows;
  // Write every collective call's time (ms, one per line) here; "%r" becomes the rank.
  std::string call_times_file;
  // On an API error: wait until this file exists, destroy the communicator, say how long it
  // took, exit 2. Without it the process leaves at once.
  std::string destroy_after_file;
};

// Waits (bounded) until @p path exists; false when it did not appear in time.
bool waitForFile(const std::string& path, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (access(path.c_str(), F_OK) != 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

int dtypeByName(const std::string& n) {
  for (int d = 0; d < rdNumDataTypes; ++d) {
    if (n == rdDataTypeName(static_cast<rdDataType_t>(d))) return d;
  }
  std::fprintf(stderr, "unknown dtype %s\n", n.c_str());
  std::exit(2);
}

int opByName(const std::string& n) {
  for (int o = 0; o < rdNumRedOps; ++o) {
    if (n == rdRedOpName(static_cast<rdRedOp_t>(o))) return o;
  }
  std::fprintf(stderr, "unknown op %s\n", n.c_str());
  std::exit(2);
}

// Exactly representable inputs whose reduction is exact in any order (shared with rd_perf).
using rd::perf::exactValue;
using rd::perf::isFloat;
using rd::perf::load;
using rd::perf::store;

// A value uniform in [-1, 1) for each @p key (a hash): several times cheaper than a generator
// per buffer, which dominated the multi-megabyte random checks.
double uniformAt(uint64_t key) {
  return static_cast<double>(rd::perf::mix(key) >> 11) * 0x1.0p-52 - 1.0;
}

// @p rank's input of the operation numbered @p seq: random floats, or exact data under the
// operation's salt (@p exact_salt).
void fill(std::vector<char>* buf, int rank, size_t count, rdDataType_t d, rdRedOp_t op, bool random,
          uint64_t seq, uint64_t exact_salt) {
  buf->assign(count * rdDataTypeSize(d) + 1, 0);
  const uint64_t seed = (seq * 1000003 + static_cast<uint64_t>(rank)) << 32;
  for (size_t i = 0; i < count; ++i) {
    store(buf->data(), i,
          random && isFloat(d) ? uniformAt(seed + i) : exactValue(rank, i, d, op, exact_salt), d);
  }
}

// FNV-1a of @p bytes at @p data, continuing from @p h.
constexpr uint64_t kFnvBasis = 1469598103934665603ull;
uint64_t fnv1a(const void* data, size_t bytes, uint64_t h = kFnvBasis) {
  for (size_t i = 0; i < bytes; ++i) {
    h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  }
  return h;
}

// What every rank of a communicator agrees on to salt its data: its id, when it has one.
uint64_t commSalt() {
  const char* id = std::getenv("LIBREDUCE_COMM_ID");
  return id != nullptr ? fnv1a(id, std::strlen(id)) : kFnvBasis;
}

struct Check {
  Options o;
  rdComm_t comm = nullptr;
  int rank = 0, nranks = 1;
  long checks = 0, failed = 0;
  std::vector<double> call_ms;  // per operation: the collective call alone

  // Runs one collective call, timing it into call_ms.
  template <typename Call>
  rdResult_t timed(Call call) {
    auto began = std::chrono::steady_clock::now();
    rdResult_t st = call();
    call_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began)
            .count());
    return st;
  }
  uint64_t salt = 0;  // operations run so far (the current one's number)
  const uint64_t comm_salt = commSalt();
  // The current operation's exact-data salt: no two consecutive operations have the same data.
  uint64_t exactSalt() const { return rd::perf::opSalt(comm_salt, salt); }

  void apiError(rdResult_t st, const char* what) {
    std::printf("worker %d: error: %s: %s: %s\n", rank, what, rdGetErrorString(st),
                rdGetLastError());
    std::fflush(stdout);
    if (!o.destroy_after_file.empty() && comm != nullptr) {
      if (!waitForFile(o.destroy_after_file, std::chrono::seconds(60))) std::_Exit(4);
      auto t0 = std::chrono::steady_clock::now();
      rdCommDestroy(comm);
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - t0)
                    .count();
      std::printf("worker %d: destroyed in %lld ms\n", rank, static_cast<long long>(ms));
      std::fflush(stdout);
      std::exit(2);
    }
    std::_Exit(2);  // leave at once: the communicator may still wait on a dead peer
  }

  // rank 0 makes the id and publishes it (written aside, then renamed: never read half-done).
  void initFromUniqueId() {
    rdUniqueId id{};
    if (rank == 0) {
      const char* secret = std::getenv("LIBREDUCE_SECRET");
      rdResult_t st = rdGetUniqueIdFor(o.id_reducers.c_str(), secret, &id);
      if (st != rdSuccess) apiError(st, "rdGetUniqueIdFor");
      std::string tmp = o.id_file + ".tmp";
      FILE* f = std::fopen(tmp.c_str(), "wb");
      if (f == nullptr || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0 ||
          std::rename(tmp.c_str(), o.id_file.c_str()) != 0) {
        std::printf("worker 0: error: cannot write %s\n", o.id_file.c_str());
        std::_Exit(2);
      }
    } else {
      FILE* f = waitForFile(o.id_file, std::chrono::seconds(30))
                    ? std::fopen(o.id_file.c_str(), "rb")
                    : nullptr;
      if (f == nullptr || std::fread(&id, sizeof id, 1, f) != 1) {
        std::printf("worker %d: error: no unique id in %s\n", rank, o.id_file.c_str());
        std::_Exit(2);
      }
      std::fclose(f);
    }
    rdResult_t st = rdCommInitRank(&comm, nranks, id, rank);
    if (st != rdSuccess) apiError(st, "rdCommInitRank");
  }

  // Compares @p got (count elements) to @p want; returns wrong elements. Random floats are
  // checked against the exact value with the rounding error any summation order can make
  // (random_exact / random_bound, from expectedReduction; @p want points into its result).
  size_t compare(const void* got, const void* want, size_t count, rdDataType_t d, rdRedOp_t op) {
    size_t esize = rdDataTypeSize(d), wrong = 0;
    bool tolerant = o.random && isFloat(d) && (op == rdSum || op == rdAvg || op == rdProd);
    const size_t first =
        tolerant
            ? static_cast<size_t>(static_cast<const char*>(want) - last_exact_want.data()) / esize
            : 0;
    for (size_t i = 0; i < count; ++i) {
      if (tolerant) {
        const auto error =
            static_cast<double>(std::fabs(load(got, i, d) - random_exact[first + i]));
        if (error / random_bound[first + i] > worst_error_ratio) {
          worst_error_ratio = error / random_bound[first + i];
          worst_error_of = std::string(rdDataTypeName(d)) + " " + rdRedOpName(op);
        }
        if (error > random_bound[first + i]) ++wrong;
      } else if (std::memcmp(static_cast<const char*>(got) + i * esize,
                             static_cast<const char*>(want) + i * esize, esize) != 0) {
        if (wrong == 0 && std::getenv("RD_CHECK_VERBOSE") != nullptr) {
          std::printf("worker %d: first wrong element %zu: got %g want %g\n", rank, i,
                      load(got, i, d), load(want, i, d));
        }
        ++wrong;
      }
    }
    return wrong;
  }

  // Random floats: each element's exact reduction (in long double, of the inputs as stored: its
  // 64-bit significand leaves float64's rounding visible) and the
  // most a reduction in @p d can differ from it in any order: n - 1 roundings of partial sums no
  // larger than the sum of magnitudes (products: n - 1 relative roundings), one more for the
  // store, the average's scaling, and float16's subnormal spacing (small products).
  std::vector<long double> random_exact;
  std::vector<double> random_bound;
  double worst_error_ratio = 0;  // the largest error seen over its bound (printed at the end)
  std::string worst_error_of;    // in which dtype and operator

  void randomBounds(const std::vector<std::vector<char>>& inputs, size_t count, rdDataType_t d,
                    rdRedOp_t op) {
    const double u = d == rdFloat64   ? 0x1p-53
                     : d == rdFloat32 ? 0x1p-24
                     : d == rdFloat16 ? 0x1p-11
                                      : 0x1p-8;
    const double tiny = d == rdFloat16 ? 0x1p-24 : 0;
    const double n = nranks;
    random_exact.assign(count, 0);
    random_bound.assign(count, 0);
    for (size_t i = 0; i < count; ++i) {
      long double sum = 0, product = 1;
      double magnitude = 0;
      for (const auto& in : inputs) {
        const double x = load(in.data(), i, d);
        sum += x;
        magnitude += std::fabs(x);
        product *= x;
      }
      const auto mean = static_cast<double>(sum / n);
      if (op == rdProd) {
        random_exact[i] = product;
        random_bound[i] = (n + 1) * u * std::fabs(static_cast<double>(product)) + (n + 1) * tiny;
      } else if (op == rdAvg) {
        random_exact[i] = sum / n;
        random_bound[i] = (n + 1) * u * magnitude / n + 2 * u * std::fabs(mean) + 2 * tiny;
      } else {
        random_exact[i] = sum;
        random_bound[i] = (n + 1) * u * magnitude + tiny;
      }
    }
  }

  uint64_t hash = kFnvBasis;
  void mix(const void* data, size_t bytes) { hash = fnv1a(data, bytes, hash); }

  void report(const char* coll, rdDataType_t d, rdRedOp_t op, size_t count, bool in_place,
              size_t wrong) {
    ++checks;
    if (wrong == 0) return;
    ++failed;
    std::printf("worker %d: FAIL %s %s %s count=%zu %s: %zu wrong\n", rank, coll, rdDataTypeName(d),
                rdRedOpName(op), count, in_place ? "in-place" : "out-of-place", wrong);
  }

  // The last exact reduction computed: exact inputs do not change between iterations, so a
  // run of the same operation (a soak) regenerates nothing.
  struct ExactKey {
    size_t count = 0;
    rdDataType_t d = rdNumDataTypes;
    rdRedOp_t op = rdNumRedOps;
    bool operator==(const ExactKey&) const = default;
  };
  ExactKey last_exact;
  std::vector<char> last_exact_want;

  // Reduction of every rank's input of the current operation (regenerated here), in rank order
  // like the kernels: @p count elements from the pointer on. Salted exact data are the unsalted
  // data further along, so the unsalted reduction of kSaltSpan more elements serves every
  // operation of a kind and is computed once.
  const char* expectedReduction(size_t count, rdDataType_t d, rdRedOp_t op) {
    const bool exact = !(o.random && isFloat(d));
    const size_t span = exact ? count + rd::perf::kSaltSpan : count;
    const size_t offset = exact ? exactSalt() * rdDataTypeSize(d) : 0;
    if (exact && last_exact == ExactKey{count, d, op}) return last_exact_want.data() + offset;
    std::vector<std::vector<char>> inputs(nranks);
    std::vector<const void*> srcs;
    for (int r = 0; r < nranks; ++r) {
      fill(&inputs[r], r, span, d, op, o.random, salt, 0);
      srcs.push_back(inputs[r].data());
    }
    last_exact = exact ? ExactKey{count, d, op} : ExactKey{};
    if (!exact) randomBounds(inputs, span, d, op);
    last_exact_want.assign(span * rdDataTypeSize(d) + 1, 0);
    rdResult_t st = rdLocalReduce(srcs.data(), nranks, last_exact_want.data(), span, d, op);
    if (st != rdSuccess) apiError(st, "rdLocalReduce");
    return last_exact_want.data() + offset;
  }

  // Huge buffers: inputs rank + 1 + the operation's shift everywhere, so the sum is known without
  // regenerating inputs and still differs from the operation before's.
  void runConstant(size_t count) {
    const int shift = static_cast<int>(++salt % 7);
    std::vector<float> buf(count, static_cast<float>(rank + 1 + shift));
    rdResult_t st = rdAllReduce(buf.data(), buf.data(), count, rdFloat32, rdSum, comm);
    if (st != rdSuccess) apiError(st, "rdAllReduce");
    const auto want = static_cast<float>(nranks * (nranks + 1) / 2 + nranks * shift);
    size_t wrong = 0;
    for (float v : buf) wrong += v != want ? 1 : 0;
    report("allreduce-constant", rdFloat32, rdSum, count, true, wrong);
  }

  void runAbort(int after_ms) {
    std::vector<float> buf(1 << 20, 1.0f);
    rdRequest_t req = nullptr;
    rdResult_t st =
        rdAllReduceAsync(buf.data(), buf.data(), buf.size(), rdFloat32, rdSum, comm, &req);
    if (st != rdSuccess) apiError(st, "rdAllReduceAsync");
    std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
    auto t0 = std::chrono::steady_clock::now();
    rdCommAbort(comm);
    st = rdRequestWait(req, 5000);
    auto t1 = std::chrono::steady_clock::now();
    rdRequestFree(req);
    rdCommDestroy(comm);
    auto t2 = std::chrono::steady_clock::now();
    auto ms = [](auto a, auto b) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
    };
    std::printf("worker %d: abort %lld ms (request: %s), destroy %lld ms\n", rank,
                static_cast<long long>(ms(t0, t1)), rdGetErrorString(st),
                static_cast<long long>(ms(t1, t2)));
    std::fflush(stdout);
  }

  void run(const std::string& coll, size_t count, rdDataType_t d, rdRedOp_t op, bool in_place) {
    ++salt;
    size_t esize = rdDataTypeSize(d);
    std::vector<char> mine;
    fill(&mine, rank, coll == "reducescatter" ? count * nranks : count, d, op, o.random, salt,
         exactSalt());
    rdResult_t st = rdSuccess;
    if (coll == "allreduce") {
      std::vector<char> out(mine.size());
      void* dst = in_place ? mine.data() : out.data();
      st = timed([&] { return rdAllReduce(mine.data(), dst, count, d, op, comm); });
      if (st != rdSuccess) apiError(st, "rdAllReduce");
      mix(dst, count * esize);
      report("allreduce", d, op, count, in_place,
             compare(dst, expectedReduction(count, d, op), count, d, op));
    } else if (coll == "reducescatter") {
      std::vector<char> out(count * esize + 1);
      void* dst = in_place ? mine.data() + static_cast<size_t>(rank) * count * esize : out.data();
      st = timed([&] { return rdReduceScatter(mine.data(), dst, count, d, op, comm); });
      if (st != rdSuccess) apiError(st, "rdReduceScatter");
      const char* want = expectedReduction(count * nranks, d, op);
      report("reducescatter", d, op, count, in_place,
             compare(dst, want + static_cast<size_t>(rank) * count * esize, count, d, op));
    } else if (coll == "allgather") {
      std::vector<char> out(count * nranks * esize + 1);
      const void* src = mine.data();
      if (in_place) {
        std::memcpy(out.data() + static_cast<size_t>(rank) * count * esize, mine.data(),
                    count * esize);
        src = out.data() + static_cast<size_t>(rank) * count * esize;
      }
      st = timed([&] { return rdAllGather(src, out.data(), count, d, comm); });
      if (st != rdSuccess) apiError(st, "rdAllGather");
      size_t wrong = 0;
      for (int r = 0; r < nranks; ++r) {
        std::vector<char> theirs;
        fill(&theirs, r, count, d, op, o.random, salt, exactSalt());
        wrong += compare(out.data() + static_cast<size_t>(r) * count * esize, theirs.data(), count,
                         d, rdMax);
      }
      report("allgather", d, op, count, in_place, wrong);
    } else if (coll == "broadcast") {
      int root = static_cast<int>(salt % static_cast<uint64_t>(nranks));
      std::vector<char> out(mine.size());
      void* dst = in_place ? mine.data() : out.data();
      st = timed([&] { return rdBroadcast(mine.data(), dst, count, d, root, comm); });
      if (st != rdSuccess) apiError(st, "rdBroadcast");
      std::vector<char> theirs;
      fill(&theirs, root, count, d, op, o.random, salt, exactSalt());
      report("broadcast", d, op, count, in_place, compare(dst, theirs.data(), count, d, rdMax));
    } else if (coll == "barrier") {
      st = timed([&] { return rdBarrier(comm); });
      if (st != rdSuccess) apiError(st, "rdBarrier");
      ++checks;
    }
  }
};

// "worker R: operations A-B: median X ms" per window: the collective calls alone.
void reportWindows(int rank, const std::vector<std::pair<int, int>>& windows,
                   const std::vector<double>& call_ms) {
  for (const auto& [from, to] : windows) {
    if (from < 0 || to < from || static_cast<size_t>(to) >= call_ms.size()) continue;
    std::vector<double> w(call_ms.begin() + from, call_ms.begin() + to + 1);
    std::sort(w.begin(), w.end());
    std::printf("worker %d: operations %d-%d: median %.2f ms\n", rank, from, to, w[w.size() / 2]);
  }
  std::fflush(stdout);
}

void writeCallTimes(std::string path, int rank, const std::vector<double>& call_ms) {
  auto at = path.find("%r");
  if (at != std::string::npos) path.replace(at, 2, std::to_string(rank));
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return;
  }
  for (double ms : call_ms) std::fprintf(f, "%.4f\n", ms);
  std::fclose(f);
}

// "worker R: median X ms; slowest: #i Y ms, ...": what a fault cost, next to a normal operation.
void reportTimes(int rank, std::vector<std::pair<double, int>> times) {
  std::sort(times.begin(), times.end());
  std::printf("worker %d: median %.1f ms; slowest:", rank, times[times.size() / 2].first);
  for (size_t i = 0; i < std::min<size_t>(3, times.size()); ++i) {
    const auto& [ms, index] = times[times.size() - 1 - i];
    std::printf(" #%d %.1f ms", index, ms);
  }
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  // Buffers of every operation are allocated and freed again: keep the freed memory in the heap
  // (glibc would unmap or trim it and fault it in again each time, most of a soak's CPU).
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  Check c;
  Options& o = c.o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--counts") {
      o.counts.clear();
      for (auto& s : split(v)) o.counts.push_back(std::strtoull(s.c_str(), nullptr, 0));
    } else if (a == "--dtypes") {
      for (auto& s : split(v)) o.dtypes.push_back(dtypeByName(s));
    } else if (a == "--ops") {
      for (auto& s : split(v)) o.ops.push_back(opByName(s));
    } else if (a == "--colls") {
      o.colls = split(v);
    } else if (a == "--placement") {
      o.placement = v;
    } else if (a == "--iters") {
      o.iters = std::atoi(v.c_str());
    } else if (a == "--hang-after") {
      o.hang_after = std::atoi(v.c_str());
    } else if (a == "--abort-after-ms") {
      o.abort_after_ms = std::atoi(v.c_str());
    } else if (a == "--id-file") {
      o.id_file = v;
    } else if (a == "--id-reducers") {
      o.id_reducers = v;
    } else if (a == "--announce-after") {
      for (auto& s : split(v)) o.announce_after.push_back(std::atoi(s.c_str()));
    } else if (a == "--call-times") {
      o.call_times_file = v;
    } else if (a == "--report-windows") {
      for (auto& w : split(v)) {
        auto dash = w.find('-');
        o.report_windows.emplace_back(std::atoi(w.c_str()), std::atoi(w.c_str() + dash + 1));
      }
    } else if (a == "--destroy-after-file") {
      o.destroy_after_file = v;
    } else if (a == "--random") {
      o.random = true;
      continue;
    } else if (a == "--constant") {
      o.constant = true;
      continue;
    } else if (a == "--print-hash") {
      o.print_hash = true;
      continue;
    } else if (a == "--report-times") {
      o.report_times = true;
      continue;
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
    ++i;
  }
  if (o.dtypes.empty()) {
    for (int d = 0; d < rdNumDataTypes; ++d) o.dtypes.push_back(d);
  }
  if (o.ops.empty()) {
    for (int op = 0; op < rdNumRedOps; ++op) o.ops.push_back(op);
  }
  c.rank = std::atoi(std::getenv("RANK") ? std::getenv("RANK") : "0");
  if (!o.id_file.empty()) {
    c.nranks = std::atoi(std::getenv("WORLD_SIZE") ? std::getenv("WORLD_SIZE") : "1");
    c.initFromUniqueId();
  } else {
    rdResult_t st = rdCommInitFromEnv(&c.comm);
    if (st != rdSuccess) c.apiError(st, "rdCommInitFromEnv");
  }
  rdCommUserRank(c.comm, &c.rank);
  rdCommCount(c.comm, &c.nranks);
  if (o.abort_after_ms >= 0) {
    c.runAbort(o.abort_after_ms);
    return 0;
  }
  int done_ops = 0;
  std::vector<std::pair<double, int>> times;  // (ms, operation index)
  for (int it = 0; it < o.iters && o.constant; ++it) {
    for (size_t count : o.counts) c.runConstant(count);
  }
  for (int it = 0; it < o.iters && !o.constant; ++it) {
    for (const auto& coll : o.colls) {
      for (size_t count : o.counts) {
        for (int d : o.dtypes) {
          for (int op : o.ops) {
            bool reduces = coll == "allreduce" || coll == "reducescatter";
            if (!reduces && op != o.ops.front()) continue;  // op does not apply
            if (coll == "barrier" && (count != o.counts.front() || d != o.dtypes.front())) continue;
            for (int placement = 0; placement < 2; ++placement) {
              bool in_place = placement == 1;
              if ((o.placement == "in" && !in_place) || (o.placement == "out" && in_place))
                continue;
              if (o.hang_after >= 0 && done_ops == o.hang_after) {
                std::printf("worker %d: stopping before operation %d\n", c.rank, done_ops);
                std::fflush(stdout);
                std::this_thread::sleep_for(std::chrono::hours(1));
              }
              auto began = std::chrono::steady_clock::now();
              c.run(coll, count, static_cast<rdDataType_t>(d), static_cast<rdRedOp_t>(op),
                    in_place);
              times.emplace_back(std::chrono::duration<double, std::milli>(
                                     std::chrono::steady_clock::now() - began)
                                     .count(),
                                 done_ops);
              ++done_ops;
              if (std::find(o.announce_after.begin(), o.announce_after.end(), done_ops) !=
                  o.announce_after.end()) {
                std::printf("worker %d: %d operations done\n", c.rank, done_ops);
                std::fflush(stdout);
              }
            }
          }
        }
      }
    }
  }
  if (o.report_times && !times.empty()) reportTimes(c.rank, times);
  reportWindows(c.rank, o.report_windows, c.call_ms);
  if (!o.call_times_file.empty()) writeCallTimes(o.call_times_file, c.rank, c.call_ms);
  if (o.print_hash)
    std::printf("worker %d: hash %016llx\n", c.rank, static_cast<unsigned long long>(c.hash));
  std::printf("worker %d: %ld checks, %ld failed\n", c.rank, c.checks, c.failed);
  if (c.worst_error_ratio > 0) {
    std::printf("worker %d: largest rounding error %.3f of its bound (%s)\n", c.rank,
                c.worst_error_ratio, c.worst_error_of.c_str());
  }
  std::fflush(stdout);
  rdCommDestroy(c.comm);
  return c.failed == 0 ? 0 : 1;
}
