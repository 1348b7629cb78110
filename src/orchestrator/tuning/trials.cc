// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/tuning/trials.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <yaml-cpp/yaml.h>

#include "common/json_text.h"

namespace rd::orch::tune {
namespace {

constexpr TrialState kStates[] = {TrialState::kActive,    TrialState::kStopping,
                                  TrialState::kSucceeded, TrialState::kInfeasible,
                                  TrialState::kFailed,    TrialState::kStopped};

// JSON has no NaN or Inf: those are null.
std::string jsonNumber(double v) {
  return std::isfinite(v) ? formatNumber(v) : "null";
}

std::string measurementJson(const Measurement& m) {
  std::string out = "{\"stepCount\": " + std::to_string(m.step) +
                    ", \"timestamp\": " + jsonNumber(m.timestamp) + ", \"metrics\": [";
  bool first = true;
  for (const auto& [id, value] : m.metrics) {
    out += std::string(first ? "" : ", ") + "{\"metricId\": " + jsonString(id) +
           ", \"value\": " + jsonNumber(value) + "}";
    first = false;
  }
  return out + "]}";
}

std::string parametersJson(const Assignment& params) {
  std::string out = "[";
  for (size_t i = 0; i < params.size(); ++i) {
    const ParameterValue& p = params[i];
    out += std::string(i ? ", " : "") + "{\"parameterId\": " + jsonString(p.id) +
           ", \"value\": " + (p.is_text ? jsonString(p.text) : jsonNumber(p.number)) + "}";
  }
  return out + "]";
}

std::string trialJson(const Trial& t) {
  std::string out = "    {\"id\": " + jsonString(t.id) +
                    ", \"state\": " + jsonString(trialStateName(t.state)) +
                    ",\n     \"parameters\": " + parametersJson(t.parameters);
  if (t.final_measurement) {
    out += ",\n     \"finalMeasurement\": " + measurementJson(*t.final_measurement);
  }
  out += ",\n     \"measurements\": [";
  for (size_t i = 0; i < t.measurements.size(); ++i) {
    out += std::string(i ? ",\n       " : "\n       ") + measurementJson(t.measurements[i]);
  }
  out += "]";
  if (t.early_stopped) out += ",\n     \"earlyStopped\": true";
  if (!t.cause.empty()) out += ",\n     \"cause\": " + jsonString(t.cause);
  out += ",\n     \"startTime\": " + jsonString(t.start_time);
  if (!t.end_time.empty()) out += ", \"endTime\": " + jsonString(t.end_time);
  out += ", \"startEpochSeconds\": " + jsonNumber(t.start_epoch);
  out += ",\n     \"jobDirectory\": " + jsonString(t.job_dir) + "}";
  return out;
}

// ---- reading back -----------------------------------------------------------------------------

Measurement readMeasurement(const YAML::Node& n) {
  Measurement m;
  m.step = n["stepCount"].as<int64_t>(0);
  if (n["timestamp"] && !n["timestamp"].IsNull()) m.timestamp = n["timestamp"].as<double>();
  for (const YAML::Node& metric : n["metrics"]) {
    if (metric["value"].IsNull()) continue;
    m.metrics[metric["metricId"].as<std::string>()] = metric["value"].as<double>();
  }
  return m;
}

Trial readTrial(const YAML::Node& n) {
  Trial t;
  t.id = n["id"].as<std::string>();
  std::string state = n["state"].as<std::string>();
  for (TrialState s : kStates) {
    if (state == trialStateName(s)) t.state = s;
  }
  if (!isFinal(t.state)) {
    t.state = TrialState::kStopped;
    t.cause = "reducectl ended while the trial ran";
  }
  for (const YAML::Node& p : n["parameters"]) {
    ParameterValue v;
    v.id = p["parameterId"].as<std::string>();
    // Categories were written as JSON strings; yaml-cpp cannot tell "3" from 3 after loading,
    // so the caller re-types values against the study (see TuningJob::resume).
    v.text = p["value"].as<std::string>();
    t.parameters.push_back(v);
  }
  if (n["finalMeasurement"]) t.final_measurement = readMeasurement(n["finalMeasurement"]);
  for (const YAML::Node& m : n["measurements"]) t.measurements.push_back(readMeasurement(m));
  t.early_stopped = n["earlyStopped"].as<bool>(false);
  t.cause = n["cause"].as<std::string>(t.cause);
  t.start_time = n["startTime"].as<std::string>("");
  t.end_time = n["endTime"].as<std::string>("");
  t.start_epoch = n["startEpochSeconds"].as<double>(0);
  t.job_dir = n["jobDirectory"].as<std::string>("");
  return t;
}

// A column of at least @p width, and at least two spaces before the next one.
std::string pad(const std::string& s, size_t width) {
  return s + std::string(s.size() + 2 > width ? 2 : width - s.size(), ' ');
}

// For reading, not for reading back: 4 significant digits.
std::string shortValue(const ParameterValue& p) {
  if (p.is_text) return p.text;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", p.number);
  return buf;
}

}  // namespace

std::string shortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

const char* trialStateName(TrialState state) {
  switch (state) {
    case TrialState::kActive: return "ACTIVE";
    case TrialState::kStopping: return "STOPPING";
    case TrialState::kSucceeded: return "SUCCEEDED";
    case TrialState::kInfeasible: return "INFEASIBLE";
    case TrialState::kFailed: return "FAILED";
    case TrialState::kStopped: return "STOPPED";
  }
  return "UNKNOWN";
}

bool isFinal(TrialState state) {
  return state != TrialState::kActive && state != TrialState::kStopping;
}

bool better(double a, double b, Goal goal) {
  return goal == Goal::kMaximize ? a > b : a < b;
}

std::optional<double> objectiveOf(const Measurement& m, const std::vector<MetricSpec>& metrics) {
  if (metrics.empty()) return std::nullopt;
  auto it = m.metrics.find(metrics[0].id);
  if (it == m.metrics.end() && metrics.size() == 1) it = m.metrics.find(kDefaultMetricTag);
  if (it == m.metrics.end()) return std::nullopt;
  return it->second;
}

std::optional<Measurement> selectMeasurement(const std::vector<Measurement>& measurements,
                                             const std::vector<MetricSpec>& metrics, bool best) {
  std::optional<Measurement> chosen;
  std::optional<double> chosen_value;
  for (const Measurement& m : measurements) {
    std::optional<double> v = objectiveOf(m, metrics);
    if (!v) continue;
    if (!best || !chosen_value || better(*v, *chosen_value, metrics[0].goal)) {
      chosen = m;
      chosen_value = v;
    }
  }
  return chosen;
}

int bestTrial(const TuningRecord& record) {
  int best = -1;
  double best_value = 0;
  for (size_t i = 0; i < record.trials.size(); ++i) {
    const Trial& t = record.trials[i];
    if (t.state != TrialState::kSucceeded || !t.final_measurement) continue;
    std::optional<double> v = objectiveOf(*t.final_measurement, record.metrics);
    if (v && (best < 0 || better(*v, best_value, record.metrics[0].goal))) {
      best = static_cast<int>(i);
      best_value = *v;
    }
  }
  return best;
}

std::string tuningRecordJson(const TuningRecord& record) {
  std::string out = "{\"tuningJobId\": " + jsonString(record.tuning_job_id) +
                    ",\n \"displayName\": " + jsonString(record.display_name) +
                    ",\n \"state\": " + jsonString(record.state);
  if (!record.cause.empty()) out += ",\n \"cause\": " + jsonString(record.cause);
  out += ",\n \"startTime\": " + jsonString(record.start_time);
  if (!record.end_time.empty()) out += ",\n \"endTime\": " + jsonString(record.end_time);
  out += ",\n \"metrics\": [";
  for (size_t i = 0; i < record.metrics.size(); ++i) {
    const MetricSpec& m = record.metrics[i];
    out += std::string(i ? ", " : "") + "{\"metricId\": " + jsonString(m.id) +
           ", \"goal\": " + (m.goal == Goal::kMaximize ? "\"MAXIMIZE\"" : "\"MINIMIZE\"") + "}";
  }
  int best = bestTrial(record);
  out += "],\n \"bestTrialId\": " +
         (best < 0 ? std::string("null") : jsonString(record.trials[best].id));
  out += ",\n \"trials\": [";
  for (size_t i = 0; i < record.trials.size(); ++i) {
    out += std::string(i ? ",\n" : "\n") + trialJson(record.trials[i]);
  }
  return out + "]}\n";
}

bool parseTuningRecord(const std::string& text, TuningRecord* record, std::string* error) {
  try {
    YAML::Node root = YAML::Load(text);
    TuningRecord r;
    r.tuning_job_id = root["tuningJobId"].as<std::string>();
    r.display_name = root["displayName"].as<std::string>("");
    r.state = root["state"].as<std::string>("");
    r.start_time = root["startTime"].as<std::string>("");
    for (const YAML::Node& m : root["metrics"]) {
      MetricSpec spec;
      spec.id = m["metricId"].as<std::string>();
      spec.goal = m["goal"].as<std::string>() == "MINIMIZE" ? Goal::kMinimize : Goal::kMaximize;
      r.metrics.push_back(spec);
    }
    for (const YAML::Node& t : root["trials"]) r.trials.push_back(readTrial(t));
    *record = std::move(r);
    return true;
  } catch (const YAML::Exception& e) {
    *error = "trials.json is not a tuning record: " + e.msg;
    return false;
  }
}

std::string trialsTable(const TuningRecord& record) {
  std::vector<std::string> ids;  // parameter columns: every id any trial has, in first-seen order
  for (const Trial& t : record.trials) {
    for (const ParameterValue& p : t.parameters) {
      if (std::find(ids.begin(), ids.end(), p.id) == ids.end()) ids.push_back(p.id);
    }
  }
  const std::string objective = record.metrics.empty() ? "objective" : record.metrics[0].id;
  std::string out = pad("trial", 7) + pad("state", 12);
  for (const std::string& id : ids) out += pad(id, std::max<size_t>(12, id.size() + 2));
  out += objective + "\n";
  int best = bestTrial(record);
  for (size_t i = 0; i < record.trials.size(); ++i) {
    const Trial& t = record.trials[i];
    std::string state = trialStateName(t.state);
    if (t.early_stopped) state += "*";
    out += pad(t.id + (static_cast<int>(i) == best ? " <" : ""), 7) + pad(state, 12);
    for (const std::string& id : ids) {
      std::string value = "-";
      for (const ParameterValue& p : t.parameters) {
        if (p.id == id) value = shortValue(p);
      }
      out += pad(value, std::max<size_t>(12, id.size() + 2));
    }
    std::optional<double> v;
    if (t.final_measurement) v = objectiveOf(*t.final_measurement, record.metrics);
    out += (v ? shortNumber(*v) : std::string("-")) + "\n";
  }
  if (best >= 0) out += "best: trial " + record.trials[best].id + " (<)";
  bool any_early = false;
  for (const Trial& t : record.trials) any_early = any_early || t.early_stopped;
  if (any_early) out += std::string(best >= 0 ? "; " : "") + "* stopped early";
  return out + "\n";
}

}  // namespace rd::orch::tune
