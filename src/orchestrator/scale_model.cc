// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/scale_model.h"

#include <algorithm>
#include <cmath>

#include "common/limits.h"

namespace rd::orch {
namespace {

constexpr double kBytesPerGbit = 1e9 / 8;

double cpuOf(const ProcessWork& w, const CpuCosts& c) {
  return w.transfer_ends * c.per_transfer_s + w.bytes * c.per_byte_s +
         w.operations * c.per_operation_s;
}

ProcessWork scaled(const ProcessWork& w, double by) {
  return {w.transfer_ends * by, w.bytes * by, w.operations * by};
}

ProcessWork sum(const ProcessWork& a, const ProcessWork& b) {
  return {a.transfer_ends + b.transfer_ends, a.bytes + b.bytes, a.operations + b.operations};
}

// Chunks each rank sends per all-reduce: its buffer over every reducer, each share in chunks.
double rsChunksPerRank(double bytes, double reducers, double chunk) {
  return reducers * std::max(1.0, std::ceil(bytes / (reducers * chunk)));
}

// The time of an algorithm from its link time, its CPU work and its hops. On one shared host a
// hop's flight is the CPU work already counted.
void finish(const ScaleCase& c, const CpuCosts& cpu, double hops, double hop_s, AlgorithmTime* t) {
  t->latency_s = c.shared_host_cores > 0 ? 0 : hops * hop_s;
  if (c.shared_host_cores > 0) {
    t->cpu_s = cpuOf(t->host_per_core, cpu);
    if (t->cpu_s > t->link_s) t->limit = "host CPU";
  }
  t->seconds = std::max(t->link_s, t->cpu_s) + t->latency_s;
}

AlgorithmTime ringTime(const ScaleCase& c, const ScaleCosts& k, const CpuCosts& cpu) {
  const double n = c.workers, s = c.bucket_bytes;
  AlgorithmTime t;
  t.link_s =
      c.loopback ? 0 : 2 * (n - 1) / n * s / (k.link_efficiency * c.worker_gbps * kBytesPerGbit);
  t.limit = "worker links";
  // 2(n-1) steps, each a segment of S/n in chunks, sent to one neighbour and received from the
  // other; (n-1)/n of the buffer is summed on the way.
  const double pieces = std::max(1.0, std::ceil(s / n / k.chunk_bytes));
  t.rank = {4 * (n - 1) * pieces, 5 * (n - 1) / n * s, 1};
  t.host_per_core = scaled(t.rank, n / std::max(1, c.shared_host_cores));
  t.cpu_s = cpuOf(t.rank, cpu);
  if (c.shared_host_cores == 0 && t.cpu_s > t.link_s) t.limit = "worker CPU";
  finish(c, cpu, 2 * (n - 1), k.hop_s, &t);
  return t;
}

AlgorithmTime rsTime(const ScaleCase& c, const ScaleCosts& k, const CpuCosts& cpu) {
  const double n = c.workers, r = c.reducers, s = c.bucket_bytes;
  AlgorithmTime t;
  const double worker_link = s / (k.link_efficiency * c.worker_gbps * kBytesPerGbit);
  const double reducer_link = n * s / (r * k.link_efficiency * c.reducer_gbps * kBytesPerGbit);
  t.link_s = c.loopback ? 0 : std::max(worker_link, reducer_link);
  t.limit = reducer_link > worker_link ? "reducer links" : "worker links";
  // A rank sends its chunks and receives each one's sum; a reducer receives n contributions of
  // each of its chunks, sums them and sends the result to all n.
  const double chunks = rsChunksPerRank(s, r, k.chunk_bytes);
  t.rank = {2 * chunks, 2 * s, 1};
  t.reducer = {2 * n * chunks / r, 3 * n * s / r, 0};
  t.host_per_core =
      scaled(sum(scaled(t.rank, n), scaled(t.reducer, r)), 1.0 / std::max(1, c.shared_host_cores));
  const double rank_cpu = cpuOf(t.rank, cpu);
  const double reducer_cpu = cpuOf(t.reducer, cpu) / std::max(1, k.reducer_threads);
  t.cpu_s = std::max(rank_cpu, reducer_cpu);
  if (c.shared_host_cores == 0 && t.cpu_s > t.link_s) {
    t.limit = reducer_cpu > rank_cpu ? "reducer CPU" : "worker CPU";
  }
  finish(c, cpu, 2, k.hop_s, &t);
  return t;
}

bool check(const ScaleCase& c, std::string* error) {
  const auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (c.workers < 2 || c.workers > static_cast<int>(limits::kMaxRanks)) {
    *error = "workers must be 2.." + std::to_string(limits::kMaxRanks) + " for an all-reduce";
  } else if (c.reducers < 1 || c.reducers > static_cast<int>(limits::kMaxRanks)) {
    // More than a communicator takes (limits::kMaxReducers) is still a count to predict.
    *error = "reducers must be 1.." + std::to_string(limits::kMaxRanks);
  } else if (!positive(c.worker_gbps) || !positive(c.reducer_gbps)) {
    *error = "NIC bandwidths must be numbers above 0 Gbit/s";
  } else if (!positive(c.bucket_bytes)) {
    *error = "the bucket must be a size above 0 bytes";
  } else if (c.shared_host_cores < 0) {
    *error = "the shared host's cores must be 0 (none) or more";
  } else {
    return true;
  }
  return false;
}

}  // namespace

ScaleCosts calibratedCosts() {
  ScaleCosts costs{};
  costs.link_efficiency = 0.933;
  costs.hop_s = 10e-6;
  costs.tcp = {0, 0.712e-9, 130e-6};
  costs.shared_memory = {4.47e-6, 0.184e-9, 60.1e-6};
  costs.chunk_bytes = 128 << 10;
  costs.reducer_threads = 4;
  return costs;
}

double reducerCoresPerGbps(const ScaleCosts& costs) {
  // A Gbit/s in: as many bytes received, summed and sent back (3 per byte), in chunks.
  const ProcessWork per_second = {2 * kBytesPerGbit / costs.chunk_bytes, 3 * kBytesPerGbit, 0};
  return cpuOf(per_second, costs.tcp);
}

bool predictScale(const ScaleCase& c, const ScaleCosts& costs, ScalePrediction* out,
                  std::string* error) {
  if (!check(c, error)) return false;
  const CpuCosts& cpu = c.loopback ? costs.shared_memory : costs.tcp;
  ScalePrediction p;
  p.rs = rsTime(c, costs, cpu);
  p.ring = ringTime(c, costs, cpu);
  // At most kMaxRanks, as for the CPU below: past that the count only says "more than there are".
  const double for_links = std::ceil(c.workers * c.worker_gbps / c.reducer_gbps * (1 - 1e-9));
  p.reducers_for_links = static_cast<int>(std::min<double>(for_links, limits::kMaxRanks));
  // The fewest reducers whose CPUs, on hosts of their own (so over TCP), keep up with the
  // workers' links.
  const double worker_link =
      c.bucket_bytes / (costs.link_efficiency * c.worker_gbps * kBytesPerGbit);
  ScaleCase own = c;
  own.shared_host_cores = 0;
  own.loopback = false;
  p.reducers_for_cpu = 0;
  for (own.reducers = 1; own.reducers <= static_cast<int>(limits::kMaxRanks); ++own.reducers) {
    const AlgorithmTime t = rsTime(own, costs, costs.tcp);
    if (cpuOf(t.reducer, costs.tcp) / std::max(1, costs.reducer_threads) <= worker_link) {
      p.reducers_for_cpu = own.reducers;
      break;
    }
  }
  for (const AlgorithmTime* t : {&p.rs, &p.ring}) {
    if (!std::isfinite(t->seconds)) {
      *error = "the inputs are too extreme for the model: a time is not a finite number";
      return false;
    }
  }
  *out = p;
  return true;
}

}  // namespace rd::orch
