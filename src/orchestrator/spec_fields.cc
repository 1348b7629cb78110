// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/spec_fields.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "common/json_text.h"

namespace rd::orch::spec {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string join(std::span<const std::string> items, const char* sep) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

// Edit distance counting a swap of neighbours as one edit ("replicaCuont" is one typo).
size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// yaml-cpp marks nodes it made up (and some empty ones) with line -1.
YAML::Mark markOr(const YAML::Node& node, const YAML::Mark& fallback) {
  YAML::Mark mark = node.Mark();
  return mark.is_null() ? fallback : mark;
}

bool safeWord(const std::string& word) {
  return !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 ||
           std::string("_./=:+-").find(static_cast<char>(c)) != std::string::npos;
  });
}

// "python3 train.py --epochs 3" as the list it should have been: [python3, train.py, ...].
std::string asFlowList(const std::string& text) {
  std::vector<std::string> words;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = text.find_first_not_of(" \t", pos);
    if (start == std::string::npos) break;
    size_t end = text.find_first_of(" \t", start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    words.push_back(safeWord(word) ? word : jsonString(word));
    pos = end;
  }
  return "[" + join(words, ", ") + "]";
}

}  // namespace

void Field::fail(const std::string& message) const {
  throw SpecError{mark, path, message};
}

std::string Field::child(const std::string& name) const {
  return path.empty() ? name : path + "." + name;
}

std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "no value";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  std::string text = node.Scalar();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return "'" + text + "'";
}

std::vector<Entry> mapEntries(const Field& field, const std::string& expected) {
  std::vector<Entry> entries;
  if (field.empty()) return entries;
  if (!field.node.IsMap()) field.fail("expected " + expected + ", got " + describe(field.node));
  // Copies of the key and value: yaml-cpp's iterator hands out a proxy that GCC 12 reports as
  // dangling when its members are used in place.
  for (const auto& pair : field.node) {
    YAML::Node key = pair.first;
    YAML::Node value = pair.second;
    YAML::Mark key_mark = markOr(key, field.mark);
    if (!key.IsScalar()) {
      throw SpecError{key_mark, field.path, "keys must be names, got " + describe(key)};
    }
    const std::string& name = key.Scalar();
    for (const Entry& seen : entries) {
      if (seen.name == name) {
        throw SpecError{key_mark, field.child(name),
                        "repeated key (first given at line " +
                            std::to_string(seen.key_mark.line + 1) + "); give each key once"};
      }
    }
    bool blank = !value.IsDefined() || value.IsNull();
    entries.push_back(
        {name, key_mark,
         Field{value, field.child(name), blank ? key_mark : markOr(value, key_mark)}});
  }
  return entries;
}

std::string closestName(const std::string& name, std::span<const std::string> candidates) {
  std::string key = lower(name);
  std::string best;
  size_t best_distance = 3;  // more than two edits away is not a typo
  for (const std::string& candidate : candidates) {
    std::string other = lower(candidate);
    if (other == key) return candidate;
    size_t distance = editDistance(key, other);
    // Short names are a couple of edits from anything: require most of the name to survive.
    if (distance < best_distance && distance * 2 < key.size()) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

void failUnknown(const Entry& entry, const std::string& what, std::span<const std::string> allowed,
                 const std::string& hint) {
  std::string message = "unknown " + what;
  std::string close = closestName(entry.name, allowed);
  if (!hint.empty()) {
    message += ": " + hint + ".";
  } else if (!close.empty()) {
    message += "; did you mean '" + close + "'?";
  } else {
    message += ".";
  }
  message += " Allowed: " + join(allowed, ", ");
  throw SpecError{entry.key_mark, entry.value.path, message};
}

FieldMap::FieldMap(const Field& field, std::vector<std::string> allowed, const std::string& what,
                   std::span<const std::pair<const char*, const char*>> hints)
    : self_(field) {
  entries_ = mapEntries(field, what + " (fields: " + join(allowed, ", ") + ")");
  for (const Entry& entry : entries_) {
    if (std::find(allowed.begin(), allowed.end(), entry.name) != allowed.end()) continue;
    std::string hint;
    for (const auto& [name, advice] : hints) {
      if (entry.name == name) hint = advice;
    }
    failUnknown(entry, "field", allowed, hint);
  }
}

std::optional<Field> FieldMap::get(const std::string& name) const {
  for (const Entry& entry : entries_) {
    if (entry.name == name) return entry.value;
  }
  return std::nullopt;
}

Field FieldMap::require(const std::string& name, const std::string& why) const {
  std::optional<Field> field = get(name);
  if (!field) failMissing(name, why);
  return *field;
}

void FieldMap::failMissing(const std::string& name, const std::string& why) const {
  throw SpecError{self_.mark, self_.child(name), "required field missing; " + why};
}

std::string readText(const Field& field, const std::string& expected) {
  if (!field.node.IsScalar()) field.fail("expected " + expected + ", got " + describe(field.node));
  return field.node.Scalar();
}

std::string readNonEmptyText(const Field& field, const std::string& expected) {
  std::string text = readText(field, expected);
  if (text.empty()) field.fail("expected " + expected + ", got an empty string");
  return text;
}

int64_t readInt(const Field& field, int64_t lo, int64_t hi) {
  std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  std::string text = field.node.IsScalar() ? field.node.Scalar() : "";
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (!field.node.IsScalar() || text.empty() || end != text.data() + text.size() ||
      ec == std::errc::invalid_argument) {
    field.fail("expected a whole number in " + range + ", got " + describe(field.node));
  }
  if (ec == std::errc::result_out_of_range || value < lo || value > hi) {
    field.fail(text + " is out of range: allowed " + range);
  }
  return value;
}

bool readBool(const Field& field) {
  bool value = false;
  if (!field.node.IsScalar() || !YAML::convert<bool>::decode(field.node, value)) {
    field.fail("expected true or false, got " + describe(field.node));
  }
  return value;
}

double readDouble(const Field& field) {
  std::string text = field.node.IsScalar() ? field.node.Scalar() : "";
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value)) {
    field.fail("expected a number, got " + describe(field.node));
  }
  return value;
}

std::vector<Field> readList(const Field& field, const std::string& expected) {
  std::vector<Field> items;
  if (field.empty()) return items;
  if (!field.node.IsSequence()) {
    field.fail("expected " + expected + ", got " + describe(field.node));
  }
  for (size_t i = 0; i < field.node.size(); ++i) {
    YAML::Node item = field.node[i];
    items.push_back(
        Field{item, field.path + "[" + std::to_string(i) + "]", markOr(item, field.mark)});
  }
  return items;
}

std::vector<std::string> readTextList(const Field& field) {
  if (field.node.IsScalar()) {
    field.fail(
        "expected a list of strings, got a plain string (it is not split into words); write " +
        asFlowList(field.node.Scalar()));
  }
  std::vector<std::string> items;
  for (const Field& item : readList(field, "a list of strings")) {
    items.push_back(readText(item));
  }
  return items;
}

}  // namespace rd::orch::spec
