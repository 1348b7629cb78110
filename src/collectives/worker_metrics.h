// SPDX-License-Identifier: BSD-3-Clause
// Per-collective figures of this process's communicators, for Prometheus, when LIBREDUCE_METRICS
// says where: an endpoint a server scrapes (HOST:PORT, or PORT on loopback), or a directory in
// which a textfile is rewritten every LIBREDUCE_METRICS_INTERVAL_MS and at exit (what
// node_exporter's textfile collector reads). Each collective's time and algorithm bandwidth go
// into histograms labelled as NCCL's Inspector labels its figures (job, node, communicator,
// ranks, collective, message size as "N-(N+1)UNIT", algorithm), so that dashboards built on
// those labels carry over.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/metrics_endpoint.h"

namespace rd::coll {

/** One collective that completed. */
struct CollectiveRecord {
  uint64_t comm_id = 0;
  uint32_t nranks = 0;
  const char* collective = "";  // "AllReduce", ...: NCCL's names
  const char* algorithm = "";   // "RS", "RING"
  uint64_t bytes = 0;           // the message size as the Inspector counts it (type x count)
  double seconds = 0;           // from post to completion
  bool ok = true;
};

/** The Inspector's message-size label: divide by 1024 while >= 1024, "N-(N+1)UNIT". */
std::string messageSizeLabel(uint64_t bytes);

class WorkerMetrics {
 public:
  /** The process's metrics: started from the settings on first use; null when off. */
  static WorkerMetrics* get();

  void record(const CollectiveRecord& r);
  /** The exposition text of everything recorded so far. */
  std::string render();

  /** Writes the textfile now (a no-op for an endpoint). */
  void flush();

  ~WorkerMetrics();

  static const std::vector<double>& secondsBounds();
  static const std::vector<double>& gbpsBounds();

 private:
  WorkerMetrics() = default;
  rdResult_t start(const std::string& where, int64_t interval_ms);

  // comm, nranks, collective, message size label, algorithm
  using Key = std::tuple<uint64_t, uint32_t, std::string, std::string, std::string>;
  struct Series {
    std::vector<uint64_t> seconds_counts, gbps_counts;
    double seconds_sum = 0, gbps_sum = 0;
    uint64_t failed = 0;
  };

  std::mutex mu_;
  std::map<Key, Series> series_;
  std::string node_, job_;
  std::unique_ptr<metrics::Endpoint> endpoint_;
  std::string file_;    // the textfile, or ""
  std::mutex file_mu_;  // one writer of it at a time (the interval's, exit's)
  std::thread writer_;
  std::mutex stop_mu_;
  bool stopping_ = false;
  std::condition_variable stop_cv_;
};

}  // namespace rd::coll
