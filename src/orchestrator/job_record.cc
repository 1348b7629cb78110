// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/job_record.h"

#include <cstdio>
#include <ctime>
#include <map>

#include "common/json_text.h"
#include "orchestrator/job_files.h"

namespace rd::orch {

namespace {

std::string clockText(double seconds) {
  int total = static_cast<int>(seconds);
  char buf[32];
  if (total >= 3600) {
    std::snprintf(buf, sizeof buf, "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%d:%02d", total / 60, total % 60);
  }
  return buf;
}

}  // namespace

std::string statusLine(const char* state, double seconds, const std::vector<Replica>& replicas,
                       int restarts, int max_restarts) {
  // Per pool: replicas running (reducers: ready) out of the pool's size.
  std::map<int, std::pair<int, int>> pools;
  for (const auto& r : replicas) {
    auto& [up, all] = pools[static_cast<int>(r.id.pool)];
    ++all;
    bool counted = r.id.pool == PoolKind::kReducers ? r.running && r.ready : r.running;
    if (counted) ++up;
  }
  std::string line = std::string(state) + " " + clockText(seconds);
  for (const auto& [pool, counts] : pools) {
    line += std::string(" | ") + poolName(static_cast<PoolKind>(pool)) + " " +
            std::to_string(counts.first) + "/" + std::to_string(counts.second);
  }
  if (max_restarts > 0) {
    line += " | restarts " + std::to_string(restarts) + "/" + std::to_string(max_restarts);
  }
  return line;
}

std::string jobRecordJson(const JobRecord& record, const std::vector<Replica>& replicas) {
  std::string out = "{\n";
  out += "  \"jobId\": " + jsonString(record.layout.job_id) + ",\n";
  out += "  \"displayName\": " + jsonString(record.spec.name) + ",\n";
  out +=
      "  \"state\": " + jsonString(std::string("JOB_STATE_") + jobStateName(record.state)) + ",\n";
  out += "  \"cause\": " + jsonString(record.cause) + ",\n";
  out += "  \"startTime\": " + jsonString(record.started_wall) + ",\n";
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", record.seconds);
  out += std::string("  \"durationSeconds\": ") + seconds + ",\n";
  out += "  \"attempts\": " + std::to_string(record.layout.attempt + 1) + ",\n";
  out += "  \"restarts\": " + std::to_string(record.restarts) + ",\n";
  out += "  \"outputDirectory\": " + jsonString(record.layout.output_dir) + ",\n";
  if (!record.slurm_jobs.empty()) {
    out += "  \"slurmJobIds\": " + jsonString(record.slurm_jobs) + ",\n";
  }
  out += "  \"failovers\": [";
  for (size_t i = 0; i < record.failovers.size(); ++i) {
    const FailoverRecord& f = record.failovers[i];
    char times[400];
    std::snprintf(times, sizeof times,
                  ", \"lostAtSeconds\": %.3f, \"replacedAtSeconds\": %.3f, "
                  "\"replacementReadyAtSeconds\": %.3f, \"silentMs\": %ld, \"stalledMs\": %ld, "
                  "\"timeLostMs\": %ld, \"readmittedFromOperation\": %ld, "
                  "\"readmittedAtSeconds\": %.3f",
                  f.lost_at_s, f.replaced_at_s, f.back_ready_at_s, f.silent_ms, f.stalled_ms,
                  f.silent_ms >= 0 && f.stalled_ms >= 0 ? f.silent_ms + f.stalled_ms : -1,
                  f.readmitted_from_op, f.readmitted_at_s);
    out += i == 0 ? "\n" : ",\n";
    out += "    {\"reducer\": " + jsonString(f.reducer) +
           ", \"address\": " + jsonString(f.address) + ", \"cause\": " + jsonString(f.cause) +
           times + "}";
  }
  out += record.failovers.empty() ? "],\n" : "\n  ],\n";
  out += "  \"replicas\": [";
  for (size_t i = 0; i < replicas.size(); ++i) {
    const Replica& r = replicas[i];
    out += i == 0 ? "\n" : ",\n";
    out += "    {\"name\": " + jsonString(r.name) +
           ", \"pool\": " + std::to_string(static_cast<int>(r.id.pool)) +
           ", \"index\": " + std::to_string(r.id.index) +
           ", \"restarts\": " + std::to_string(r.id.restarts) +
           ", \"exitCode\": " + std::to_string(r.exit_code) +
           ", \"result\": " + jsonString(r.result.empty() ? "not started" : r.result) + "}";
  }
  out += "\n  ]\n}\n";
  return out;
}

std::string jobSummary(const JobRecord& record, const std::vector<Replica>& replicas,
                       const std::string& log_dir) {
  char head[256];
  std::snprintf(head, sizeof head, "reducectl: job %s %s after %.1f s",
                record.layout.job_id.c_str(), jobStateName(record.state), record.seconds);
  std::string out = head;
  if (record.layout.attempt > 0 || record.restarts > 0) {
    out += " (" + std::to_string(record.layout.attempt + 1) + " attempt(s), " +
           std::to_string(record.restarts) + " restart(s))";
  }
  out += "\n";
  if (!record.cause.empty()) out += "  cause: " + record.cause + "\n";
  size_t width = 7;
  for (const auto& r : replicas) width = std::max(width, r.name.size());
  for (const auto& r : replicas) {
    std::string result = r.result.empty() ? "not started" : r.result;
    out.append("  ").append(r.name).append(width - r.name.size() + 2, ' ');
    out.append(result).append("\n");
  }
  for (const FailoverRecord& f : record.failovers) {
    char line[200];
    std::snprintf(line, sizeof line, "  failover: %s lost at %.1f s (%s)", f.reducer.c_str(),
                  f.lost_at_s, f.cause.c_str());
    out += line;
    if (f.silent_ms >= 0 && f.stalled_ms >= 0) {
      std::snprintf(line, sizeof line, "; time lost %ld ms (silent %ld, in flight %ld)",
                    f.silent_ms + f.stalled_ms, f.silent_ms, f.stalled_ms);
      out += line;
    }
    if (f.readmitted_from_op >= 0) {
      std::snprintf(line, sizeof line, "; replacement serves from operation %ld (%.1f s)",
                    f.readmitted_from_op, f.readmitted_at_s);
      out += line;
    } else if (f.back_ready_at_s >= 0) {
      std::snprintf(line, sizeof line, "; replacement ready at %.1f s", f.back_ready_at_s);
      out += line;
    } else if (f.replaced_at_s >= 0) {
      out += "; replacement started, not re-admitted before the end";
    } else {
      out += "; not replaced";
    }
    out += "\n";
  }
  out += "  logs: " + log_dir + "\n";
  return out;
}

JobResult reportJobEnd(const JobRecord& record, const std::vector<Replica>& replicas,
                       const std::string& log_dir, int cancel_signal, JobDisplay* display) {
  if (!log_dir.empty()) writeFileAtomically(log_dir + "/job.json", jobRecordJson(record, replicas));
  display->finish();
  std::fputs(jobSummary(record, replicas, log_dir).c_str(), stderr);
  JobResult result;
  result.state = record.state;
  result.cause = record.cause;
  result.output_dir = record.layout.output_dir;
  result.exit_code = jobExitCode(record.state, cancel_signal);
  return result;
}

std::string formatDuration(int64_t seconds) {
  if (seconds < 120) return std::to_string(seconds) + " s";
  if (seconds % 60 == 0 && seconds < 7200) return std::to_string(seconds / 60) + " min";
  return std::to_string(seconds) + " s (" + clockText(static_cast<double>(seconds)) + ")";
}

std::string wallClockNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

}  // namespace rd::orch
