// SPDX-License-Identifier: BSD-3-Clause
// The sweep: for each size, dtype and op, out-of-place then in-place, warm up, time `iters`
// calls, then (with -c) run once more on fresh exact inputs and count wrong elements. Rank 0
// prints the nccl-tests table and writes the JSON.
#include "perf/perf_runner.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "perf/exact_data.h"

namespace rd::perf {

namespace {

struct Placement {
  double time_us = 0;
  double algbw = 0;
  double busbw = 0;
  double cpu_us = 0;  // CPU time of this process (every thread) per call, mean over ranks
  long wrong = 0;
};

// CPU seconds this process has used so far, user and system, every thread.
double processCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

struct Row {
  size_t bytes = 0;
  size_t count = 0;
  rdDataType_t dtype = rdFloat32;
  rdRedOp_t op = rdSum;
  int root = -1;
  Placement placement[2];  // out-of-place, in-place
};

// Where one call reads and writes, for a buffer of `count` elements in total.
struct Buffers {
  std::vector<char> a, b;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t per_call = 0;  // the count argument of the call
};

void place(Coll c, size_t count, size_t esize, int rank, int n, bool in_place, Buffers* bufs) {
  const size_t share = count / n;
  char* a = bufs->a.data();
  char* b = bufs->b.data();
  switch (c) {
    case Coll::kAllReduce:
    case Coll::kBroadcast:
      bufs->send = a;
      bufs->recv = in_place ? a : b;
      bufs->per_call = count;
      break;
    case Coll::kReduceScatter:  // input: whole buffer; output: this rank's share
      bufs->send = a;
      bufs->recv = in_place ? a + rank * share * esize : b;
      bufs->per_call = share;
      break;
    case Coll::kAllGather:  // input: this rank's share; output: whole buffer
      bufs->recv = b;
      bufs->send = in_place ? b + rank * share * esize : a;
      bufs->per_call = share;
      break;
  }
}

// Fresh exact inputs for one checked call; an out-of-place output is poisoned first so that a
// call that writes nothing cannot pass.
void fillInputs(Coll c, const Buffers& bufs, size_t count, int rank, int n, int root,
                rdDataType_t d, rdRedOp_t op, bool in_place, uint64_t salt) {
  auto* send = const_cast<void*>(bufs.send);
  const size_t share = count / n;
  const size_t esize = rdDataTypeSize(d);
  if (!in_place) {
    size_t out = c == Coll::kReduceScatter ? share : count;
    std::memset(bufs.recv, 0xa5, out * esize);
  }
  if (c == Coll::kAllGather) {
    fillExact(send, share, rank, rank * share, d, op, salt);
  } else if (c == Coll::kBroadcast && rank != root) {
    std::memset(send, 0, count * esize);  // only the root's data may arrive
  } else {
    fillExact(send, count, rank, 0, d, op, salt);
  }
}

long countWrong(Coll c, const Buffers& bufs, size_t count, int rank, int n, int root,
                rdDataType_t d, rdRedOp_t op, rdDataType_t precision, uint64_t salt) {
  const size_t share = count / n;
  const size_t esize = rdDataTypeSize(d);
  switch (c) {
    case Coll::kAllReduce:
      return static_cast<long>(countWrongReduction(bufs.recv, count, 0, n, d, op, precision, salt));
    case Coll::kReduceScatter:
      return static_cast<long>(
          countWrongReduction(bufs.recv, share, rank * share, n, d, op, precision, salt));
    case Coll::kAllGather: {
      long wrong = 0;
      for (int r = 0; r < n; ++r) {
        const char* part = static_cast<const char*>(bufs.recv) + r * share * esize;
        wrong += static_cast<long>(countWrongCopy(part, share, r, r * share, d, op, salt));
      }
      return wrong;
    }
    case Coll::kBroadcast:
      return static_cast<long>(countWrongCopy(bufs.recv, count, root, 0, d, op, salt));
  }
  return 0;
}

class Sweep {
 public:
  Sweep(Backend& backend, const Options& o) : be_(backend), o_(o) {}

  int run() {
    header();
    size_t max_esize = 1;
    for (auto d : o_.dtypes) max_esize = std::max(max_esize, rdDataTypeSize(d));
    bufs_.a.assign(o_.max_bytes + max_esize * be_.nranks(), 0);
    bufs_.b.assign(o_.max_bytes + max_esize * be_.nranks(), 0);
    for (auto d : o_.dtypes) {
      for (auto op : o_.ops) {
        if (!be_.supports(o_.coll, d, op)) {
          if (be_.rank() == 0) {
            std::printf("# %s %s %s: not supported by %s, skipped\n", collName(o_.coll),
                        rdDataTypeName(d), rdRedOpName(op), be_.name().c_str());
          }
          continue;
        }
        for (size_t s : sweepSizes(o_)) {
          if (!measure(s, d, op)) return 2;
        }
      }
    }
    return footer();
  }

 private:
  bool measure(size_t bytes, rdDataType_t d, rdRedOp_t op) {
    const int n = be_.nranks();
    const size_t esize = rdDataTypeSize(d);
    // Sizes of reduce-scatter / all-gather are the whole buffer: a multiple of n elements.
    const size_t unit = (o_.coll == Coll::kAllReduce || o_.coll == Coll::kBroadcast) ? 1 : n;
    const size_t count = bytes / esize / unit * unit;
    Row row;
    row.bytes = count * esize;
    row.count = count;
    row.dtype = d;
    row.op = op;
    row.root = o_.coll == Coll::kBroadcast ? o_.root : -1;
    for (int in_place = 0; in_place < 2; ++in_place) {
      place(o_.coll, count, esize, be_.rank(), n, in_place != 0, &bufs_);
      Placement& p = row.placement[in_place];
      std::string error;
      for (int i = 0; i < o_.warmup; ++i) {
        if (!call(d, op, &error)) return fail(error);
      }
      be_.combine(0, 0);  // line the ranks up before timing
      const double cpu0 = processCpuSeconds();
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < o_.iters; ++i) {
        if (!call(d, op, &error)) return fail(error);
      }
      double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
          o_.iters;
      const double cpu_us = (processCpuSeconds() - cpu0) * 1e6 / o_.iters;
      p.time_us = aggregateOverRanks(be_, us, o_.average);
      p.cpu_us = be_.combine(cpu_us, 0) / be_.nranks();
      p.algbw = p.time_us > 0 ? static_cast<double>(row.bytes) / p.time_us / 1e3 : 0;
      p.busbw = p.algbw * busFactor(o_.coll, n);
      p.wrong = -1;
      if (o_.check != 0) {
        // Each check its own data: a result left from a timed call or an earlier check is wrong.
        const uint64_t salt = opSalt(0, checks_++);
        fillInputs(o_.coll, bufs_, count, be_.rank(), n, o_.root, d, op, in_place != 0, salt);
        if (!call(d, op, &error)) return fail(error);
        long mine = countWrong(o_.coll, bufs_, count, be_.rank(), n, o_.root, d, op,
                               be_.precision(d), salt);
        p.wrong = static_cast<long>(be_.combine(static_cast<double>(mine), 0));
        wrong_total_ += p.wrong;
      }
    }
    print(row);
    rows_.push_back(row);
    return true;
  }

  bool call(rdDataType_t d, rdRedOp_t op, std::string* error) {
    return be_.run(o_.coll, bufs_.send, bufs_.recv, bufs_.per_call, d, op, o_.root, error);
  }

  bool fail(const std::string& error) {
    std::fprintf(stderr, "# rank %d: %s failed: %s\n", be_.rank(), collName(o_.coll),
                 error.c_str());
    return false;
  }

  void header() {
    if (be_.rank() != 0) return;
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    std::printf("# %s: %s, %d ranks, %s\n", collName(o_.coll), be_.name().c_str(), be_.nranks(),
                host);
    std::printf(
        "# nThread 1 nGpus 0 minBytes %zu maxBytes %zu step: %g(%s) warmup iters: %d "
        "iters: %d validation: %d\n",
        o_.min_bytes, o_.max_bytes,
        o_.step_bytes != 0 ? static_cast<double>(o_.step_bytes) : o_.factor,
        o_.step_bytes != 0 ? "bytes" : "factor", o_.warmup, o_.iters, o_.check);
    std::printf(
        "# algbw (bytes / time) is the headline figure; busbw multiplies it by the "
        "point-to-point factor and can exceed the link rate for a reduction server.\n");
    std::printf("#\n# %10s %12s %8s %6s %6s   %-34s %-34s\n", "", "", "", "", "",
                "            out-of-place", "              in-place");
    std::printf("# %10s %12s %8s %6s %6s %9s %8s %8s %6s %9s %8s %8s %6s\n", "size", "count",
                "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                "busbw", "#wrong");
    std::printf("# %10s %12s %8s %6s %6s %9s %8s %8s %6s %9s %8s %8s %6s\n", "(B)", "(elements)",
                "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }

  void print(const Row& r) {
    if (be_.rank() != 0) return;
    std::printf("  %10zu %12zu %8s %6s %6d", r.bytes, r.count, rdDataTypeName(r.dtype),
                rdRedOpName(r.op), r.root);
    for (const Placement& p : r.placement) {
      char wrong[24];
      if (p.wrong < 0)
        std::snprintf(wrong, sizeof wrong, "N/A");
      else
        std::snprintf(wrong, sizeof wrong, "%ld", p.wrong);
      std::printf(" %9.1f %8.3f %8.3f %6s", p.time_us, p.algbw, p.busbw, wrong);
    }
    std::printf("\n");
    std::fflush(stdout);
  }

  int footer() {
    if (be_.rank() == 0) {
      double bus = 0, alg = 0;
      for (const Row& r : rows_) {
        for (const Placement& p : r.placement) {
          bus += p.busbw;
          alg += p.algbw;
        }
      }
      size_t n = rows_.empty() ? 1 : rows_.size() * 2;
      std::printf("# Out of bounds values : %ld %s\n", wrong_total_ > 0 ? wrong_total_ : 0,
                  wrong_total_ > 0 ? "FAILED" : "OK");
      std::printf("# Avg bus bandwidth    : %g\n", bus / static_cast<double>(n));
      std::printf("# Avg alg bandwidth    : %g\n#\n", alg / static_cast<double>(n));
      if (!o_.json_path.empty() && !writeJson()) return 2;
    }
    return wrong_total_ > 0 ? 1 : 0;
  }

  bool writeJson() {
    std::ofstream f(o_.json_path);
    f << "{\"program\": \"" << program_invocation_short_name << "\", \"system\": \"" << be_.name()
      << "\", \"nranks\": " << be_.nranks() << ", \"iters\": " << o_.iters
      << ", \"warmup\": " << o_.warmup << ", \"results\": [";
    for (size_t i = 0; i < rows_.size(); ++i) {
      const Row& r = rows_[i];
      f << (i == 0 ? "\n" : ",\n") << "  {\"coll\": \"" << collName(o_.coll)
        << "\", \"size\": " << r.bytes << ", \"count\": " << r.count << ", \"type\": \""
        << rdDataTypeName(r.dtype) << "\", \"redop\": \"" << rdRedOpName(r.op)
        << "\", \"root\": " << r.root;
      const char* names[2] = {"out_of_place", "in_place"};
      for (int k = 0; k < 2; ++k) {
        const Placement& p = r.placement[k];
        f << ", \"" << names[k] << "\": {\"time_us\": " << p.time_us << ", \"algbw\": " << p.algbw
          << ", \"busbw\": " << p.busbw << ", \"cpu_us\": " << p.cpu_us
          << ", \"wrong\": " << p.wrong << "}";
      }
      f << "}";
    }
    f << "\n]}\n";
    if (!f) {
      std::fprintf(stderr, "# cannot write %s\n", o_.json_path.c_str());
      return false;
    }
    return true;
  }

  Backend& be_;
  const Options& o_;
  Buffers bufs_;
  std::vector<Row> rows_;
  long wrong_total_ = 0;
  uint64_t checks_ = 0;  // checked calls so far: the next one's salt
};

bool envInt(const char* name, int* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  *out = std::atoi(v);
  return true;
}

}  // namespace

double busFactor(Coll c, int n) {
  switch (c) {
    case Coll::kAllReduce: return 2.0 * (n - 1) / n;
    case Coll::kReduceScatter:
    case Coll::kAllGather: return static_cast<double>(n - 1) / n;
    case Coll::kBroadcast: return 1;
  }
  return 1;
}

std::vector<size_t> sweepSizes(const Options& o) {
  std::vector<size_t> sizes;
  for (size_t s = o.min_bytes; s <= o.max_bytes;) {
    sizes.push_back(s);
    size_t next = o.step_bytes != 0 ? s + o.step_bytes
                                    : static_cast<size_t>(static_cast<double>(s) * o.factor);
    s = std::max(next, s + 1);
  }
  return sizes;
}

double aggregateOverRanks(Backend& backend, double value, int average) {
  switch (average) {
    case 0: return backend.combine(backend.rank() == 0 ? value : 0, 0);
    case 2: return backend.combine(value, 1);
    case 3: return backend.combine(value, 2);
    default: return backend.combine(value, 0) / backend.nranks();
  }
}

int runPerf(Backend& backend, const Options& options) {
  if (options.coll == Coll::kBroadcast && options.root >= backend.nranks()) {
    if (backend.rank() == 0) {
      std::fprintf(stderr, "%s: root %d is not a rank of %d\n", options.program.c_str(),
                   options.root, backend.nranks());
    }
    return 2;
  }
  return Sweep(backend, options).run();
}

bool rankFromEnvironment(int* rank, int* nranks) {
  static const char* const kPairs[][2] = {{"RANK", "WORLD_SIZE"},
                                          {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMI_RANK", "PMI_SIZE"},
                                          {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& pair : kPairs) {
    if (envInt(pair[0], rank) && envInt(pair[1], nranks)) {
      return *nranks >= 1 && *rank >= 0 && *rank < *nranks;
    }
  }
  return false;
}

}  // namespace rd::perf
