// SPDX-License-Identifier: BSD-3-Clause
#include "reduction_server/reducer_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "common/metrics_text.h"

namespace rd::server {

namespace {

using metrics::Labels;
using metrics::TextWriter;

void one(TextWriter* out, const std::string& name, const char* type, const char* help, double value,
         const Labels& labels = {}) {
  out->family(name, type, help);
  out->sample(name, labels, value);
}

double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double residentBytes() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// Every lane's figures added up; communicators that span lanes merged by id.
ServerStats sum(const std::vector<ServerStats>& lanes, std::vector<CommStats>* comms) {
  ServerStats t;
  std::map<uint64_t, CommStats> by_id;
  for (const ServerStats& s : lanes) {
    t.communicators += s.communicators;
    t.connections += s.connections;
    t.waiting_for_memory += s.waiting_for_memory;
    t.memory_in_use += s.memory_in_use;
    t.memory_peak += s.memory_peak;
    t.memory_limit += s.memory_limit;
    t.waited_for_memory += s.waited_for_memory;
    t.chunks_served_total += s.chunks_served_total;
    t.comms_failed += s.comms_failed;
    t.refused_authentication += s.refused_authentication;
    t.refused_memory += s.refused_memory;
    t.refused_usage += s.refused_usage;
    t.connections_failed += s.connections_failed;
    t.rejoins += s.rejoins;
    t.handshakes_refused += s.handshakes_refused;
    for (const auto& [carried_by, n] : s.connections_by_transports) {
      t.connections_by_transports[carried_by] += n;
    }
    t.totals.chunks_received += s.totals.chunks_received;
    t.totals.bytes_received += s.totals.bytes_received;
    t.totals.bytes_sent += s.totals.bytes_sent;
    t.totals.ops_served += s.totals.ops_served;
    t.totals.ops_failed += s.totals.ops_failed;
    t.totals.reductions += s.totals.reductions;
    t.totals.reduce_seconds += s.totals.reduce_seconds;
    for (const CommStats& c : s.comms) {
      CommStats& m = by_id[c.comm_id];
      m.comm_id = c.comm_id;
      m.ranks = c.ranks;
      m.connections += c.connections;
      m.open_chunks += c.open_chunks;
      m.memory_bytes += c.memory_bytes;
      m.waiting += c.waiting;
      m.failed = m.failed || c.failed;
    }
  }
  for (auto& [id, c] : by_id) comms->push_back(c);
  return t;
}

void communicators(TextWriter* out, std::vector<CommStats> comms) {
  // Bounded labels: the communicators holding the most memory, the rest only counted.
  std::sort(comms.begin(), comms.end(), [](const CommStats& a, const CommStats& b) {
    return a.memory_bytes != b.memory_bytes ? a.memory_bytes > b.memory_bytes
                                            : a.comm_id < b.comm_id;
  });
  const size_t listed = std::min(comms.size(), kMaxCommsListed);
  struct Gauge {
    const char* name;
    const char* help;
    double (*value)(const CommStats&);
  };
  const Gauge gauges[] = {
      {"libreduce_reducer_comm_ranks", "Ranks of the communicator.",
       [](const CommStats& c) { return static_cast<double>(c.ranks); }},
      {"libreduce_reducer_comm_connections", "Its ranks' connections joined here (two per rank).",
       [](const CommStats& c) { return static_cast<double>(c.connections); }},
      {"libreduce_reducer_comm_open_chunks", "Chunks of its operations open here.",
       [](const CommStats& c) { return static_cast<double>(c.open_chunks); }},
      {"libreduce_reducer_comm_memory_bytes",
       "Bytes it holds here: state, chunk buffers and bookkeeping.",
       [](const CommStats& c) { return static_cast<double>(c.memory_bytes); }},
      {"libreduce_reducer_comm_waiting_contributions", "Its contributions waiting for memory.",
       [](const CommStats& c) { return static_cast<double>(c.waiting); }},
      {"libreduce_reducer_comm_failed", "1 once it failed (its connections close soon after).",
       [](const CommStats& c) { return c.failed ? 1.0 : 0.0; }},
  };
  for (const Gauge& g : gauges) {
    out->family(g.name, "gauge", g.help);
    for (size_t i = 0; i < listed; ++i) {
      out->sample(g.name, {{"comm", metrics::commIdText(comms[i].comm_id)}}, g.value(comms[i]));
    }
  }
  one(out, "libreduce_reducer_comms_unlisted", "gauge",
      "Communicators here beyond the ones listed by id.",
      static_cast<double>(comms.size() - listed));
}

}  // namespace

std::string renderReducerMetrics(const std::vector<ServerStats>& lanes) {
  std::vector<CommStats> comms;
  const ServerStats t = sum(lanes, &comms);
  const ReducerCounters& c = t.totals;
  TextWriter out;
  const auto d = [](uint64_t v) { return static_cast<double>(v); };
  one(&out, "libreduce_reducer_received_bytes_total", "counter",
      "Payload bytes of the contributions taken.", d(c.bytes_received));
  one(&out, "libreduce_reducer_sent_bytes_total", "counter",
      "Payload bytes of the results sent, to every rank.", d(c.bytes_sent));
  one(&out, "libreduce_reducer_chunks_received_total", "counter", "Contributions taken.",
      d(c.chunks_received));
  one(&out, "libreduce_reducer_chunks_served_total", "counter",
      "Chunks whose result (or acknowledgement) went out.", d(t.chunks_served_total));
  one(&out, "libreduce_reducer_operations_served_total", "counter",
      "Operations with a chunk served here.", d(c.ops_served));
  one(&out, "libreduce_reducer_operations_failed_total", "counter",
      "Operations failed here (mismatched arguments, a timeout, a rank that left).",
      d(c.ops_failed));
  one(&out, "libreduce_reducer_reductions_total", "counter", "Reduction passes run.",
      d(c.reductions));
  one(&out, "libreduce_reducer_reduction_seconds_total", "counter",
      "Time spent in reduction passes.", c.reduce_seconds);
  one(&out, "libreduce_reducer_communicators", "gauge", "Communicators here now.",
      d(t.communicators));
  one(&out, "libreduce_reducer_communicators_failed_total", "counter",
      "Communicators that failed here and ended.", d(t.comms_failed));
  one(&out, "libreduce_reducer_connections", "gauge", "Worker connections open now.",
      d(t.connections));
  out.family("libreduce_reducer_connections_by_transport", "gauge",
             "Worker connections open now, by the UCX transports and devices their link settled "
             "on (\"tcp/eth0\"; \"unknown\" while it is set up).");
  size_t listed = 0;
  double others = 0;
  for (const auto& [carried_by, n] : t.connections_by_transports) {
    if (++listed > kMaxTransportsListed) {
      others += d(n);
      continue;
    }
    out.sample("libreduce_reducer_connections_by_transport", {{"transports", carried_by}}, d(n));
  }
  if (others > 0) {
    out.sample("libreduce_reducer_connections_by_transport", {{"transports", "other"}}, others);
  }
  one(&out, "libreduce_reducer_connections_failed_total", "counter",
      "Connections closed for a failure: a broken protocol, a lost peer, a timeout.",
      d(t.connections_failed));
  out.family("libreduce_reducer_joins_refused_total", "counter",
             "Joins refused, by cause: authentication (a wrong key), memory (a quota or the "
             "pool), usage (settings that differ between ranks, limits).");
  out.sample("libreduce_reducer_joins_refused_total", {{"cause", "authentication"}},
             d(t.refused_authentication));
  out.sample("libreduce_reducer_joins_refused_total", {{"cause", "memory"}}, d(t.refused_memory));
  out.sample("libreduce_reducer_joins_refused_total", {{"cause", "usage"}}, d(t.refused_usage));
  one(&out, "libreduce_reducer_handshakes_refused_total", "counter",
      "Connections the bootstrap handshake refused: a wrong or missing key, garbage.",
      d(t.handshakes_refused));
  one(&out, "libreduce_reducer_rejoins_total", "counter",
      "Communicators admitted here as a replacement for a reducer they lost (failover).",
      d(t.rejoins));
  one(&out, "libreduce_reducer_memory_limit_bytes", "gauge", "The memory limit (--memory-limit).",
      d(t.memory_limit));
  one(&out, "libreduce_reducer_memory_used_bytes", "gauge",
      "Bytes of chunk buffers and reserved state in use.", d(t.memory_in_use));
  one(&out, "libreduce_reducer_memory_peak_bytes", "gauge",
      "The most the buffer pools held (in use and cached).", d(t.memory_peak));
  one(&out, "libreduce_reducer_contributions_waiting", "gauge",
      "Contributions waiting for memory now.", d(t.waiting_for_memory));
  one(&out, "libreduce_reducer_contributions_waited_total", "counter",
      "Contributions that had to wait for memory.", d(t.waited_for_memory));
  communicators(&out, comms);
  one(&out, "process_cpu_seconds_total", "counter", "User and system CPU time of the process.",
      cpuSeconds());
  one(&out, "process_resident_memory_bytes", "gauge", "Resident memory of the process.",
      residentBytes());
  // As node_exporter's node_time_seconds: against the scraper's clock, the skew that lines up
  // (or not) this reducer's timeline with the workers' (reducectl doctor reads it).
  one(&out, "libreduce_reducer_clock_seconds", "gauge",
      "The reducer's wall clock when it answered this scrape, in seconds since the epoch.",
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  return out.text();
}

}  // namespace rd::server
