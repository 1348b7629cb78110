// SPDX-License-Identifier: BSD-3-Clause
// One rank of the all-reduce demo job. Joins the communicator described by the environment
// (reducectl sets it up: RANK, WORLD_SIZE, LIBREDUCE_REDUCERS, ...), all-reduces
// float32 buffers of growing size, checks every element of every iteration against the value
// computed locally, and rank 0 prints a table. Exit status 0 only when every element was right.
//
//   allreduce_demo [--min-bytes SIZE] [--max-bytes SIZE] [--factor F] [--warmup N] [--iters N]
//
// SIZE takes K, M, G suffixes (powers of 1024). LIBREDUCE_ALGO=rs|ring picks the algorithm.
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "libreduce/reduce.h"

namespace {

struct Options {
  size_t min_bytes = 1u << 10;
  size_t max_bytes = 64u << 20;
  size_t factor = 4;
  int warmup = 2;
  int iters = 5;
};

// --help (problem == nullptr) prints to stdout and succeeds; a bad command line fails with 2.
[[noreturn]] void usage(const char* argv0, const char* problem) {
  if (problem != nullptr) std::fprintf(stderr, "allreduce_demo: %s\n", problem);
  std::fprintf(problem != nullptr ? stderr : stdout,
               "usage: %s [--min-bytes SIZE] [--max-bytes SIZE] [--factor F] [--warmup N] "
               "[--iters N]\n"
               "  SIZE takes K, M, G suffixes (1K = 1024 bytes); defaults 1K, 64M, 4, 2, 5.\n"
               "  Run one copy per rank, e.g. through reducectl (examples/jobs/quickstart.yaml).\n",
               argv0);
  std::exit(problem != nullptr ? 2 : 0);
}

// "64M" -> 67108864. False on anything that is not a plain number with an optional suffix.
bool parseSize(const std::string& text, size_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || errno != 0 || text[0] == '-') return false;
  int shift = 0;
  if (*end != '\0') {
    switch (*end) {
      case 'K':
      case 'k': shift = 10; break;
      case 'M':
      case 'm': shift = 20; break;
      case 'G':
      case 'g': shift = 30; break;
      default: return false;
    }
    if (*++end == 'B' || *end == 'b') ++end;  // also accept "64MB"
    if (*end != '\0') return false;
  }
  if (value > (std::numeric_limits<size_t>::max() >> shift)) return false;
  *out = static_cast<size_t>(value) << shift;
  return true;
}

bool parseInt(const std::string& text, int lo, int hi, int* out) {
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || value < lo || value > hi) return false;
  *out = static_cast<int>(value);
  return true;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") usage(argv[0], nullptr);
    if (i + 1 >= argc) usage(argv[0], ("unknown option or missing value: " + a).c_str());
    const std::string v = argv[++i];
    int factor = 0;
    bool ok = true;
    if (a == "--min-bytes") {
      ok = parseSize(v, &o.min_bytes);
    } else if (a == "--max-bytes") {
      ok = parseSize(v, &o.max_bytes);
    } else if (a == "--factor") {
      ok = parseInt(v, 2, 1024, &factor);
      o.factor = static_cast<size_t>(factor);
    } else if (a == "--warmup") {
      ok = parseInt(v, 0, 1000000, &o.warmup);
    } else if (a == "--iters") {
      ok = parseInt(v, 1, 1000000, &o.iters);
    } else {
      usage(argv[0], ("unknown option " + a).c_str());
    }
    if (!ok) usage(argv[0], ("bad value for " + a + ": " + v).c_str());
  }
  if (o.min_bytes < sizeof(float)) usage(argv[0], "--min-bytes must be at least 4");
  if (o.max_bytes < o.min_bytes) usage(argv[0], "--max-bytes must be at least --min-bytes");
  return o;
}

// Every input is a small integer, so every sum of up to 2^20 ranks is exact in float32 and the
// check is an equality. The value moves with the iteration, so a result left over from the
// previous iteration is caught too.
constexpr int kPeriod = 17;
float inputValue(int rank, size_t index, int iter) {
  return static_cast<float>(static_cast<int>((7u * rank + index + 3u * iter) % kPeriod) - 8);
}

// The expected sum depends only on (index + 3 * iter) % kPeriod: one table of kPeriod sums
// makes the check O(1) per element whatever the number of ranks.
std::array<float, kPeriod> expectedSums(int nranks) {
  std::array<float, kPeriod> sums{};
  for (int k = 0; k < kPeriod; ++k) {
    for (int r = 0; r < nranks; ++r) sums[k] += inputValue(r, static_cast<size_t>(k), 0);
  }
  return sums;
}

// "64 MiB", "1 KiB", "4000 B": sizes in the table are powers of the factor, mostly exact.
std::string humanSize(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  double value = static_cast<double>(bytes);
  while (u < 3 && bytes % (size_t{1} << (10 * (u + 1))) == 0) {
    ++u;
    value = static_cast<double>(bytes >> (10 * u));
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.0f %s", value, units[u]);
  return text;
}

// The algorithm and reducer count are not queryable through the API; they follow from the same
// environment rdCommInitFromEnv read (see docs/settings.md, LIBREDUCE_ALGO).
std::vector<std::string> reducerList() {
  std::vector<std::string> out;
  const char* env = std::getenv("LIBREDUCE_REDUCERS");
  std::string text = env != nullptr ? env : "";
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

std::string algorithmName() {
  const char* env = std::getenv("LIBREDUCE_ALGO");
  return env != nullptr && *env != '\0' ? env : "auto";
}

bool ringAlgorithm(bool have_reducers) {
  std::string algo = algorithmName();
  return algo == "ring" || (algo == "auto" && !have_reducers);
}

// What the table's rows ran: auto with reducers measures rs and ring per size class and keeps
// the faster, so neither name alone would be true.
const char* algorithmText(bool have_reducers) {
  if (ringAlgorithm(have_reducers)) return "ring (workers pass chunks around a ring)";
  if (algorithmName() == "auto") {
    return "auto (per size, the faster of rs through the reducers and ring; LIBREDUCE_ALGO=rs "
           "forces the reducers)";
  }
  return "rs (workers push chunks to the reducers)";
}

// Every failure goes through here, right after the failing call, so rdGetLastError still holds
// that call's message.
int report(int rank, const char* what, rdResult_t status) {
  std::fprintf(stderr, "allreduce_demo: rank %d: %s failed: %s: %s\n", rank, what,
               rdGetErrorString(status), rdGetLastError());
  return 1;
}

// One all-reduce of small values to agree on something (the slowest time, the wrong count).
rdResult_t agree(void* value, rdDataType_t dtype, rdRedOp_t op, rdComm_t comm) {
  return rdAllReduce(value, value, 1, dtype, op, comm);
}

double elapsedUs(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);

  rdComm_t comm = nullptr;
  if (rdResult_t rc = rdCommInitFromEnv(&comm); rc != rdSuccess) {
    const char* rank_env = std::getenv("RANK");
    return report(rank_env != nullptr ? std::atoi(rank_env) : -1, "rdCommInitFromEnv", rc);
  }
  int rank = 0, nranks = 0;
  rdCommUserRank(comm, &rank);
  rdCommCount(comm, &nranks);

  // A communicator without reducers has no barrier; a one-element all-reduce serves instead.
  const std::vector<std::string> reducers = reducerList();
  auto barrier = [&]() {
    if (!reducers.empty()) return rdBarrier(comm);
    float token = 0;
    return rdAllReduce(&token, &token, 1, rdFloat32, rdSum, comm);
  };

  // Fails the job with the library's message; the communicator is torn down either way.
  auto fail = [&](const char* what, rdResult_t status) {
    int rc = report(rank, what, status);
    rdCommDestroy(comm);
    return rc;
  };

  if (rank == 0) {
    int version = 0;
    rdGetVersion(&version);
    std::printf("libreduce %d.%d.%d all-reduce demo: float32 sum, every element checked\n",
                version / 10000, version / 100 % 100, version % 100);
    const bool ring = ringAlgorithm(!reducers.empty());
    std::printf("  algorithm   %s\n", algorithmText(!reducers.empty()));
    std::printf("  workers     %d\n", nranks);
    std::string list;
    for (const auto& r : reducers) list += (list.empty() ? "" : ", ") + r;
    std::printf("  reducers    %zu%s%s%s%s\n", reducers.size(), list.empty() ? "" : "  (",
                list.c_str(), list.empty() ? "" : ")",
                ring && !list.empty() ? ", used only to join and for barriers" : "");
    std::printf(
        "  iterations  %d warm-up + %d timed per size; time = average of the slowest "
        "rank,\n              algbw = size / time (1 GB/s = 1e9 bytes/s)\n\n",
        o.warmup, o.iters);
    std::printf("%10s %12s %12s %12s %8s\n", "size", "count", "time(us)", "algbw(GB/s)", "#wrong");
    std::fflush(stdout);
  }

  const std::array<float, kPeriod> sums = expectedSums(nranks);
  const size_t max_count = o.max_bytes / sizeof(float);
  std::vector<float> send(max_count), recv(max_count);
  uint64_t total_wrong = 0;  // over every rank, size and iteration (the same on every rank)
  uint64_t my_wrong = 0;     // this rank's own count, for its exit status

  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    const size_t count = bytes / sizeof(float);
    uint64_t wrong = 0;
    double timed_us = 0;
    for (int it = 0; it < o.warmup + o.iters; ++it) {
      for (size_t i = 0; i < count; ++i) send[i] = inputValue(rank, i, it);
      // NaN never equals the expected value: an element the library leaves unwritten is wrong.
      std::fill_n(recv.begin(), count, std::numeric_limits<float>::quiet_NaN());

      if (rdResult_t rc = barrier(); rc != rdSuccess) return fail("barrier", rc);
      const auto t0 = std::chrono::steady_clock::now();
      if (rdResult_t rc = rdAllReduce(send.data(), recv.data(), count, rdFloat32, rdSum, comm);
          rc != rdSuccess) {
        return fail(("rdAllReduce of " + humanSize(count * sizeof(float))).c_str(), rc);
      }
      const double us = elapsedUs(t0);
      if (it >= o.warmup) timed_us += us;

      const size_t shift = 3u * static_cast<size_t>(it);
      size_t first_bad = count, bad = 0;
      for (size_t i = 0; i < count; ++i) {
        if (recv[i] != sums[(i + shift) % kPeriod]) {
          if (bad++ == 0) first_bad = i;
        }
      }
      // The first wrong element of each size, as evidence for a bug report.
      if (bad != 0 && wrong == 0) {
        std::fprintf(stderr,
                     "allreduce_demo: rank %d: %s, iteration %d: %zu of %zu elements wrong, "
                     "first [%zu] = %g (expected %g)\n",
                     rank, humanSize(count * sizeof(float)).c_str(), it, bad, count, first_bad,
                     static_cast<double>(recv[first_bad]),
                     static_cast<double>(sums[(first_bad + shift) % kPeriod]));
      }
      wrong += bad;
    }
    my_wrong += wrong;

    // Rank 0 reports the job, not itself: the slowest rank's time and every rank's errors.
    double avg_us = timed_us / o.iters;
    if (rdResult_t rc = agree(&avg_us, rdFloat64, rdMax, comm); rc != rdSuccess) {
      return fail("rdAllReduce (slowest time)", rc);
    }
    if (rdResult_t rc = agree(&wrong, rdUint64, rdSum, comm); rc != rdSuccess) {
      return fail("rdAllReduce (wrong count)", rc);
    }
    total_wrong += wrong;
    if (rank == 0) {
      const size_t moved = count * sizeof(float);
      std::printf("%10s %12zu %12.1f %12.3f %8llu\n", humanSize(moved).c_str(), count, avg_us,
                  static_cast<double>(moved) / avg_us / 1e3,
                  static_cast<unsigned long long>(wrong));
      std::fflush(stdout);
    }
    if (bytes > o.max_bytes / o.factor) break;  // the next step would overflow or pass the end
  }

  if (rdResult_t rc = rdCommDestroy(comm); rc != rdSuccess) {
    return report(rank, "rdCommDestroy", rc);
  }
  if (rank == 0) {
    if (total_wrong == 0) {
      std::printf("\nPASSED: 0 wrong\n");
    } else {
      std::printf("\nFAILED: %llu wrong\n", static_cast<unsigned long long>(total_wrong));
    }
  }
  if (my_wrong != 0) {
    std::fprintf(stderr, "allreduce_demo: rank %d: %llu wrong elements\n", rank,
                 static_cast<unsigned long long>(my_wrong));
  }
  // Ranks that got wrong elements fail, and rank 0 with them since it printed FAILED.
  return my_wrong == 0 && (rank != 0 || total_wrong == 0) ? 0 : 1;
}
