// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/tuning/tuning_spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include <yaml-cpp/yaml.h>

#include "orchestrator/job_spec_reader.h"
#include "orchestrator/spec_fields.h"

namespace rd::orch::tune {
namespace {

using spec::Field;
using spec::FieldMap;

constexpr int kMaxTrials = 100000;
constexpr int kMaxParallel = 256;
constexpr size_t kMaxValues = 10000;  // categories or discrete values of one parameter

// Vertex fields that mean something reducectl does not do: say so instead of "unknown".
constexpr std::pair<const char*, const char*> kStudyHints[] = {
    {"decayCurveStoppingSpec",
     "not supported; use medianAutomatedStoppingSpec (a trial worse than the median of the "
     "others at the same step is stopped)"},
    {"convexAutomatedStoppingSpec", "not supported; use medianAutomatedStoppingSpec"},
    {"convexStopConfig", "not supported; use medianAutomatedStoppingSpec"},
};
constexpr std::pair<const char*, const char*> kStoppingHints[] = {
    {"shouldStopAsap", "not supported: stop a tuning job with Ctrl-C or SIGTERM"},
    {"minimumRuntimeConstraint", "not supported; minNumTrials keeps a study running"},
};

std::string readEnum(const Field& field, const std::vector<std::string>& allowed) {
  std::string text = spec::readNonEmptyText(field, "one of the names below");
  if (std::find(allowed.begin(), allowed.end(), text) != allowed.end()) return text;
  std::string list;
  for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
  std::string close = spec::closestName(text, allowed);
  field.fail("'" + text + "' is not allowed" +
             (close.empty() ? "." : "; did you mean '" + close + "'?") + " Allowed: " + list);
}

int64_t readDurationField(const Field& field) {
  std::string text = spec::readNonEmptyText(field, "a duration");
  int64_t seconds = 0;
  if (!parseDuration(text, &seconds) || seconds <= 0) {
    field.fail("'" + text + "' is not a duration above 0 (e.g. \"3600s\", \"90m\", \"2h\")");
  }
  return seconds;
}

bool isParameterId(const std::string& id) {
  if (id.empty() || id.size() > 128 || std::isalpha(static_cast<unsigned char>(id[0])) == 0) {
    return false;
  }
  return std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '_' || c == '-' || c == '.';
  });
}

// ---- parameters -----------------------------------------------------------------------------

struct ParameterReader {
  std::set<std::string> ids;  // every id in the tree: each names one flag

  ParameterSpec read(const Field& field, int depth);
  void readRange(const FieldMap& map, const std::string& name, ParameterSpec* p);
  void readCategorical(const Field& field, ParameterSpec* p);
  void readDiscrete(const Field& field, ParameterSpec* p);
  void readConditional(const Field& field, const ParameterSpec& parent, int depth,
                       ConditionalParameter* out);
};

void ParameterReader::readRange(const FieldMap& map, const std::string& name, ParameterSpec* p) {
  Field f = map.require(name, "give the range");
  FieldMap range(f, {"minValue", "maxValue", "defaultValue"}, "a map with minValue and maxValue");
  Field lo = range.require("minValue", "the range's low end");
  Field hi = range.require("maxValue", "the range's high end");
  if (p->kind == ParameterKind::kInteger) {
    p->min = static_cast<double>(spec::readInt(lo, -(int64_t{1} << 52), int64_t{1} << 52));
    p->max = static_cast<double>(spec::readInt(hi, -(int64_t{1} << 52), int64_t{1} << 52));
  } else {
    p->min = spec::readDouble(lo);
    p->max = spec::readDouble(hi);
  }
  if (!(p->min < p->max) && !(p->kind == ParameterKind::kInteger && p->min == p->max)) {
    hi.fail("maxValue must be above minValue");
  }
}

void ParameterReader::readCategorical(const Field& field, ParameterSpec* p) {
  FieldMap map(field, {"values", "defaultValue"}, "a map with values");
  Field values = map.require("values", "list the categories");
  p->categories = spec::readTextList(values);
  if (p->categories.empty() || p->categories.size() > kMaxValues) {
    values.fail("give 1 to " + std::to_string(kMaxValues) + " categories");
  }
  std::set<std::string> seen;
  for (const std::string& c : p->categories) {
    if (c.empty()) values.fail("a category is empty");
    if (!seen.insert(c).second) values.fail("'" + c + "' is listed twice");
  }
}

void ParameterReader::readDiscrete(const Field& field, ParameterSpec* p) {
  FieldMap map(field, {"values", "defaultValue"}, "a map with values");
  Field values = map.require("values", "list the values");
  std::vector<Field> items = spec::readList(values, "a list of numbers");
  if (items.empty() || items.size() > kMaxValues) {
    values.fail("give 1 to " + std::to_string(kMaxValues) + " values");
  }
  for (const Field& item : items) {
    double v = spec::readDouble(item);
    if (!p->values.empty() && !(v > p->values.back())) {
      item.fail("discrete values must be listed in increasing order, each once");
    }
    p->values.push_back(v);
  }
}

ParameterSpec ParameterReader::read(const Field& field, int depth) {
  static const std::vector<std::string> kKinds = {"doubleValueSpec", "integerValueSpec",
                                                  "categoricalValueSpec", "discreteValueSpec"};
  FieldMap map(field,
               {"parameterId", "doubleValueSpec", "integerValueSpec", "categoricalValueSpec",
                "discreteValueSpec", "scaleType", "conditionalParameterSpecs"},
               "a parameter");
  ParameterSpec p;
  Field id = map.require("parameterId", "name the parameter (the program gets --ID=VALUE)");
  p.id = spec::readNonEmptyText(id, "a name");
  if (!isParameterId(p.id)) {
    id.fail("'" + p.id + "' is not a parameter id: a letter, then letters, digits, _ . or -");
  }
  if (!ids.insert(p.id).second) id.fail("the parameter '" + p.id + "' is defined twice");
  int kinds = 0;
  for (size_t k = 0; k < kKinds.size(); ++k) {
    if (!map.get(kKinds[k])) continue;
    ++kinds;
    p.kind = static_cast<ParameterKind>(k);
  }
  if (kinds != 1) {
    field.fail(
        "give exactly one of doubleValueSpec, integerValueSpec, categoricalValueSpec, "
        "discreteValueSpec");
  }
  if (p.kind == ParameterKind::kDouble || p.kind == ParameterKind::kInteger) {
    readRange(map, kKinds[static_cast<size_t>(p.kind)], &p);
  } else if (p.kind == ParameterKind::kCategorical) {
    readCategorical(*map.get("categoricalValueSpec"), &p);
  } else {
    readDiscrete(*map.get("discreteValueSpec"), &p);
  }
  if (auto f = map.get("scaleType")) {
    std::string scale = readEnum(*f, {"SCALE_TYPE_UNSPECIFIED", "UNIT_LINEAR_SCALE",
                                      "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"});
    if (p.kind == ParameterKind::kCategorical && scale != "SCALE_TYPE_UNSPECIFIED") {
      f->fail("a categorical parameter has no scale");
    }
    if (scale == "UNIT_LOG_SCALE") p.scale = ScaleType::kLog;
    if (scale == "UNIT_REVERSE_LOG_SCALE") p.scale = ScaleType::kReverseLog;
    double low = p.kind == ParameterKind::kDiscrete ? p.values.front() : p.min;
    if (p.scale != ScaleType::kLinear && !(low > 0)) {
      f->fail("a log scale needs values above 0; the lowest here is " + std::to_string(low));
    }
  }
  if (auto f = map.get("conditionalParameterSpecs")) {
    for (const Field& item : spec::readList(*f, "a list of conditional parameters")) {
      ConditionalParameter c;
      readConditional(item, p, depth, &c);
      p.conditionals.push_back(std::move(c));
    }
  }
  return p;
}

void ParameterReader::readConditional(const Field& field, const ParameterSpec& parent, int depth,
                                      ConditionalParameter* out) {
  if (depth >= 4) field.fail("conditions nest at most 4 deep");
  FieldMap map(
      field,
      {"parentCategoricalValues", "parentDiscreteValues", "parentIntValues", "parameterSpec"},
      "a conditional parameter");
  const char* want = parent.kind == ParameterKind::kCategorical ? "parentCategoricalValues"
                     : parent.kind == ParameterKind::kDiscrete  ? "parentDiscreteValues"
                     : parent.kind == ParameterKind::kInteger   ? "parentIntValues"
                                                                : nullptr;
  if (want == nullptr) {
    field.fail("the parent '" + parent.id +
               "' is a double: only categorical, discrete and integer parameters have children");
  }
  for (const char* name : {"parentCategoricalValues", "parentDiscreteValues", "parentIntValues"}) {
    if (map.get(name) && std::string(name) != want) {
      map.get(name)->fail(std::string("the parent '") + parent.id + "' takes " + want + " here");
    }
  }
  Field values = map.require(want, "the parent's values that make this parameter active");
  FieldMap vmap(values, {"values"}, "a map with values");
  Field list = vmap.require("values", "the parent's values");
  if (parent.kind == ParameterKind::kCategorical) {
    out->parent_categories = spec::readTextList(list);
    for (const std::string& c : out->parent_categories) {
      if (std::find(parent.categories.begin(), parent.categories.end(), c) ==
          parent.categories.end()) {
        list.fail("'" + c + "' is not a category of '" + parent.id + "'");
      }
    }
  } else {
    for (const Field& item : spec::readList(list, "a list of numbers")) {
      double v =
          parent.kind == ParameterKind::kInteger
              ? static_cast<double>(spec::readInt(item, -(int64_t{1} << 52), int64_t{1} << 52))
              : spec::readDouble(item);
      bool ok =
          parent.kind == ParameterKind::kInteger
              ? v >= parent.min && v <= parent.max
              : std::find(parent.values.begin(), parent.values.end(), v) != parent.values.end();
      if (!ok) item.fail("not a value '" + parent.id + "' can take");
      out->parent_values.push_back(v);
    }
  }
  if (out->parent_categories.empty() && out->parent_values.empty()) {
    list.fail("give at least one of the parent's values");
  }
  out->children.push_back(read(map.require("parameterSpec", "the child parameter"), depth + 1));
}

// ---- studySpec --------------------------------------------------------------------------------

std::vector<MetricSpec> readMetrics(const Field& field) {
  std::vector<MetricSpec> metrics;
  for (const Field& item : spec::readList(field, "a list of metrics")) {
    FieldMap map(item, {"metricId", "goal", "safetyConfig"}, "a metric");
    if (auto s = map.get("safetyConfig")) s->fail("safety metrics are not supported");
    MetricSpec m;
    Field id = map.require("metricId", "the tag the training code reports it under");
    m.id = spec::readNonEmptyText(id, "a metric id");
    for (const MetricSpec& other : metrics) {
      if (other.id == m.id) id.fail("the metric '" + m.id + "' is listed twice");
    }
    Field goal = map.require("goal", "MAXIMIZE or MINIMIZE");
    m.goal =
        readEnum(goal, {"MAXIMIZE", "MINIMIZE"}) == "MAXIMIZE" ? Goal::kMaximize : Goal::kMinimize;
    metrics.push_back(m);
  }
  if (metrics.empty()) field.fail("give at least one metric (the first one drives the search)");
  return metrics;
}

void readStopping(const Field& field, StudySpec* study) {
  FieldMap map(field,
               {"minimumObjectiveValue", "maximumObjectiveValue", "minNumTrials", "maxNumTrials",
                "maxNumTrialsNoProgress", "maxDurationNoProgress", "maximumRuntimeConstraint",
                "shouldStopAsap", "minimumRuntimeConstraint"},
               "a map of stopping rules", kStoppingHints);
  for (const auto& [name, hint] : kStoppingHints) {
    if (auto f = map.get(name)) f->fail(hint);
  }
  if (auto f = map.get("minimumObjectiveValue")) {
    study->has_min_objective = true;
    study->min_objective = spec::readDouble(*f);
  }
  if (auto f = map.get("maximumObjectiveValue")) {
    study->has_max_objective = true;
    study->max_objective = spec::readDouble(*f);
  }
  if (auto f = map.get("minNumTrials")) {
    study->min_num_trials = static_cast<int>(spec::readInt(*f, 1, kMaxTrials));
  }
  if (auto f = map.get("maxNumTrials")) {
    study->max_num_trials = static_cast<int>(spec::readInt(*f, 1, kMaxTrials));
  }
  if (auto f = map.get("maxNumTrialsNoProgress")) {
    study->max_trials_no_progress = static_cast<int>(spec::readInt(*f, 1, kMaxTrials));
  }
  if (auto f = map.get("maxDurationNoProgress")) {
    study->max_duration_no_progress_s = readDurationField(*f);
  }
  if (auto f = map.get("maximumRuntimeConstraint")) {
    FieldMap limit(*f, {"maxDuration", "endTime"}, "a map with maxDuration");
    if (auto e = limit.get("endTime")) e->fail("not supported; give maxDuration");
    study->max_duration_s = readDurationField(limit.require("maxDuration", "the study's limit"));
  }
}

// Grid search enumerates values: a double has none to enumerate (Vertex refuses it too).
void checkGrid(const std::vector<ParameterSpec>& params, const Field& at) {
  for (const ParameterSpec& p : params) {
    if (p.kind == ParameterKind::kDouble) {
      at.fail("GRID_SEARCH takes integer, categorical and discrete parameters only; '" + p.id +
              "' is a double (give it a discreteValueSpec, or use RANDOM_SEARCH or the default)");
    }
    for (const ConditionalParameter& c : p.conditionals) checkGrid(c.children, at);
  }
}

StudySpec readStudy(const Field& field) {
  FieldMap map(field,
               {"metrics", "parameters", "algorithm", "measurementSelectionType",
                "observationNoise", "medianAutomatedStoppingSpec", "studyStoppingConfig",
                "decayCurveStoppingSpec", "convexAutomatedStoppingSpec", "convexStopConfig"},
               "the study spec to be a map", kStudyHints);
  for (const auto& [name, hint] : kStudyHints) {
    if (auto f = map.get(name)) f->fail(hint);
  }
  StudySpec study;
  study.metrics = readMetrics(map.require("metrics", "the metric to optimize"));
  Field params = map.require("parameters", "the parameters to search");
  ParameterReader reader;
  for (const Field& item : spec::readList(params, "a list of parameters")) {
    study.parameters.push_back(reader.read(item, 0));
  }
  if (study.parameters.empty()) params.fail("give at least one parameter");
  if (auto f = map.get("algorithm")) {
    std::string a = readEnum(*f, {"ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH"});
    study.algorithm = a == "GRID_SEARCH"     ? Algorithm::kGrid
                      : a == "RANDOM_SEARCH" ? Algorithm::kRandom
                                             : Algorithm::kBayesian;
    if (study.algorithm == Algorithm::kGrid) checkGrid(study.parameters, *f);
  }
  if (auto f = map.get("measurementSelectionType")) {
    study.best_measurement =
        readEnum(*f, {"MEASUREMENT_SELECTION_TYPE_UNSPECIFIED", "LAST_MEASUREMENT",
                      "BEST_MEASUREMENT"}) == "BEST_MEASUREMENT";
  }
  if (auto f = map.get("observationNoise")) {
    readEnum(*f, {"OBSERVATION_NOISE_UNSPECIFIED", "LOW", "HIGH"});  // the GP fits its noise
  }
  if (auto f = map.get("medianAutomatedStoppingSpec")) {
    FieldMap median(*f, {"useElapsedDuration"}, "a map (it may be empty)");
    study.median_stopping = true;
    if (auto e = median.get("useElapsedDuration")) study.median_use_elapsed = spec::readBool(*e);
  }
  if (auto f = map.get("studyStoppingConfig")) readStopping(*f, &study);
  return study;
}

// ---- the document -----------------------------------------------------------------------------

void readTuningSpec(const Field& top, TuningSpec* spec) {
  FieldMap map(top,
               {"displayName", "baseOutputDirectory", "maxTrialCount", "parallelTrialCount",
                "maxFailedTrialCount", "studySpec", "trialJobSpec", "seed"},
               "the tuning spec to be a map");
  Field name = map.require("displayName", "name the tuning job ([A-Za-z0-9_.-])");
  spec->name = spec::readNonEmptyText(name, "a name");
  if (!isJobName(spec->name)) {
    name.fail("'" + spec->name + "' is not a job name: 1 to 128 of A-Z a-z 0-9 _ . -");
  }
  spec->max_trials = static_cast<int>(
      spec::readInt(map.require("maxTrialCount", "how many trials to run"), 1, kMaxTrials));
  if (auto f = map.get("parallelTrialCount")) {
    spec->parallel_trials = static_cast<int>(spec::readInt(*f, 1, kMaxParallel));
  }
  if (auto f = map.get("maxFailedTrialCount")) {
    spec->max_failed_trials = static_cast<int>(spec::readInt(*f, 0, kMaxTrials));
  }
  Field study = map.require("studySpec", "the metrics and the parameters to search");
  spec->study = readStudy(study);
  if (auto f = map.get("seed"))
    spec->study.seed = static_cast<uint64_t>(spec::readInt(*f, 1, INT64_MAX));
  Field trial = map.require("trialJobSpec", "the job each trial runs (workerPoolSpecs, ...)");
  readJobSpecField(trial, &spec->trial, false);
  if (spec->trial.name.empty()) spec->trial.name = spec->name;
  if (auto f = map.get("baseOutputDirectory")) {
    if (!spec->trial.base_output_dir.empty()) {
      f->fail("give baseOutputDirectory once: here or in trialJobSpec");
    }
    spec->base_output_dir = spec::readNonEmptyText(*f, "a directory");
  } else {
    spec->base_output_dir = spec->trial.base_output_dir;
  }
}

}  // namespace

bool parseTuningSpec(const std::string& text, const std::string& source, TuningSpec* spec,
                     std::string* error) {
  TuningSpec parsed;
  auto read = [&](const Field& top) { readTuningSpec(top, &parsed); };
  if (!parseSpecText(text, source,
                     "a map with displayName, maxTrialCount, studySpec and "
                     "trialJobSpec",
                     read, error)) {
    return false;
  }
  // Relative paths are the spec file's, as in a job spec (@p source is the file's path).
  resolveSpecPaths(source, &parsed.trial);
  parsed.base_output_dir = pathFromSpec(source, parsed.base_output_dir);
  *spec = std::move(parsed);
  return true;
}

bool loadTuningSpec(const std::string& path, TuningSpec* spec, std::string* error) {
  std::string text;
  return readSpecFile(path, "tuning spec", &text, error) &&
         parseTuningSpec(text, path, spec, error);
}

bool looksLikeTuningSpec(const std::string& text) {
  try {
    const YAML::Node root = YAML::Load(text);
    return root.IsMap() && (root["studySpec"] || root["trialJobSpec"]);
  } catch (const YAML::Exception&) {
    return false;
  }
}

}  // namespace rd::orch::tune
