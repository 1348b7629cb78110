// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/live_figures.h"

#include <sys/stat.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <vector>

#include "orchestrator/job_files.h"
#include "orchestrator/metrics_scrape.h"

namespace rd::orch {

namespace {

std::string bytesText(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return text;
}

std::string secondsText(double seconds) {
  char text[32];
  if (seconds >= 1) {
    std::snprintf(text, sizeof text, "%.2f s", seconds);
  } else if (seconds >= 1e-3) {
    std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.0f us", seconds * 1e6);
  }
  return text;
}

void showReducers(const std::string& output_dir) {
  std::ifstream in(reducerMetricsList(output_dir));
  std::string name, address;
  while (in >> name >> address) {
    std::map<std::string, double> m;
    double asked_at = 0;
    std::string why;
    if (!scrapeMetrics(address, &m, &asked_at, &why)) {
      std::printf("  %s: its metrics at %s cannot be read: %s\n", name.c_str(), address.c_str(),
                  why.c_str());
      continue;
    }
    auto v = [&m](const char* metric) { return m["libreduce_reducer_" + std::string(metric)]; };
    std::printf(
        "  %s: %.0f operations served, %.0f failed; %s received, %s sent; "
        "%.0f communicator(s), %.0f connection(s); memory %s of %s\n",
        name.c_str(), v("operations_served_total"), v("operations_failed_total"),
        bytesText(v("received_bytes_total")).c_str(), bytesText(v("sent_bytes_total")).c_str(),
        v("communicators"), v("connections"), bytesText(v("memory_used_bytes")).c_str(),
        bytesText(v("memory_limit_bytes")).c_str());
  }
}

// One rank's textfile: its collectives, failures, and the series that took the most time.
std::string rankLine(const std::map<std::string, double>& m) {
  const std::string count = "libreduce_collective_seconds_count{";
  const std::string time = "libreduce_collective_seconds_sum{";
  double done = 0, failed = 0, longest = 0;
  std::string busiest;  // that series' "{labels}"
  for (const auto& [series, value] : m) {
    if (series.rfind(count, 0) == 0) {
      done += value;
    } else if (series.rfind(time, 0) == 0 && value > longest) {
      longest = value;
      busiest = series.substr(time.size() - 1);
    } else if (series.rfind("libreduce_collective_failed_total{", 0) == 0) {
      failed += value;
    }
  }
  std::ostringstream line;
  line << static_cast<long long>(done) << " collective(s) done, " << static_cast<long long>(failed)
       << " failed";
  auto of_busiest = [&](const std::string& series) {
    auto it = m.find(series + busiest);
    return it == m.end() ? 0.0 : it->second;
  };
  const double calls = of_busiest("libreduce_collective_seconds_count");
  if (calls > 0) {
    char mean[96];
    std::snprintf(mean, sizeof mean, "%s mean, %.2f GB/s", secondsText(longest / calls).c_str(),
                  of_busiest("libreduce_collective_algbw_gbs_sum") / calls);
    line << "; most time in " << labelValue(busiest, "collective") << " of "
         << labelValue(busiest, "message_size") << " over " << labelValue(busiest, "algo_proto")
         << ": " << static_cast<long long>(calls) << " at " << mean;
  }
  return line.str();
}

// The newest .prom file in @p dir (a replica restarted writes a file of its own, one per
// process: the newest is now's), "" if none; @p written gets its time.
std::string newestTextfile(const std::string& dir, time_t* written) {
  std::string newest;
  *written = 0;
  for (const std::string& file : sortedEntries(dir)) {
    struct stat st {};
    std::string path = dir;
    path.append("/").append(file);
    if (file.size() > 5 && file.compare(file.size() - 5, 5, ".prom") == 0 &&
        stat(path.c_str(), &st) == 0 && st.st_mtime >= *written) {
      newest = path;
      *written = st.st_mtime;
    }
  }
  return newest;
}

void showRanks(const std::string& output_dir) {
  const std::string root = rankMetricsDir(output_dir, "");
  for (const std::string& replica : sortedEntries(root)) {
    time_t newest_at = 0;
    const std::string newest = newestTextfile(root + replica, &newest_at);
    if (newest.empty()) {
      std::printf("  %s: no metrics written yet\n", replica.c_str());
      continue;
    }
    std::ifstream in(newest);
    std::stringstream text;
    text << in.rdbuf();
    std::map<std::string, double> m;
    parseMetricsText(text.str(), &m);
    std::printf("  %s: %s (written %lld s ago)\n", replica.c_str(), rankLine(m).c_str(),
                static_cast<long long>(std::time(nullptr) - newest_at));
  }
}

}  // namespace

std::string reducerMetricsList(const std::string& output_dir) {
  return output_dir + "/reducectl/reducer-metrics";
}

std::string rankMetricsDir(const std::string& output_dir, const std::string& replica) {
  return output_dir + "/reducectl/metrics/" + replica;
}

void showLiveFigures(const std::string& output_dir, bool live) {
  if (live) showReducers(output_dir);
  showRanks(output_dir);
}

}  // namespace rd::orch
