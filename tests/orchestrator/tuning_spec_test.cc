// SPDX-License-Identifier: BSD-3-Clause
// The tuning spec's checks, the median stopping rule, the study's stopping rules and trials.json.
#include <gtest/gtest.h>

#include <string>

#include "orchestrator/tuning/early_stopping.h"
#include "orchestrator/tuning/trials.h"
#include "orchestrator/tuning/tuning_spec.h"

namespace rd::orch::tune {
namespace {

// A valid spec; tests replace one line to make each error.
const char* kSpec = R"(displayName: lr-search
baseOutputDirectory: /tmp/tuning
maxTrialCount: 8
parallelTrialCount: 2
maxFailedTrialCount: 3
studySpec:
  metrics:
  - metricId: accuracy
    goal: MAXIMIZE
  parameters:
  - parameterId: lr
    doubleValueSpec: {minValue: 0.0001, maxValue: 0.1}
    scaleType: UNIT_LOG_SCALE
  - parameterId: optimizer
    categoricalValueSpec: {values: [sgd, adam]}
    conditionalParameterSpecs:
    - parentCategoricalValues: {values: [sgd]}
      parameterSpec:
        parameterId: momentum
        discreteValueSpec: {values: [0.0, 0.9]}
  - parameterId: batch-size
    integerValueSpec: {minValue: 16, maxValue: 64}
  medianAutomatedStoppingSpec: {}
  studyStoppingConfig: {maxNumTrialsNoProgress: 4, maxDurationNoProgress: 600s}
trialJobSpec:
  workerPoolSpecs:
  - replicaCount: 1
    command: [python3, train.py]
  - replicaCount: 1
    command: [python3, train.py]
  - replicaCount: 1
)";

std::string replaced(const std::string& from, const std::string& to) {
  std::string text = kSpec;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string errorOf(const std::string& text) {
  TuningSpec spec;
  std::string error;
  EXPECT_FALSE(parseTuningSpec(text, "tune.yaml", &spec, &error)) << text;
  return error;
}

TEST(TuningSpec, ValidSpecIsReadInFull) {
  TuningSpec spec;
  std::string error;
  ASSERT_TRUE(parseTuningSpec(kSpec, "tune.yaml", &spec, &error)) << error;
  EXPECT_EQ(spec.name, "lr-search");
  EXPECT_EQ(spec.trial.name, "lr-search");  // the trials take the tuning job's name
  EXPECT_EQ(spec.base_output_dir, "/tmp/tuning");
  EXPECT_EQ(spec.max_trials, 8);
  EXPECT_EQ(spec.parallel_trials, 2);
  EXPECT_EQ(spec.max_failed_trials, 3);
  ASSERT_EQ(spec.study.parameters.size(), 3u);
  EXPECT_EQ(spec.study.parameters[0].scale, ScaleType::kLog);
  EXPECT_EQ(spec.study.parameters[1].kind, ParameterKind::kCategorical);
  ASSERT_EQ(spec.study.parameters[1].conditionals.size(), 1u);
  EXPECT_EQ(spec.study.parameters[1].conditionals[0].children[0].id, "momentum");
  EXPECT_EQ(spec.study.parameters[2].kind, ParameterKind::kInteger);
  EXPECT_EQ(spec.study.algorithm, Algorithm::kBayesian);
  EXPECT_TRUE(spec.study.median_stopping);
  EXPECT_EQ(spec.study.max_trials_no_progress, 4);
  EXPECT_EQ(spec.study.max_duration_no_progress_s, 600);
  EXPECT_EQ(spec.trial.pool(PoolKind::kReducers).replica_count, 1);
  EXPECT_TRUE(looksLikeTuningSpec(kSpec));
  EXPECT_FALSE(looksLikeTuningSpec("displayName: x\nworkerPoolSpecs: []\n"));
}

TEST(TuningSpec, ErrorsNameTheFileLineColumnAndField) {
  EXPECT_EQ(errorOf(replaced("maxTrialCount: 8", "maxTrialCount: 0")),
            "tune.yaml:3:16: maxTrialCount: 0 is out of range: allowed 1..100000");
  std::string e = errorOf(replaced("maxTrialCount: 8", "maxTrialCuont: 8"));
  EXPECT_NE(e.find("tune.yaml:3:1: "), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'maxTrialCount'"), std::string::npos) << e;
  e = errorOf(replaced("goal: MAXIMIZE", "goal: MAXIMISE"));
  EXPECT_NE(e.find("tune.yaml:9:11: studySpec.metrics[0].goal: 'MAXIMISE' is not allowed; did "
                   "you mean 'MAXIMIZE'?"),
            std::string::npos)
      << e;
  // Errors inside the trial's job spec carry its path.
  e = errorOf(std::string(kSpec) + "  - replicaCount: 1\n    bogus: 1\n");
  EXPECT_NE(e.find("trialJobSpec.workerPoolSpecs"), std::string::npos) << e;
}

TEST(TuningSpec, ParameterRulesAreChecked) {
  struct Case {
    const char* from;
    const char* to;
    const char* expect;
  };
  const Case cases[] = {
      {"{minValue: 0.0001, maxValue: 0.1}", "{minValue: 0, maxValue: 0.1}",
       "a log scale needs values above 0"},
      {"{minValue: 0.0001, maxValue: 0.1}", "{minValue: 0.2, maxValue: 0.1}",
       "maxValue must be above minValue"},
      {"[0.0, 0.9]", "[0.9, 0.0]", "increasing order"},
      {"[sgd, adam]", "[sgd, sgd]", "'sgd' is listed twice"},
      {"parentCategoricalValues: {values: [sgd]}", "parentCategoricalValues: {values: [rmsprop]}",
       "'rmsprop' is not a category of 'optimizer'"},
      {"parentCategoricalValues", "parentIntValues", "takes parentCategoricalValues"},
      {"parameterId: momentum", "parameterId: lr", "the parameter 'lr' is defined twice"},
      {"parameterId: batch-size", "parameterId: 9lives", "is not a parameter id"},
      {"    integerValueSpec: {minValue: 16, maxValue: 64}",
       "    integerValueSpec: {minValue: 16, maxValue: 64}\n    discreteValueSpec: {values: [1]}",
       "give exactly one of"},
      {"  medianAutomatedStoppingSpec: {}", "  decayCurveStoppingSpec: {}", "not supported"},
      {"  medianAutomatedStoppingSpec: {}", "  algorithm: GRID_SEARCH",
       "GRID_SEARCH takes integer, categorical and discrete parameters only; 'lr' is a double"},
      {"scaleType: UNIT_LOG_SCALE", "scaleType: UNIT_LOG_SCAL", "did you mean 'UNIT_LOG_SCALE'?"},
      {"maxDurationNoProgress: 600s", "maxDurationNoProgress: soon", "is not a duration"},
  };
  for (const Case& c : cases) {
    std::string e = errorOf(replaced(c.from, c.to));
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.to << "\n -> " << e;
    EXPECT_EQ(e.rfind("tune.yaml:", 0), 0u) << e;
  }
}

TEST(TuningSpec, OutputDirectoryIsGivenOnce) {
  std::string twice = std::string(kSpec) + "  baseOutputDirectory: /tmp/other\n";
  EXPECT_NE(errorOf(twice).find("give baseOutputDirectory once"), std::string::npos);
  std::string in_trial =
      replaced("baseOutputDirectory: /tmp/tuning\n", "") + "  baseOutputDirectory: /tmp/other\n";
  TuningSpec spec;
  std::string error;
  ASSERT_TRUE(parseTuningSpec(in_trial, "t", &spec, &error)) << error;
  EXPECT_EQ(spec.base_output_dir, "/tmp/other");
}

// ---- trials, early stopping, study stopping ---------------------------------------------------

Measurement report(int64_t step, double value, double timestamp = 0) {
  Measurement m;
  m.step = step;
  m.timestamp = timestamp;
  m.metrics["accuracy"] = value;
  return m;
}

Trial finished(const std::string& id, std::vector<double> values) {
  Trial t;
  t.id = id;
  t.state = TrialState::kSucceeded;
  for (size_t i = 0; i < values.size(); ++i) {
    t.measurements.push_back(report(static_cast<int64_t>(i), values[i]));
  }
  t.final_measurement = t.measurements.back();
  return t;
}

StudySpec medianStudy() {
  StudySpec study;
  study.metrics = {{"accuracy", Goal::kMaximize}};
  study.median_stopping = true;
  return study;
}

TEST(EarlyStopping, MedianRuleStopsAClearlyWorseTrialOnly) {
  TuningRecord record;
  record.metrics = medianStudy().metrics;
  record.trials = {finished("1", {0.5, 0.7, 0.8}), finished("2", {0.6, 0.75, 0.85})};
  Trial bad;
  bad.id = "4";
  bad.measurements = {report(0, 0.1), report(1, 0.12)};
  std::string why;
  // Two completed trials are too few to judge by.
  EXPECT_FALSE(shouldStopEarly(bad, record, medianStudy(), &why));
  record.trials.push_back(finished("3", {0.55, 0.72, 0.9}));
  EXPECT_TRUE(shouldStopEarly(bad, record, medianStudy(), &why));
  EXPECT_NE(why.find("worse than the median 0.72 of 3 completed trials at the same step (1)"),
            std::string::npos)
      << why;
  Trial good = bad;
  good.measurements = {report(0, 0.7), report(1, 0.8)};
  EXPECT_FALSE(shouldStopEarly(good, record, medianStudy(), &why));
  // Minimizing a loss: low is good.
  StudySpec loss = medianStudy();
  loss.metrics[0].goal = Goal::kMinimize;
  EXPECT_FALSE(shouldStopEarly(bad, record, loss, &why));
  EXPECT_TRUE(shouldStopEarly(good, record, loss, &why));
}

TEST(EarlyStopping, StudyStopsOnItsRules) {
  TuningRecord record;
  record.metrics = medianStudy().metrics;
  record.trials = {finished("1", {0.5}), finished("2", {0.93})};
  StudySpec study = medianStudy();
  EXPECT_EQ(studyStopReason(record, study, 10, 5, 1), "");
  study.has_max_objective = true;
  study.max_objective = 0.92;
  EXPECT_NE(studyStopReason(record, study, 10, 5, 1).find("trial 2 reached maximumObjective"),
            std::string::npos);
  study = medianStudy();
  study.max_trials_no_progress = 3;
  EXPECT_EQ(studyStopReason(record, study, 10, 5, 2), "");
  EXPECT_NE(studyStopReason(record, study, 10, 5, 3).find("maxNumTrialsNoProgress"),
            std::string::npos);
  study.max_duration_no_progress_s = 60;
  EXPECT_NE(studyStopReason(record, study, 100, 61, 0).find("maxDurationNoProgress"),
            std::string::npos);
  study = medianStudy();
  study.max_duration_s = 50;
  EXPECT_NE(studyStopReason(record, study, 51, 0, 0).find("maximumRuntimeConstraint"),
            std::string::npos);
}

TEST(Trials, MeasurementSelectionAndBestTrial) {
  std::vector<MetricSpec> metrics = {{"accuracy", Goal::kMaximize}};
  std::vector<Measurement> ms = {report(0, 0.4), report(1, 0.9), report(2, 0.7)};
  EXPECT_EQ(selectMeasurement(ms, metrics, false)->step, 2);
  EXPECT_EQ(selectMeasurement(ms, metrics, true)->step, 1);
  // One metric: a report under the default tag counts as it.
  Measurement untagged;
  untagged.metrics[kDefaultMetricTag] = 0.3;
  EXPECT_EQ(objectiveOf(untagged, metrics).value_or(-1), 0.3);
  EXPECT_FALSE(selectMeasurement({}, metrics, false).has_value());
}

TEST(Trials, RecordReadsBackAsWritten) {
  TuningRecord record;
  record.tuning_job_id = "tune-1";
  record.display_name = "tune";
  record.state = "RUNNING";
  record.metrics = {{"accuracy", Goal::kMaximize}};
  Trial a = finished("1", {0.25, 0.5});
  a.parameters = {{"lr", false, 0.001, ""}, {"optimizer", true, 0, "adam \"x\""}};
  a.job_dir = "/tmp/t/1";
  Trial b;
  b.id = "2";
  b.state = TrialState::kActive;  // reducectl was killed while it ran
  record.trials = {a, b};
  std::string json = tuningRecordJson(record);
  TuningRecord back;
  std::string error;
  ASSERT_TRUE(parseTuningRecord(json, &back, &error)) << error << "\n" << json;
  EXPECT_EQ(back.tuning_job_id, "tune-1");
  ASSERT_EQ(back.trials.size(), 2u);
  EXPECT_EQ(back.trials[0].state, TrialState::kSucceeded);
  EXPECT_EQ(back.trials[0].parameters[1].text, "adam \"x\"");
  EXPECT_EQ(back.trials[0].parameters[0].text, "0.001");
  EXPECT_EQ(back.trials[0].measurements.size(), 2u);
  EXPECT_EQ(back.trials[0].final_measurement->metrics.at("accuracy"), 0.5);
  EXPECT_EQ(back.trials[1].state, TrialState::kStopped);
  EXPECT_FALSE(parseTuningRecord("[1, 2", &back, &error));
  std::string table = trialsTable(record);
  EXPECT_NE(table.find("best: trial 1"), std::string::npos) << table;
}

}  // namespace
}  // namespace rd::orch::tune
