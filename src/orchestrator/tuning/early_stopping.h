// SPDX-License-Identifier: BSD-3-Clause
// When a tuning job stops a trial early, and when it starts no more trials.
#pragma once

#include <string>

#include "orchestrator/tuning/study.h"
#include "orchestrator/tuning/trials.h"

namespace rd::orch::tune {

/** Completed trials the median rule needs before it stops anything. */
inline constexpr size_t kMedianMinTrials = 3;

/**
 * The median automated stopping rule: @p trial (running, with measurements) is stopped when the
 * best objective it reported so far is worse than the median of the completed trials' best
 * objectives reported up to the same point: the same step, or with useElapsedDuration the same
 * time since each trial's start. Needs kMedianMinTrials completed trials that reported by then,
 * and study.min_num_trials finished trials. True with the reason in @p why.
 */
bool shouldStopEarly(const Trial& trial, const TuningRecord& record, const StudySpec& study,
                     std::string* why);

/**
 * The study's stopping rules (studyStoppingConfig): the objective reached minimumObjectiveValue
 * or maximumObjectiveValue, maxNumTrialsNoProgress trials finished without improving the best,
 * maxDurationNoProgress passed since the best improved, or the study ran maxDuration. The reason
 * for starting no more trials, or "".
 */
std::string studyStopReason(const TuningRecord& record, const StudySpec& study, double elapsed_s,
                            double since_progress_s, int trials_since_progress);

}  // namespace rd::orch::tune
