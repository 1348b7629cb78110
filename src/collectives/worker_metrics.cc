// SPDX-License-Identifier: BSD-3-Clause
#include "collectives/worker_metrics.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/check.h"
#include "common/log.h"
#include "common/metrics_text.h"
#include "common/settings.h"
#include "common/status.h"

namespace rd::coll {

namespace {

// The job, as the Inspector names it (SLURM_JOB_ID), else as reducectl and Vertex do.
std::string jobName() {
  for (const char* var : {"SLURM_JOB_ID", "CLOUD_ML_JOB_ID"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') return v;
  }
  return "unknown";
}

size_t bucketOf(const std::vector<double>& bounds, double value) {
  return static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) -
                             bounds.begin());
}

bool isDirectory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::string messageSizeLabel(uint64_t bytes) {
  if (bytes == 0) return "0B";
  static const char* const kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  size_t unit = 0;
  uint64_t n = bytes;
  while (n >= 1024 && unit + 1 < std::size(kUnits)) {
    n /= 1024;
    ++unit;
  }
  return std::to_string(n) + "-" + std::to_string(n + 1) + kUnits[unit];
}

// The bounds are never destroyed: the exit handler that writes the textfile (get(), below) was
// registered before they were first made, so static destruction would free them before it runs.
const std::vector<double>& WorkerMetrics::secondsBounds() {
  static const auto* const bounds =
      new std::vector<double>{1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1, 3, 10};
  return *bounds;
}

const std::vector<double>& WorkerMetrics::gbpsBounds() {
  static const auto* const bounds =
      new std::vector<double>{0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30, 100, 300, 1000};
  return *bounds;
}

WorkerMetrics* WorkerMetrics::get() {
  static WorkerMetrics* const instance = []() -> WorkerMetrics* {
    const std::string where = settings::rawValue(settings::Id::kMetrics);
    if (where.empty()) return nullptr;
    int64_t interval_ms = 0;
    if (settings::readInt(settings::Id::kMetricsIntervalMs, &interval_ms) != rdSuccess) {
      RD_LOG_WARN("LIBREDUCE_METRICS off: %s", lastError().c_str());
      return nullptr;
    }
    auto* m = new WorkerMetrics;  // lives until the process exits (flushed then, below)
    if (m->start(where, interval_ms) != rdSuccess) {
      RD_LOG_WARN("LIBREDUCE_METRICS=%s off: %s", where.c_str(), lastError().c_str());
      delete m;
      return nullptr;
    }
    std::atexit([] {
      if (WorkerMetrics* self = get()) self->flush();
    });
    return m;
  }();
  return instance;
}

rdResult_t WorkerMetrics::start(const std::string& where, int64_t interval_ms) {
  node_ = metrics::hostName();
  job_ = jobName();
  if (where.find('/') != std::string::npos || isDirectory(where)) {
    // A directory: one file per process, so that ranks on a node never share one.
    if (!isDirectory(where)) {
      return setErrorf(rdInvalidArgument, "%s is not a directory", where.c_str());
    }
    file_ = where + "/libreduce-" + node_ + "-" + std::to_string(getpid()) + ".prom";
    writer_ = std::thread([this, interval_ms] {
      std::unique_lock<std::mutex> lock(stop_mu_);
      while (!stop_cv_.wait_for(lock, std::chrono::milliseconds(interval_ms),
                                [this] { return stopping_; })) {
        lock.unlock();
        flush();
        lock.lock();
      }
    });
    return rdSuccess;
  }
  std::string host;
  uint16_t port = 0;
  RD_CHECK(metrics::parseListenAddress(where, &host, &port));
  RD_CHECK(metrics::Endpoint::start(
      host, port, [this] { return render(); }, &endpoint_));
  RD_LOG_INFO("metrics at http://%s/metrics", endpoint_->address().c_str());
  return rdSuccess;
}

WorkerMetrics::~WorkerMetrics() {
  if (writer_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(stop_mu_);
      stopping_ = true;
    }
    stop_cv_.notify_all();
    writer_.join();
  }
}

void WorkerMetrics::record(const CollectiveRecord& r) {
  Key key{r.comm_id, r.nranks, r.collective, messageSizeLabel(r.bytes), r.algorithm};
  std::lock_guard<std::mutex> lock(mu_);
  Series& s = series_[key];
  if (s.seconds_counts.empty()) {
    s.seconds_counts.assign(secondsBounds().size() + 1, 0);
    s.gbps_counts.assign(gbpsBounds().size() + 1, 0);
  }
  if (!r.ok) {
    ++s.failed;
    return;
  }
  const double gbps = r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds / 1e9 : 0;
  ++s.seconds_counts[bucketOf(secondsBounds(), r.seconds)];
  ++s.gbps_counts[bucketOf(gbpsBounds(), gbps)];
  s.seconds_sum += r.seconds;
  s.gbps_sum += gbps;
}

std::string WorkerMetrics::render() {
  std::lock_guard<std::mutex> lock(mu_);
  metrics::TextWriter out;
  auto labels = [&](const Key& k) {
    return metrics::Labels{{"slurm_job_id", job_},
                           {"node", node_},
                           {"comm_name", metrics::commIdText(std::get<0>(k))},
                           {"nranks", std::to_string(std::get<1>(k))},
                           {"collective", std::get<2>(k)},
                           {"message_size", std::get<3>(k)},
                           {"algo_proto", std::get<4>(k)}};
  };
  out.family("libreduce_collective_seconds", "histogram",
             "Time of each collective, from its call to its completion.");
  for (const auto& [key, s] : series_) {
    out.histogram("libreduce_collective_seconds", labels(key), secondsBounds(), s.seconds_counts,
                  s.seconds_sum);
  }
  out.family("libreduce_collective_algbw_gbs", "histogram",
             "Algorithm bandwidth of each collective: message bytes / time, in GB/s.");
  for (const auto& [key, s] : series_) {
    out.histogram("libreduce_collective_algbw_gbs", labels(key), gbpsBounds(), s.gbps_counts,
                  s.gbps_sum);
  }
  out.family("libreduce_collective_failed_total", "counter", "Collectives that failed.");
  for (const auto& [key, s] : series_) {
    out.sample("libreduce_collective_failed_total", labels(key), static_cast<double>(s.failed));
  }
  return out.text();
}

void WorkerMetrics::flush() {
  if (file_.empty()) return;
  std::lock_guard<std::mutex> lock(file_mu_);
  // Written beside and renamed: the collector never reads half a file.
  const std::string tmp = file_ + ".tmp";
  const std::string text = render();
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) == 0 && written) std::rename(tmp.c_str(), file_.c_str());
  }
}

}  // namespace rd::coll
