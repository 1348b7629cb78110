// SPDX-License-Identifier: BSD-3-Clause
// The reducectl tuning spec, shaped like Vertex AI's HyperparameterTuningJob: displayName,
// baseOutputDirectory, maxTrialCount, parallelTrialCount, maxFailedTrialCount, studySpec and
// trialJobSpec (a job spec as `reducectl run` takes it, displayName optional). Parsed and checked
// in full before any trial starts; every error names file:line:column and the field.
#pragma once

#include <string>

#include "orchestrator/job_spec.h"
#include "orchestrator/tuning/study.h"

namespace rd::orch::tune {

struct TuningSpec {
  std::string name;             // displayName
  std::string base_output_dir;  // trials run in BASE/TUNING_JOB_ID/TRIAL_ID
  int max_trials = 0;           // maxTrialCount
  int parallel_trials = 1;      // parallelTrialCount
  // maxFailedTrialCount: the tuning job fails once this many trials failed; 0: no limit (it
  // fails only if no trial succeeds).
  int max_failed_trials = 0;
  StudySpec study;
  JobSpec trial;  // trialJobSpec; its name is the tuning job's when it has none
};

/**
 * Parses and validates @p text (YAML or JSON); @p source names it in messages. On failure false
 * with "SOURCE:LINE:COLUMN: FIELD.PATH: what is wrong; what is allowed" in @p error. Relative
 * directories in it are relative to @p source's directory (the spec file's path).
 */
bool parseTuningSpec(const std::string& text, const std::string& source, TuningSpec* spec,
                     std::string* error);

/** Reads the file at @p path and parses it. */
bool loadTuningSpec(const std::string& path, TuningSpec* spec, std::string* error);

/** True when @p text is a tuning spec (it has studySpec or trialJobSpec at the top). */
bool looksLikeTuningSpec(const std::string& text);

}  // namespace rd::orch::tune
