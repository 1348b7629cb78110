// SPDX-License-Identifier: BSD-3-Clause
// The Prometheus text exposition format (version 0.0.4), written: metric families with their HELP
// and TYPE lines, samples with escaped label values, histograms with cumulative buckets. One
// writer for every process that exports metrics (the reducer's /metrics, a worker's textfile).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rd::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

/** A communicator id as every export names it (labels, timelines): 16 hex digits. */
std::string commIdText(uint64_t id);

/** This host's name as the exports give it ("unknown" when it cannot be read). */
std::string hostName();

/** The HTTP Content-Type of the text this writes. */
inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

class TextWriter {
 public:
  /**
   * Starts a family: `# HELP name help` and `# TYPE name type` (counter, gauge, histogram).
   * Each family is started once, and its samples follow it.
   */
  void family(const std::string& name, const std::string& type, const std::string& help);
  /** One sample of the current family (a counter's name ends in _total). */
  void sample(const std::string& name, const Labels& labels, double value);
  /**
   * A histogram's samples: one cumulative _bucket per upper bound in @p bounds (ascending) and
   * +Inf, then _sum and _count. @p counts holds the observations per bucket (not cumulative),
   * one more than @p bounds (the last: above every bound).
   */
  void histogram(const std::string& name, const Labels& labels, const std::vector<double>& bounds,
                 const std::vector<uint64_t>& counts, double sum);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

/** A label value with backslash, double quote and newline escaped as the format wants. */
std::string escapeLabelValue(const std::string& value);

}  // namespace rd::metrics
