// SPDX-License-Identifier: BSD-3-Clause
// The interleaved comparison: per size, warm-up of every system, rounds of timed runs in a
// rotating order, then one verified call of every system on exact inputs.
#include "perf/algo_compare.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "perf/exact_data.h"

namespace rd::perf {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  return v.size() % 2 != 0 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

struct SystemFigures {
  std::vector<double> round_us;  // time per call of each round, over the ranks as -a says
  double time_us = 0;            // median of round_us
  long wrong = -1;               // -1: not checked (-c 0)
};

struct CompareRow {
  size_t bytes = 0;
  size_t count = 0;
  rdDataType_t dtype = rdFloat32;
  rdRedOp_t op = rdSum;
  std::vector<SystemFigures> systems;
  size_t best_other = 1;       // the fastest system but the first, by median
  double ratio = 0;            // best_other's median time / the first's: 1 = as fast
  std::vector<double> ratios;  // the same per round (fastest other of that round)
};

class Comparison {
 public:
  Comparison(Backend& lineup, const std::vector<Backend*>& systems, const Options& o, int rounds)
      : lineup_(lineup), systems_(systems), o_(o), rounds_(rounds) {}

  int run() {
    header();
    size_t max_esize = 1;
    for (auto d : o_.dtypes) max_esize = std::max(max_esize, rdDataTypeSize(d));
    send_.assign(o_.max_bytes + max_esize, 0);
    recv_.assign(o_.max_bytes + max_esize, 0);
    for (auto d : o_.dtypes) {
      for (auto op : o_.ops) {
        for (size_t bytes : sweepSizes(o_)) {
          CompareRow row;
          if (!measure(bytes, d, op, &row)) return 2;
          print(row);
          rows_.push_back(row);
        }
      }
    }
    if (lineup_.rank() == 0) {
      std::printf("# Out of bounds values : %ld %s\n#\n", wrong_total_,
                  wrong_total_ > 0 ? "FAILED" : "OK");
      if (!o_.json_path.empty() && !writeJson()) return 2;
    }
    return wrong_total_ > 0 ? 1 : 0;
  }

 private:
  bool measure(size_t bytes, rdDataType_t d, rdRedOp_t op, CompareRow* row) {
    const size_t count = bytes / rdDataTypeSize(d);
    row->bytes = count * rdDataTypeSize(d);
    row->count = count;
    row->dtype = d;
    row->op = op;
    row->systems.assign(systems_.size(), SystemFigures{});
    for (Backend* system : systems_) {
      for (int i = 0; i < o_.warmup; ++i) {
        if (!call(*system, count, d, op)) return false;
      }
    }
    for (int round = 0; round < rounds_; ++round) {
      for (size_t k = 0; k < systems_.size(); ++k) {
        const size_t s = (k + static_cast<size_t>(round)) % systems_.size();
        double us = 0;
        if (!timeRun(*systems_[s], count, d, op, &us)) return false;
        row->systems[s].round_us.push_back(us);
      }
    }
    for (size_t s = 0; s < systems_.size(); ++s) {
      SystemFigures& f = row->systems[s];
      f.time_us = median(f.round_us);
      if (o_.check != 0 && !verify(*systems_[s], count, d, op, &f.wrong)) return false;
      wrong_total_ += std::max(f.wrong, 0L);
      if (s > 0 && f.time_us < row->systems[row->best_other].time_us) row->best_other = s;
    }
    if (systems_.size() > 1) compare(row);
    return true;
  }

  static void compare(CompareRow* row) {
    const auto& first = row->systems[0];
    row->ratio = first.time_us > 0 ? row->systems[row->best_other].time_us / first.time_us : 0;
    for (size_t r = 0; r < first.round_us.size(); ++r) {
      double best = row->systems[1].round_us[r];
      for (size_t s = 2; s < row->systems.size(); ++s) {
        best = std::min(best, row->systems[s].round_us[r]);
      }
      row->ratios.push_back(first.round_us[r] > 0 ? best / first.round_us[r] : 0);
    }
  }

  bool timeRun(Backend& system, size_t count, rdDataType_t d, rdRedOp_t op, double* us) {
    lineup_.combine(0, 0);  // line the ranks up before timing
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o_.iters; ++i) {
      if (!call(system, count, d, op)) return false;
    }
    double mine =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        o_.iters;
    *us = aggregateOverRanks(lineup_, mine, o_.average);
    return true;
  }

  bool verify(Backend& system, size_t count, rdDataType_t d, rdRedOp_t op, long* wrong) {
    const uint64_t salt = opSalt(0, checks_++);  // each check its own data
    fillExact(send_.data(), count, lineup_.rank(), 0, d, op, salt);
    std::memset(recv_.data(), 0xa5, count * rdDataTypeSize(d));  // a call that writes nothing fails
    if (!call(system, count, d, op)) return false;
    size_t mine = countWrongReduction(recv_.data(), count, 0, lineup_.nranks(), d, op,
                                      system.precision(d), salt);
    *wrong = static_cast<long>(lineup_.combine(static_cast<double>(mine), 0));
    return true;
  }

  bool call(Backend& system, size_t count, rdDataType_t d, rdRedOp_t op) {
    std::string error;
    if (system.run(Coll::kAllReduce, send_.data(), recv_.data(), count, d, op, 0, &error)) {
      return true;
    }
    std::fprintf(stderr, "# rank %d: %s: all_reduce failed: %s\n", lineup_.rank(),
                 system.name().c_str(), error.c_str());
    return false;
  }

  void header() const {
    if (lineup_.rank() != 0) return;
    std::printf(
        "# all_reduce in the same processes, interleaved: %d ranks, %d rounds of %d calls "
        "per system and size after %d warm-up calls each\n",
        lineup_.nranks(), rounds_, o_.iters, o_.warmup);
    for (size_t s = 0; s < systems_.size(); ++s) {
      std::printf("# system %zu: %s\n", s + 1, systems_[s]->name().c_str());
    }
    std::printf(
        "# time: median over the rounds of a round's time per call (us); 1 vs best: the "
        "fastest other system's time / system 1's (1.00 = as fast, 0.95 = 5%% slower),\n"
        "# of the medians, and the lowest and highest over the rounds (each round "
        "against its own fastest other)\n#\n");
    std::printf("# %10s %12s %8s %6s", "size", "count", "type", "redop");
    for (size_t s = 0; s < systems_.size(); ++s) {
      std::printf(" %8s%zu %7s%zu %6s", "time", s + 1, "algbw", s + 1, "#wrong");
    }
    if (systems_.size() > 1) std::printf(" %5s %9s %5s %5s", "best", "1 vs best", "low", "high");
    std::printf("\n");
    std::fflush(stdout);
  }

  void print(const CompareRow& r) const {
    if (lineup_.rank() != 0) return;
    std::printf("  %10zu %12zu %8s %6s", r.bytes, r.count, rdDataTypeName(r.dtype),
                rdRedOpName(r.op));
    for (const SystemFigures& f : r.systems) {
      const std::string wrong = f.wrong < 0 ? "N/A" : std::to_string(f.wrong);
      std::printf(" %9.1f %8.4f %6s", f.time_us, algbw(r.bytes, f.time_us), wrong.c_str());
    }
    if (!r.ratios.empty()) {
      auto [low, high] = std::minmax_element(r.ratios.begin(), r.ratios.end());
      std::printf(" %5zu %9.3f %5.3f %5.3f", r.best_other + 1, r.ratio, *low, *high);
    }
    std::printf("\n");
    std::fflush(stdout);
  }

  static double algbw(size_t bytes, double us) {
    return us > 0 ? static_cast<double>(bytes) / us / 1e3 : 0;
  }

  // Rows as the nccl-tests JSON has them (one per system and size, out-of-place, "system" naming
  // it), and the comparison of each size.
  bool writeJson() const {
    std::ofstream f(o_.json_path);
    f << "{\"program\": \"" << program_invocation_short_name << "\", \"mode\": \"compare\""
      << ", \"nranks\": " << lineup_.nranks() << ", \"iters\": " << o_.iters
      << ", \"warmup\": " << o_.warmup << ", \"rounds\": " << rounds_ << ", \"results\": [";
    const char* sep = "\n";
    for (const CompareRow& r : rows_) {
      for (size_t s = 0; s < systems_.size(); ++s) {
        const SystemFigures& fig = r.systems[s];
        f << sep << "  {\"system\": \"" << systems_[s]->name() << "\", \"coll\": \"allreduce\""
          << ", \"size\": " << r.bytes << ", \"count\": " << r.count << ", \"type\": \""
          << rdDataTypeName(r.dtype) << "\", \"redop\": \"" << rdRedOpName(r.op)
          << "\", \"out_of_place\": {\"time_us\": " << fig.time_us
          << ", \"algbw\": " << algbw(r.bytes, fig.time_us) << ", \"busbw\": "
          << algbw(r.bytes, fig.time_us) * busFactor(Coll::kAllReduce, lineup_.nranks())
          << ", \"wrong\": " << fig.wrong << ", \"round_us\": [";
        for (size_t k = 0; k < fig.round_us.size(); ++k) f << (k ? ", " : "") << fig.round_us[k];
        f << "]}";
        if (s == 0 && systems_.size() > 1) {
          f << ", \"best_other\": \"" << systems_[r.best_other]->name()
            << "\", \"vs_best\": " << r.ratio;
        }
        f << "}";
        sep = ",\n";
      }
    }
    f << "\n]}\n";
    if (!f) {
      std::fprintf(stderr, "# cannot write %s\n", o_.json_path.c_str());
      return false;
    }
    return true;
  }

  Backend& lineup_;
  const std::vector<Backend*>& systems_;
  const Options& o_;
  int rounds_;
  std::vector<char> send_, recv_;
  uint64_t checks_ = 0;  // verified calls so far: the next one's salt
  std::vector<CompareRow> rows_;
  long wrong_total_ = 0;
};

}  // namespace

int runCompare(Backend& lineup, const std::vector<Backend*>& systems, const Options& options,
               int rounds) {
  return Comparison(lineup, systems, options, rounds).run();
}

}  // namespace rd::perf
