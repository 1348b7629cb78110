// SPDX-License-Identifier: BSD-3-Clause
// The trials of a tuning job as reducectl tracks them, and what is written about them:
// trials.json in the tuning job's directory (rewritten atomically after every change; read back
// by `reducectl tune --resume`), and the table printed at the end.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "orchestrator/tuning/hypertune_metrics.h"
#include "orchestrator/tuning/study.h"

namespace rd::orch::tune {

/**
 * A trial's life: ACTIVE while its job runs, STOPPING once early stopping or the end of the study
 * asked it to end, then one of the final states. SUCCEEDED: the job ended well and reported the
 * objective (also when stopped early); INFEASIBLE: it ended well but never reported the
 * objective; FAILED: its job failed (counts against maxFailedTrialCount); STOPPED: cancelled by
 * the user (Ctrl-C); a resumed tuning job runs its parameters again as a new trial.
 */
enum class TrialState { kActive, kStopping, kSucceeded, kInfeasible, kFailed, kStopped };

const char* trialStateName(TrialState state);
bool isFinal(TrialState state);

struct Trial {
  std::string id;  // "1", "2", ...: also its directory under the tuning job's
  Assignment parameters;
  TrialState state = TrialState::kActive;
  bool early_stopped = false;
  std::string cause;       // why it failed or was stopped
  std::string job_dir;     // BASE/TUNING_JOB_ID/ID
  std::string start_time;  // ISO 8601
  std::string end_time;
  double start_epoch = 0;  // wall-clock start, seconds since the epoch (elapsed-time stopping)
  std::vector<Measurement> measurements;
  std::optional<Measurement> final_measurement;  // the one the study counts
  int pid = 0;  // the process running its job while ACTIVE or STOPPING
};

/** The tuning job's record: its identity, state and trials. */
struct TuningRecord {
  std::string tuning_job_id;
  std::string display_name;
  std::string state;  // "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"
  std::string cause;
  std::string start_time;
  std::string end_time;
  std::vector<MetricSpec> metrics;
  std::vector<Trial> trials;
};

/**
 * The objective (the first metric) of @p m, if reported. A study with one metric also takes the
 * default tag (training code that reported with an empty tag).
 */
std::optional<double> objectiveOf(const Measurement& m, const std::vector<MetricSpec>& metrics);

/**
 * The measurement that counts for the study: the last one that reported the objective, or with
 * @p best the best of them for @p goal. Empty when none reported it.
 */
std::optional<Measurement> selectMeasurement(const std::vector<Measurement>& measurements,
                                             const std::vector<MetricSpec>& metrics, bool best);

/** True when @p a is better than @p b for @p goal. */
bool better(double a, double b, Goal goal);

/** The best trial with a final objective, or -1. */
int bestTrial(const TuningRecord& record);

/** trials.json: the record with every trial's id, state, parameters, measurements and times. */
std::string tuningRecordJson(const TuningRecord& record);

/**
 * Reads trials.json as tuningRecordJson wrote it (for --resume); trials still ACTIVE or
 * STOPPING there (reducectl was killed) come back as STOPPED. False with @p error if malformed.
 */
bool parseTuningRecord(const std::string& text, TuningRecord* record, std::string* error);

/** @p v with 6 significant digits: objectives as people read them (not for reading back). */
std::string shortNumber(double v);

/** The table printed at the end: one row per trial, parameters and objective, best marked. */
std::string trialsTable(const TuningRecord& record);

}  // namespace rd::orch::tune
