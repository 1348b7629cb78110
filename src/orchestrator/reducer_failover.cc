// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/reducer_failover.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "common/settings.h"
#include "orchestrator/job_files.h"

namespace rd::orch {

namespace {

struct Event {
  std::string name;
  double time = 0;
  uint32_t reducer = 0;
  std::string address;
  std::string reason;
  long number = -1;  // silentMs, stalledMs or fromOperation
};

bool parseEvent(const std::string& line, Event* e) {
  try {
    YAML::Node n = YAML::Load(line);
    if (!n.IsMap() || !n["event"] || !n["time"] || !n["address"]) return false;
    e->name = n["event"].as<std::string>();
    e->time = n["time"].as<double>();
    e->reducer = n["reducer"] ? n["reducer"].as<uint32_t>() : 0;
    e->address = n["address"].as<std::string>();
    for (const char* key : {"silentMs", "stalledMs", "fromOperation"}) {
      if (n[key]) e->number = n[key].as<long>();
    }
    if (n["reason"]) e->reason = n["reason"].as<std::string>();
    return true;
  } catch (const YAML::Exception&) {
    return false;
  }
}

// The record an event of @p address belongs to: the latest one for a follow-up event, the
// oldest one not yet seen by the ranks for a loss.
FailoverRecord* recordFor(std::vector<FailoverRecord>* failovers, const Event& e) {
  const bool loss = e.name == "reducerLost";
  FailoverRecord* found = nullptr;
  for (auto& f : *failovers) {
    if (f.address != e.address) continue;
    if (loss && f.silent_ms < 0) return &f;
    if (!loss) found = &f;
  }
  return found;
}

}  // namespace

bool reducersFailOver(const JobSpec& spec) {
  if (spec.pool(PoolKind::kReducers).replica_count < 2) return false;
  std::string value = settings::rawValue(settings::Id::kFailover);
  for (const auto& [name, v] : spec.libreduce_env) {
    if (name == "LIBREDUCE_FAILOVER") value = v;
  }
  return value != "0";
}

bool reducersReplaced(const JobSpec& spec) {
  const PoolSpec& pool = spec.pool(PoolKind::kReducers);
  return pool.command.empty() && pool.container.image_uri.empty() && reducersFailOver(spec);
}

std::string rankEventsFile(const std::string& output_dir, const std::string& replica) {
  return output_dir + "/reducectl/" + replica + ".events";
}

double epochSecondsAgo(double seconds) {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
             .count() -
         seconds;
}

void recordReducerLoss(const std::string& attempt_dir, const std::string& replica,
                       const std::string& address, const std::string& cause) {
  double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  char time_text[32];
  std::snprintf(time_text, sizeof time_text, "%.3f", now);
  std::ofstream(attempt_dir + "/failovers", std::ios::app)
      << time_text << " " << replica << " " << address << " " << cause << "\n";
}

void readReducerLosses(const std::string& attempt_dir, double job_start_epoch_s,
                       std::vector<FailoverRecord>* failovers) {
  std::ifstream in(attempt_dir + "/failovers");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    double at = 0;
    FailoverRecord f;
    if (!(fields >> at >> f.reducer >> f.address)) continue;
    std::getline(fields >> std::ws, f.cause);
    f.lost_at_s = f.replaced_at_s = at - job_start_epoch_s;
    failovers->push_back(f);
  }
}

void mergeRankEvents(const JobSpec& spec, const std::string& output_dir, double job_start_epoch_s,
                     std::vector<FailoverRecord>* failovers, std::string* warning) {
  const std::string path =
      rankEventsFile(output_dir, std::string(poolName(rankZeroPool(spec))) + "-0");
  std::ifstream in(path);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    Event e;
    if (!parseEvent(line, &e)) {
      if (warning->empty()) *warning = path + ":" + std::to_string(line_no) + ": not an event";
      continue;
    }
    const double at_s = e.time - job_start_epoch_s;
    FailoverRecord* f = recordFor(failovers, e);
    if (e.name == "reducerLost") {
      if (f == nullptr) {
        failovers->push_back(FailoverRecord{});
        f = &failovers->back();
        f->reducer = "reducer-" + std::to_string(e.reducer);  // the ranks list them in order
        f->address = e.address;
        f->lost_at_s = at_s;
        f->cause = "left by the ranks: " + e.reason;
      }
      f->silent_ms = std::max(0L, e.number);
    } else if (f != nullptr && e.name == "reducerRecovered") {
      f->stalled_ms = std::max(0L, e.number);
    } else if (f != nullptr && e.name == "reducerBack") {
      f->readmitted_from_op = e.number;
      f->readmitted_at_s = at_s;
    }
  }
}

}  // namespace rd::orch
