// SPDX-License-Identifier: BSD-3-Clause
// A tuning job on this machine: trials suggested by the study's searcher, each a whole local job
// (its own reducers, secret and communicator) run by a child process of reducectl, at most
// parallelTrialCount at once; their hypertune reports read while they run (median early
// stopping), the study's stopping rules, Ctrl-C, and the record (trials.json, the table, a plot).
#pragma once

#include <string>

#include "orchestrator/local_backend.h"
#include "orchestrator/tuning/tuning_spec.h"

namespace rd::orch::tune {

struct TuneOptions {
  RunOptions run;          // each trial's (reducer program, grace periods, ...)
  std::string job_id;      // the tuning job's id; empty: NAME-YYYYMMDD-HHMMSS-XXXX
  std::string resume_dir;  // continue the tuning job whose directory this is
  std::string plot_tool;   // the script that draws trials.png ("" or missing: no plot)
  bool quiet = false;      // no line per trial event on the terminal
};

/**
 * Runs the tuning job to its end: SUCCEEDED when a trial reported the objective (exit 0), FAILED
 * (1), or CANCELLED by signal N (128 + N). @p spec_text is the spec as given: it is kept in the
 * tuning job's directory for --resume. Blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD while it runs.
 */
int runTuningJob(const TuningSpec& spec, const std::string& spec_text, const TuneOptions& options);

/** The spec file a tuning job keeps in its directory (what --resume reads). */
inline constexpr const char* kKeptSpecName = "tuning_spec.yaml";

}  // namespace rd::orch::tune
