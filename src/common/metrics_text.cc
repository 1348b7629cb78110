// SPDX-License-Identifier: BSD-3-Clause
#include "common/metrics_text.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace rd::metrics {

std::string commIdText(uint64_t id) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(id));
  return text;
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

namespace {

std::string number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[64];
  // Whole numbers (every counter) exactly, the rest with every significant digit.
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else {
    std::snprintf(text, sizeof text, "%.17g", value);
  }
  return text;
}

std::string labelText(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    out += (i > 0 ? "," : "") + labels[i].first + "=\"" + escapeLabelValue(labels[i].second) + "\"";
  }
  return out + "}";
}

}  // namespace

std::string escapeLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void TextWriter::family(const std::string& name, const std::string& type, const std::string& help) {
  text_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void TextWriter::sample(const std::string& name, const Labels& labels, double value) {
  text_ += name + labelText(labels) + " " + number(value) + "\n";
}

void TextWriter::histogram(const std::string& name, const Labels& labels,
                           const std::vector<double>& bounds, const std::vector<uint64_t>& counts,
                           double sum) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += i < counts.size() ? counts[i] : 0;
    Labels with_le = labels;
    with_le.emplace_back("le", i < bounds.size() ? number(bounds[i]) : "+Inf");
    sample(name + "_bucket", with_le, static_cast<double>(cumulative));
  }
  sample(name + "_sum", labels, sum);
  sample(name + "_count", labels, static_cast<double>(cumulative));
}

}  // namespace rd::metrics
