// SPDX-License-Identifier: BSD-3-Clause
// The study of a tuning job, as Vertex AI's StudySpec describes it: the metrics to optimize and
// the parameters to search, with their ranges, scales and conditions. Filled by the tuning spec's
// parser (tuning_spec.h); read by the searchers (search.h) and the trial runner.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rd::orch::tune {

enum class Goal { kMaximize, kMinimize };

/** How a numeric parameter maps to the unit interval the searchers work in. */
enum class ScaleType {
  kLinear,      // UNIT_LINEAR_SCALE (the default)
  kLog,         // UNIT_LOG_SCALE: log(x) is uniform; the range must be > 0
  kReverseLog,  // UNIT_REVERSE_LOG_SCALE: log(max + min - x) is uniform (dense near max)
};

enum class ParameterKind { kDouble, kInteger, kCategorical, kDiscrete };

enum class Algorithm { kBayesian, kGrid, kRandom };

struct ParameterSpec;

/** A child parameter, active only when its parent takes one of the listed values. */
struct ConditionalParameter {
  // The parent's values that activate the child: categories (categorical parent) or numbers
  // (integer or discrete parent). Exactly one of the two is non-empty.
  std::vector<std::string> parent_categories;
  std::vector<double> parent_values;
  std::vector<ParameterSpec> children;  // one in practice (Vertex's parameterSpec), kept general
};

struct ParameterSpec {
  std::string id;  // parameterId: the program gets --id=value
  ParameterKind kind = ParameterKind::kDouble;
  double min = 0;  // kDouble, kInteger (inclusive)
  double max = 0;
  std::vector<std::string> categories;   // kCategorical, in spec order
  std::vector<double> values;            // kDiscrete, ascending, distinct
  ScaleType scale = ScaleType::kLinear;  // kDouble, kInteger, kDiscrete
  std::vector<ConditionalParameter> conditionals;
};

struct MetricSpec {
  std::string id;  // metricId: the hypertune tag it is reported under
  Goal goal = Goal::kMaximize;
};

struct StudySpec {
  std::vector<MetricSpec> metrics;  // the first drives the search; the others are recorded
  std::vector<ParameterSpec> parameters;
  Algorithm algorithm = Algorithm::kBayesian;
  bool best_measurement = false;    // measurementSelectionType BEST_MEASUREMENT (else LAST)
  bool median_stopping = false;     // medianAutomatedStoppingSpec given
  bool median_use_elapsed = false;  // its useElapsedDuration: compare at equal time, not step
  // studyStoppingConfig: 0 / empty when not given.
  int max_trials_no_progress = 0;
  int64_t max_duration_no_progress_s = 0;
  int64_t max_duration_s = 0;      // maximumRuntimeConstraint.maxDuration of the study
  int min_num_trials = 0;          // minNumTrials: no stopping rule applies before
  int max_num_trials = 0;          // maxNumTrials (the job's maxTrialCount caps it too)
  bool has_min_objective = false;  // minimumObjectiveValue: stop once reached (MINIMIZE)
  double min_objective = 0;
  bool has_max_objective = false;  // maximumObjectiveValue: stop once reached (MAXIMIZE)
  double max_objective = 0;
  uint64_t seed = 0;  // libreduce's own: makes suggestions reproducible (0: from the clock)
};

/** One parameter's value in a trial. */
struct ParameterValue {
  std::string id;
  bool is_text = false;  // categorical: text holds the category
  double number = 0;     // integer, double, discrete
  std::string text;
};

/** A trial's parameters: the active ones only, parents before their children. */
using Assignment = std::vector<ParameterValue>;

/** "--id=value" as the program gets it (integers without a fraction, doubles round-trip). */
std::string formatArgument(const ParameterValue& value);

/** The value alone, as formatArgument writes it after '='. */
std::string formatValue(const ParameterValue& value);

/**
 * @p x as the shortest text that reads back as the same double; integral values within 2^53
 * without exponent ("1000000", not "1e+06"). Finite values only.
 */
std::string formatNumber(double x);

}  // namespace rd::orch::tune
