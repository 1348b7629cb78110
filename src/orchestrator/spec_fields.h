// SPDX-License-Identifier: BSD-3-Clause
// Typed, strict reading of YAML nodes for the job spec: every value is checked for its type and
// range, every map for unknown and repeated keys, and a failure names the field path and the
// node's position. The schema itself lives in job_spec.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace rd::orch::spec {

/** The first thing wrong with a spec. Thrown by the readers, caught once by parseJobSpec. */
struct SpecError {
  YAML::Mark mark;   // 0-based, as yaml-cpp gives it
  std::string path;  // "workerPoolSpecs[1].replicaCount"; empty for the document as a whole
  std::string message;
};

/** A value in the spec with its field path and the position to point at. */
struct Field {
  YAML::Node node;
  std::string path;
  // The value's position; the key's when the value is empty (yaml-cpp marks an empty value at
  // whatever token follows it, often on the next line).
  YAML::Mark mark;

  /** True for an absent-in-effect value: `key:` with nothing after it. */
  bool empty() const { return !node.IsDefined() || node.IsNull(); }
  [[noreturn]] void fail(const std::string& message) const;
  /** A field of this one: "scheduling" + "timeout" = "scheduling.timeout". */
  std::string child(const std::string& name) const;
};

/** "a list", "a map", "the text 'three'", "no value": what a node is, for type errors. */
std::string describe(const YAML::Node& node);

/** A map key and its value, in spec order. */
struct Entry {
  std::string name;
  YAML::Mark key_mark;
  Field value;
};

/**
 * The entries of a map field, checked for keys that are not names and for repeated keys (which
 * yaml-cpp would keep without a word). An empty value is an empty map; anything else is an error
 * that names @p expected ("a map of libreduce settings").
 */
std::vector<Entry> mapEntries(const Field& field, const std::string& expected);

/** The closest of @p candidates to @p name (case-insensitive match or a few edits), or "". */
std::string closestName(const std::string& name, std::span<const std::string> candidates);

/** Fails for an unknown key: did-you-mean when one is close, then the allowed names. */
[[noreturn]] void failUnknown(const Entry& entry, const std::string& what,
                              std::span<const std::string> allowed, const std::string& hint = "");

/** A map with a fixed set of fields: unknown or repeated keys fail on construction. */
class FieldMap {
 public:
  /**
   * @p what: the map's kind for a type error ("a map", "a worker pool"); the allowed fields are
   * listed after it. @p hints: advice for names known not to belong here ({name, advice}).
   */
  FieldMap(const Field& field, std::vector<std::string> allowed, const std::string& what,
           std::span<const std::pair<const char*, const char*>> hints = {});

  /** The field, if present. An empty value (`key:`) is returned as such: readers reject it. */
  std::optional<Field> get(const std::string& name) const;
  /** The field; fails at the map's position, naming the field, when it is absent. */
  Field require(const std::string& name, const std::string& why) const;
  /** Fails at the map's position, naming the absent field @p name and @p why it is needed. */
  [[noreturn]] void failMissing(const std::string& name, const std::string& why) const;
  bool emptyMap() const { return entries_.empty(); }
  const Field& self() const { return self_; }

 private:
  Field self_;
  std::vector<Entry> entries_;
};

/** A scalar as text (numbers and bools keep their spelling). */
std::string readText(const Field& field, const std::string& expected = "a string");
/** A non-empty scalar. */
std::string readNonEmptyText(const Field& field, const std::string& expected);
/** A whole number in [lo, hi]; quoted numbers are accepted (Vertex's JSON writes int64 so). */
int64_t readInt(const Field& field, int64_t lo, int64_t hi);
bool readBool(const Field& field);
double readDouble(const Field& field);
/** The items of a list, with paths "field[i]"; an empty value is an empty list. */
std::vector<Field> readList(const Field& field, const std::string& expected);
/** A list of scalars kept as text; a plain string fails with a hint to write a list. */
std::vector<std::string> readTextList(const Field& field);

}  // namespace rd::orch::spec
