// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/tuning/early_stopping.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace rd::orch::tune {
namespace {

// Where a measurement lies on the axis trials are compared along.
double position(const Measurement& m, const Trial& t, bool elapsed) {
  return elapsed ? m.timestamp - t.start_epoch : static_cast<double>(m.step);
}

// The best objective @p t reported at or before @p at (every report when @p at is empty).
std::optional<double> bestUpTo(const Trial& t, const std::vector<MetricSpec>& metrics,
                               std::optional<double> at, bool elapsed) {
  std::optional<double> best;
  for (const Measurement& m : t.measurements) {
    if (at && position(m, t, elapsed) > *at) continue;
    std::optional<double> v = objectiveOf(m, metrics);
    if (v && (!best || better(*v, *best, metrics[0].goal))) best = v;
  }
  return best;
}

}  // namespace

bool shouldStopEarly(const Trial& trial, const TuningRecord& record, const StudySpec& study,
                     std::string* why) {
  if (!study.median_stopping || trial.measurements.empty() || study.metrics.empty()) return false;
  size_t finished = 0;
  for (const Trial& t : record.trials) finished += isFinal(t.state) ? 1 : 0;
  if (finished < static_cast<size_t>(study.min_num_trials)) return false;
  const bool elapsed = study.median_use_elapsed;
  double at = position(trial.measurements.back(), trial, elapsed);
  std::optional<double> mine = bestUpTo(trial, study.metrics, std::nullopt, elapsed);
  if (!mine) return false;
  std::vector<double> others;
  for (const Trial& t : record.trials) {
    if (t.state != TrialState::kSucceeded || &t == &trial) continue;
    if (std::optional<double> v = bestUpTo(t, study.metrics, at, elapsed)) others.push_back(*v);
  }
  if (others.size() < kMedianMinTrials) return false;
  std::sort(others.begin(), others.end());
  size_t n = others.size();
  double median = n % 2 == 1 ? others[n / 2] : (others[n / 2 - 1] + others[n / 2]) / 2;
  if (!better(median, *mine, study.metrics[0].goal)) return false;
  *why = "its best " + study.metrics[0].id + " so far, " + shortNumber(*mine) +
         ", is worse than the median " + shortNumber(median) + " of " + std::to_string(n) +
         " completed trials at the same " +
         (elapsed ? "time (" + shortNumber(at) + " s)" : "step (" + shortNumber(at) + ")");
  return true;
}

std::string studyStopReason(const TuningRecord& record, const StudySpec& study, double elapsed_s,
                            double since_progress_s, int trials_since_progress) {
  int best = bestTrial(record);
  if (best >= 0) {
    const Trial& t = record.trials[static_cast<size_t>(best)];
    std::optional<double> v = objectiveOf(*t.final_measurement, study.metrics);
    if (v && study.has_min_objective && *v <= study.min_objective) {
      return "trial " + t.id + " reached minimumObjectiveValue (" + shortNumber(*v) + ")";
    }
    if (v && study.has_max_objective && *v >= study.max_objective) {
      return "trial " + t.id + " reached maximumObjectiveValue (" + shortNumber(*v) + ")";
    }
  }
  if (study.max_trials_no_progress > 0 && trials_since_progress >= study.max_trials_no_progress) {
    return std::to_string(trials_since_progress) +
           " trials finished without improving the best (maxNumTrialsNoProgress)";
  }
  if (study.max_duration_no_progress_s > 0 &&
      since_progress_s >= static_cast<double>(study.max_duration_no_progress_s)) {
    return "the best did not improve for " + shortNumber(since_progress_s) +
           " s (maxDurationNoProgress)";
  }
  if (study.max_duration_s > 0 && elapsed_s >= static_cast<double>(study.max_duration_s)) {
    return "the study ran " + shortNumber(elapsed_s) + " s (maximumRuntimeConstraint)";
  }
  return "";
}

}  // namespace rd::orch::tune
