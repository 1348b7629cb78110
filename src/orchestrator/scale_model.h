// SPDX-License-Identifier: BSD-3-Clause
// The scale model behind `reducectl plan --bucket`: the time of one all-reduce of S bytes by n
// workers, through k reducers (rs) or around the ring, from the links, the latency of a hop
// and the CPU each process spends per message and per byte. Calibrated on this project's
// measurements (docs/scale-model.md; bench/scale/model_check.py checks it against every
// measured point and refits the constants).
//
//   links:    rs   S * max(1/(e*Bw), n/(k*e*Br))        ring 2(n-1)/n * S/(e*Bw)
//   latency:  rs   2 hops                                ring 2(n-1) hops
//   CPU:      each transfer (one message, both ends) costs c_msg, each byte sent, received or
//             summed c_byte, each rank's operation c_op; spread over the processes' own cores,
//             or over P cores when every process shares one host (the emulated cluster, or
//             ranks and reducers on one machine)
//   time = max(links, CPU) + latency
#pragma once

#include <string>

namespace rd::orch {

/** What each message, byte and operation costs a process, for one kind of transport. */
struct CpuCosts {
  double per_transfer_s = 0;   // one message, sender and receiver together
  double per_byte_s = 0;       // one byte sent, received or summed
  double per_operation_s = 0;  // one rank's share of one all-reduce (posting, waking, waiting)
};

/** The model's constants (calibratedCosts() gives the fitted ones). */
struct ScaleCosts {
  double link_efficiency = 1;  // payload rate over the NIC's nominal rate, large transfers
  double hop_s = 0;            // one message's flight between hosts (wire and switch), not its CPU
  CpuCosts tcp;                // UCX over TCP between hosts (the emulated cluster's namespaces)
  CpuCosts shared_memory;      // UCX over shared memory, every process on one host
  double chunk_bytes = 128 << 10;  // the unit a buffer is split into on the wire
  int reducer_threads = 1;         // cores a reducer reduces on (reduce-server --threads)
};

/** The constants fitted on the measurements of docs/scale-model.md. */
ScaleCosts calibratedCosts();

struct ScaleCase {
  int workers = 0;
  int reducers = 0;
  double worker_gbps = 0;   // each worker's NIC
  double reducer_gbps = 0;  // each reducer's NIC
  double bucket_bytes = 0;  // S: the buffer of one all-reduce (a DDP bucket)
  // > 0: every process shares one host of this many cores, over shared memory when
  // `loopback`, else over TCP (the emulated cluster); 0: each process has a host of its own.
  int shared_host_cores = 0;
  bool loopback = false;
};

/** What one process handles per all-reduce: CPU = ends * per_transfer + bytes * per_byte + ... */
struct ProcessWork {
  double transfer_ends = 0;  // messages it sends or receives
  double bytes = 0;          // bytes it sends, receives or sums
  double operations = 0;     // all-reduces it takes part in as a rank
};

/** One algorithm's predicted time and what bounds it. */
struct AlgorithmTime {
  double seconds = 0;
  double link_s = 0;
  double cpu_s = 0;
  double latency_s = 0;
  std::string limit;    // "worker links", "reducer links", "worker CPU", "reducer CPU", "host CPU"
  ProcessWork rank;     // each rank's share
  ProcessWork reducer;  // each reducer's (rs only)
  // With a shared host: the whole host's work over its cores, so cpu_s is the dot product of
  // this with (per_transfer_s, per_byte_s, per_operation_s). What bench/scale/model_check.py
  // fits the CPU constants on.
  ProcessWork host_per_core;
};

struct ScalePrediction {
  AlgorithmTime rs;
  AlgorithmTime ring;
  // The fewest reducers whose links keep up with the workers' (at most limits::kMaxRanks).
  int reducers_for_links = 0;
  // The fewest whose CPUs, on hosts of their own (over TCP), keep up with the workers' links;
  // 0 when even limits::kMaxRanks reducers do not (each reducer's messages per rank do not
  // shrink as reducers are added: small buffers).
  int reducers_for_cpu = 0;
};

/**
 * Cores a reducer spends per Gbit/s of worker traffic into it over TCP, large buffers: the way
 * reducer pools are sized (BytePS: a 4-core server per 25 Gbit/s, 0.16).
 */
double reducerCoresPerGbps(const ScaleCosts& costs);

/**
 * Predicts @p c with @p costs; false with @p error naming a bad input (workers < 2, reducers
 * < 1, a rate or size <= 0) or inputs so extreme that a time is not a finite number.
 */
bool predictScale(const ScaleCase& c, const ScaleCosts& costs, ScalePrediction* out,
                  std::string* error);

}  // namespace rd::orch
