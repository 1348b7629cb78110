// SPDX-License-Identifier: BSD-3-Clause
// The metrics file a tuning trial reports through, in the format of Google's cloudml-hypertune
// package, which training code for Vertex AI hyperparameter tuning calls. What that writer does,
// as read in its source (GoogleCloudPlatform/cloudml-hypertune, hypertune/hypertune.py, the same
// since release 0.1.0.dev6):
//   - path: $CLOUD_ML_HP_METRIC_FILE, else /tmp/hypertune/output.metrics; the directory is
//     created when the HyperTune object is.
//   - each report appends to an in-memory queue of at most 100 entries (the oldest fall out) and
//     then rewrites the whole file in place (open for writing, truncate, write): not atomically,
//     so a reader can find it empty or cut inside a line.
//   - one JSON object per line (json.dumps with sort_keys=True, default separators, ASCII with
//     \u escapes), keys: the metric tag ("training/hptuning/metric" when the tag is empty),
//     "global_step", "checkpoint_path", "timestamp", "trial".
//   - the metric value is float()-converted then stored as a string ("0.987", "nan", "1e-05");
//     "global_step" is a string of an integer ("0" when no step or step 0 was given);
//     "trial" is $CLOUD_ML_TRIAL_ID as a string ("0" by default); "checkpoint_path" a string
//     ("" by default; 0.1.0.dev5 and earlier omit the key); "timestamp" is time.time(), a JSON
//     number.
// libreduce.hypertune (python/libreduce/hypertune.py) writes the same, but atomically. This reader
// also accepts values and steps written as JSON numbers, as other writers may.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rd::orch::tune {

/** The tag cloudml-hypertune reports under when it is given an empty one. */
inline constexpr const char* kDefaultMetricTag = "training/hptuning/metric";

/** One line of the metrics file: one report. */
struct Measurement {
  // "global_step" when present and an integer (string or number); otherwise the line's 0-based
  // index in the file. cloudml-hypertune writes 0 when no step was given, so order of the
  // measurements, not the step, tells which report was the last.
  int64_t step = 0;
  double timestamp = 0;  // seconds since the epoch; 0 when absent or not a number
  // Every other key whose value is a finite number or a string holding one: the reported
  // metrics by tag. "trial", "checkpoint_path", "global_step" and "timestamp" are never metrics.
  // A value that is not a finite number ("nan", "inf", text) is left out, so a trial that only
  // reported NaN looks as if it reported nothing for that tag.
  std::map<std::string, double> metrics;
};

/**
 * Parses the text of a metrics file, in file order (the last element is the latest report).
 *
 * Tolerant: the writer rewrites the file non-atomically, so an empty file, a partial last line,
 * or a line that is not a complete JSON object is skipped (counted in @p skipped when it is not
 * null; blank lines are not counted), never an error. Each line must be one strict JSON object
 * (RFC 8259; string keys; nested values are skipped; duplicate keys: the last wins). Values may
 * be JSON strings holding numbers ("0.75") or numbers; non-numeric values are skipped. Safe on
 * any input: bounded nesting, no recursion beyond it, linear time.
 *
 * Example: the line
 *   {"accuracy": "0.91", "checkpoint_path": "", "global_step": "3", "timestamp": 17.5, "trial":
 * "2"} gives Measurement{step 3, timestamp 17.5, metrics {"accuracy": 0.91}}.
 */
std::vector<Measurement> parseHypertuneMetrics(const std::string& text, size_t* skipped = nullptr);

/** Files larger than this are read from their last this-many bytes (the cut line is skipped). */
inline constexpr size_t kMaxMetricsFileBytes = size_t{16} << 20;

/**
 * Reads and parses the metrics file at @p path (see parseHypertuneMetrics). A missing file is an
 * empty result: the trial has not reported yet. A file that cannot be read (no permission, a
 * directory) is empty too, so a polling caller keeps waiting rather than failing the trial.
 */
std::vector<Measurement> readHypertuneMetrics(const std::string& path, size_t* skipped = nullptr);

}  // namespace rd::orch::tune
