// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/job_spec.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <optional>

#include <yaml-cpp/yaml.h>

#include "common/limits.h"
#include "common/settings.h"
#include "common/status.h"
#include "orchestrator/cluster_fields.h"
#include "orchestrator/job_files.h"
#include "orchestrator/job_spec_reader.h"
#include "orchestrator/managed_env.h"
#include "orchestrator/spec_fields.h"

namespace rd::orch {
namespace {

using spec::Entry;
using spec::Field;
using spec::FieldMap;
using spec::SpecError;

constexpr size_t kMaxNameLength = 128;
constexpr int64_t kMaxTimeoutS = int64_t{30} * 24 * 3600;
constexpr int kMaxRestarts = 100;
// Reducers: as many as one communicator spreads over.
constexpr int kMaxReplicas[kPoolCount] = {1, 4096, static_cast<int>(limits::kMaxReducers), 4096};

// Vertex names that do not fit: say what to write instead of just "unknown".
constexpr std::pair<const char*, const char*> kPoolHints[] = {
    {"pythonPackageSpec",
     "reducectl runs programs, not Python packages: give command (e.g. [python3, -m, "
     "trainer.task]), args and env in the pool itself"},
};

// A Vertex CustomJob as `gcloud ai custom-jobs describe` prints it: what Vertex reports about a
// job (name, state, times) is accepted and left unused.
const std::vector<std::string> kCustomJobFields = {
    "displayName", "jobSpec",    "name",   "state",          "createTime",    "startTime",
    "endTime",     "updateTime", "labels", "encryptionSpec", "webAccessUris", "error"};
// jobSpec's own fields; the Google Cloud ones (service account, VPC, TensorBoard, ...) are
// accepted and left unused.
const std::vector<std::string> kJobFields = {"baseOutputDirectory", "scheduling", "libreduce",
                                             "workerPoolSpecs",     "slurm",      "reducerPool"};
const std::vector<std::string> kCloudOnlyJobFields = {"serviceAccount",
                                                      "network",
                                                      "reservedIpRanges",
                                                      "enableWebAccess",
                                                      "enableDashboardAccess",
                                                      "tensorboard",
                                                      "experiment",
                                                      "experimentRun",
                                                      "models",
                                                      "persistentResourceId",
                                                      "protectedArtifactLocationId"};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

const settings::Setting* findSetting(const std::string& name) {
  for (const settings::Setting& s : settings::all()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

// ---- displayName, baseOutputDirectory -------------------------------------------------------

bool isNameCharacter(unsigned char c) {
  return std::isalnum(c) != 0 || c == '_' || c == '.' || c == '-';
}

std::string readDisplayName(const Field& field) {
  std::string name = spec::readNonEmptyText(field, "a name");
  if (name.size() > kMaxNameLength) {
    field.fail("the name is " + std::to_string(name.size()) + " characters long; at most " +
               std::to_string(kMaxNameLength) + " are allowed");
  }
  for (unsigned char c : name) {
    if (!isNameCharacter(c)) {
      field.fail("'" + name + "' has characters other than letters, digits, '_', '.' and '-' " +
                 "(the name becomes part of directory names)");
    }
  }
  return name;
}

// A directory path. A URI (gs://bucket/dir) is refused: the job's files are written where
// reducectl and the replicas read them, a filesystem path.
std::string readOutputPath(const Field& field) {
  std::string dir = spec::readNonEmptyText(field, "a directory path");
  if (size_t scheme = dir.find("://"); scheme != std::string::npos) {
    field.fail("'" + dir + "' is a " +
               (dir.rfind("gs://", 0) == 0 ? std::string("Cloud Storage") : dir.substr(0, scheme)) +
               " URI; reducectl writes the job's files to a filesystem path: give a local or "
               "shared directory (a bucket mounted with gcsfuse is one)");
  }
  return dir;
}

// A path, or Vertex's {outputUriPrefix: path}.
std::string readOutputDir(const Field& field) {
  if (field.node.IsMap()) {
    FieldMap map(field, {"outputUriPrefix"}, "a map");
    return readOutputPath(map.require("outputUriPrefix", "the directory"));
  }
  return readOutputPath(field);
}

// ---- scheduling -----------------------------------------------------------------------------

int64_t readTimeout(const Field& field) {
  std::string text = spec::readText(field, "a duration (600, \"90s\", \"10m\", \"1h30m\")");
  int64_t seconds = 0;
  if (!parseDuration(text, &seconds)) {
    field.fail("expected a duration such as 600, \"90s\", \"10m\" or \"1h30m\", got '" + text +
               "'");
  }
  if (seconds <= 0) field.fail("must be more than 0 seconds (leave timeout out for no limit)");
  if (seconds > kMaxTimeoutS) {
    field.fail(text + " is too long: at most 30 days (" + std::to_string(kMaxTimeoutS) + "s)");
  }
  return seconds;
}

Scheduling readScheduling(const Field& field) {
  FieldMap map(field, {"timeout", "restartJobOnWorkerRestart", "maxRestarts", "disableRetries"},
               "a map");
  Scheduling s;
  if (auto f = map.get("timeout")) s.timeout_s = readTimeout(*f);
  if (auto f = map.get("restartJobOnWorkerRestart")) {
    s.restart_job_on_worker_restart = spec::readBool(*f);
  }
  if (auto f = map.get("maxRestarts")) {
    s.max_restarts = static_cast<int>(spec::readInt(*f, 0, kMaxRestarts));
  }
  if (auto f = map.get("disableRetries")) {
    s.disable_retries = spec::readBool(*f);
    if (s.disable_retries && s.max_restarts > 0) {
      f->fail("true contradicts maxRestarts: " + std::to_string(s.max_restarts) +
              " (disableRetries means no restarts); drop one of them");
    }
  }
  return s;
}

// ---- libreduce ------------------------------------------------------------------------------

[[noreturn]] void failUnknownSetting(const Entry& entry) {
  std::vector<std::string> allowed;
  for (const settings::Setting& s : settings::all()) {
    if (managedSettingReason(s.id) == nullptr) allowed.emplace_back(s.name);
  }
  // LIBREDUCE_CHUNK_BYTES: the variable's name instead of the setting's.
  std::string hint;
  std::string key = lower(entry.name);
  if (key.rfind("libreduce_", 0) == 0 && findSetting(key.substr(10)) != nullptr) {
    hint = "give settings by their short name: '" + key.substr(10) + "'";
  }
  spec::failUnknown(entry, "libreduce setting", allowed, hint);
}

// The value as environment text; true/false mean 1/0 for on/off settings.
std::string settingValue(const Field& field, const settings::Setting& s) {
  std::string text = spec::readText(field, std::string("a value for ") + s.env);
  bool flag = false;
  bool on_off = s.kind == settings::Kind::kInt && s.min == 0 && s.max == 1;
  if (on_off && YAML::convert<bool>::decode(field.node, flag)) return flag ? "1" : "0";
  return text;
}

void readLibreduce(const Field& field, JobSpec* spec) {
  for (const Entry& entry : spec::mapEntries(field, "a map of libreduce settings (name: value)")) {
    const settings::Setting* s = findSetting(entry.name);
    if (s == nullptr) failUnknownSetting(entry);
    if (const char* reason = managedSettingReason(s->id)) {
      throw SpecError{entry.key_mark, entry.value.path, std::string("set by reducectl: ") + reason};
    }
    std::string value = settingValue(entry.value, *s);
    if (settings::checkValue(s->id, value) != rdSuccess) entry.value.fail(lastError());
    spec->libreduce_env.emplace_back(s->env, value);
  }
}

// ---- pools: env -----------------------------------------------------------------------------

void checkEnvName(const std::string& name, const Field& at) {
  bool valid = !name.empty() && std::isdigit(static_cast<unsigned char>(name[0])) == 0 &&
               std::all_of(name.begin(), name.end(),
                           [](unsigned char c) { return std::isalnum(c) != 0 || c == '_'; });
  if (!valid) {
    at.fail("'" + name + "' is not a variable name: use letters, digits and '_', not starting " +
            "with a digit");
  }
  if (upper(name).rfind("LIBREDUCE_", 0) == 0) {
    std::string setting = lower(name.substr(10));
    std::string example = findSetting(setting) != nullptr ? " (" + setting + ": ...)" : "";
    at.fail(name + " is set by reducectl from the job's libreduce settings: put libreduce " +
            "settings under libreduce:" + example);
  }
  if (managedVariableReason(name) != nullptr) {
    at.fail(name + " is set by reducectl for each replica and cannot be given in the spec");
  }
}

// {name: N, value: V} (Vertex's form). A missing value is the empty string.
std::pair<std::string, Field> readEnvItem(const Field& item) {
  FieldMap map(item, {"name", "value"}, "an env entry {name: N, value: V}");
  Field name = map.require("name", "each env entry is {name: N, value: V}");
  std::string text = spec::readNonEmptyText(name, "a variable name");
  checkEnvName(text, name);
  return {text, map.get("value").value_or(Field{YAML::Node(), name.path, name.mark})};
}

std::string envValue(const Field& value) {
  return value.empty() ? std::string() : spec::readText(value, "a string (the value)");
}

std::vector<std::pair<std::string, std::string>> readEnv(const Field& field) {
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<int> lines;  // where each was given, for the repeat message
  if (field.node.IsMap()) {
    // mapEntries refuses repeated keys itself.
    for (const Entry& entry : spec::mapEntries(field, "a map")) {
      checkEnvName(entry.name, Field{entry.value.node, entry.value.path, entry.key_mark});
      env.emplace_back(entry.name, envValue(entry.value));
    }
    return env;
  }
  for (const Field& item : spec::readList(field, "a list of {name: N, value: V} or a map N: V")) {
    auto [name, value] = readEnvItem(item);
    for (size_t i = 0; i < env.size(); ++i) {
      if (env[i].first == name) {
        item.fail(name + " is given twice in this pool (first at line " + std::to_string(lines[i]) +
                  ")");
      }
    }
    env.emplace_back(name, envValue(value));
    lines.push_back(item.mark.line + 1);
  }
  return env;
}

// ---- pools ----------------------------------------------------------------------------------

int readReplicaCount(const Field& field, PoolKind kind) {
  int max = kMaxReplicas[static_cast<int>(kind)];
  // The primary pool is read up to the workers' limit so that a count above 1 gets a message
  // saying where those replicas belong.
  int64_t count = spec::readInt(
      field, 0,
      kind == PoolKind::kPrimary ? kMaxReplicas[static_cast<int>(PoolKind::kWorkers)] : max);
  if (count > max) {
    field.fail(std::to_string(count) + " is out of range: the primary pool has 0 or 1 replica " +
               "(allowed 0..1); put more in workerPoolSpecs[1], the workers");
  }
  return static_cast<int>(count);
}

void readCommand(const FieldMap& map, PoolKind kind, PoolSpec* pool) {
  std::optional<Field> command = map.get("command");
  std::optional<Field> args = map.get("args");
  if (command) pool->command = spec::readTextList(*command);
  std::vector<std::string> extra = args ? spec::readTextList(*args) : std::vector<std::string>();
  if (pool->replica_count == 0) {
    pool->command.insert(pool->command.end(), extra.begin(), extra.end());
    return;  // a pool left out by its count: the rest is not used
  }
  if (!command && kind == PoolKind::kReducers) {
    if (args) {
      args->fail(
          "args need a command; the built-in reduce-server takes its settings from libreduce:");
    }
    return;
  }
  if (!command) {
    map.failMissing("command", std::string("the ") + poolName(kind) +
                                   " pool has replicas, so it needs a command, e.g. [python3, "
                                   "train.py]");
  }
  if (pool->command.empty()) {
    command->fail("the list is empty; it needs at least the program to run");
  }
  if (pool->command[0].empty()) command->fail("the program (the first item) is empty");
  pool->command.insert(pool->command.end(), extra.begin(), extra.end());
}

bool isVertexReducerImage(const std::string& image) {
  return image.find("vertex-ai") != std::string::npos &&
         image.find("/reductionserver") != std::string::npos;
}

// containerSpec: {imageUri, command, args, env}. The pool's own command and args would compete
// with the container's, so they are refused beside it.
void readContainer(const Field& field, const FieldMap& pool_map, PoolKind kind, PoolSpec* pool) {
  for (const char* name : {"command", "args"}) {
    if (auto f = pool_map.get(name)) {
      f->fail(std::string("the pool has a containerSpec: give ") + name + " there (it runs in " +
              "the container), not beside it");
    }
  }
  FieldMap map(field, {"imageUri", "command", "args", "env"}, "a map");
  Field image_field = map.require("imageUri", "the image the pool's replicas run");
  std::string image = spec::readNonEmptyText(image_field, "an image (REGISTRY/NAME:TAG)");
  if (image[0] == '-' || image.find_first_of(" \t\n\r") != std::string::npos) {
    image_field.fail("'" + image + "' is not an image reference (REGISTRY/NAME:TAG)");
  }
  if (auto f = map.get("command")) {
    pool->container.command = spec::readTextList(*f);
    if (pool->container.command.empty() || pool->container.command[0].empty()) {
      f->fail("the program (the first item) is missing; leave command out for the image's own");
    }
  }
  if (auto f = map.get("args")) pool->container.args = spec::readTextList(*f);
  if (auto f = map.get("env")) {
    for (auto& kv : readEnv(*f)) pool->env.push_back(std::move(kv));
  }
  if (kind == PoolKind::kReducers && isVertexReducerImage(image)) {
    pool->note =
        image + " is Vertex AI's reduction server: the built-in reduce-server runs " + "instead";
    pool->container = ContainerSpec{};
    return;
  }
  pool->container.image_uri = image;
}

PoolSpec readPool(const Field& field, PoolKind kind) {
  PoolSpec pool;
  pool.line = field.mark.line + 1;
  FieldMap map(field,
               {"replicaCount", "command", "args", "env", "workingDir", "resources",
                "containerSpec", "machineSpec", "diskSpec", "slurm"},
               "a worker pool map", kPoolHints);
  if (map.emptyMap()) return pool;  // {}: the pool is left out
  pool.replica_count = readReplicaCount(map.require("replicaCount", "0 leaves the pool out"), kind);
  if (auto f = map.get("env")) pool.env = readEnv(*f);
  if (auto f = map.get("containerSpec")) {
    readContainer(*f, map, kind, &pool);
  } else {
    readCommand(map, kind, &pool);
  }
  if (auto f = map.get("workingDir")) {
    pool.working_dir = spec::readNonEmptyText(*f, "a directory path");
  }
  if (auto f = map.get("resources")) {
    FieldMap resources(*f, {"nicGbps"}, "a map");
    if (auto nic = resources.get("nicGbps")) {
      pool.nic_gbps = spec::readDouble(*nic);
      if (pool.nic_gbps <= 0) nic->fail("must be more than 0 (each replica's NIC in Gbit/s)");
    }
  }
  if (auto f = map.get("machineSpec")) pool.machine = readMachineSpec(*f);
  if (auto f = map.get("diskSpec")) pool.disk = readDiskSpec(*f);
  if (auto f = map.get("slurm")) pool.slurm = readSlurmPool(*f, pool.replica_count);
  return pool;
}

void readPools(const FieldMap& top, JobSpec* spec) {
  const std::string expected =
      "a list of 1 to 4 worker pools ([0] primary, [1] workers, [2] reducers, [3] evaluators)";
  Field field = top.require("workerPoolSpecs", "give " + expected);
  std::vector<Field> items = spec::readList(field, expected);
  if (items.empty()) {
    field.fail("expected " + expected + ", got " + (field.empty() ? "no value" : "an empty list"));
  }
  if (items.size() > kPoolCount) {
    items[kPoolCount].fail(
        "there are at most 4 pools: [0] primary, [1] workers, [2] reducers, "
        "[3] evaluators");
  }
  for (size_t i = 0; i < items.size(); ++i) {
    spec->pools[i] = readPool(items[i], static_cast<PoolKind>(i));
  }
  if (spec->pool(PoolKind::kPrimary).replica_count + spec->pool(PoolKind::kWorkers).replica_count ==
      0) {
    field.fail(
        "the job has no ranks: the primary ([0]) and worker ([1]) pools together need at "
        "least 1 replica");
  }
}

// ---- the document ---------------------------------------------------------------------------

}  // namespace

namespace {

// The job's fields from @p map: the top level of a spec, or a Vertex CustomJob's jobSpec.
void readJobFields(const FieldMap& map, JobSpec* spec) {
  if (auto f = map.get("baseOutputDirectory")) spec->base_output_dir = readOutputDir(*f);
  readPools(map, spec);
  if (auto f = map.get("scheduling")) spec->scheduling = readScheduling(*f);
  if (auto f = map.get("libreduce")) readLibreduce(*f, spec);
  if (auto f = map.get("slurm")) spec->slurm = readSlurmJob(*f);
  if (auto f = map.get("reducerPool")) {
    spec->reducer_pool = readReducerPool(*f);
    if (spec->pool(PoolKind::kReducers).replica_count > 0) {
      f->fail(
          "the job starts reducers of its own (workerPoolSpecs[2]) and attaches to a shared "
          "pool: give one of the two");
    }
  }
}

std::vector<std::string> joined(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void readName(const FieldMap& map, JobSpec* spec, bool name_required) {
  if (name_required) {
    spec->name = readDisplayName(map.require("displayName", "name the job ([A-Za-z0-9_.-])"));
  } else if (auto f = map.get("displayName")) {
    spec->name = readDisplayName(*f);
  }
}

}  // namespace

void readJobSpecField(const Field& top, JobSpec* spec, bool name_required) {
  const YAML::Node& root = top.node;
  if (root.IsMap() && root["jobSpec"].IsDefined()) {  // a Vertex CustomJob, as Vertex prints it
    FieldMap custom_job(top, kCustomJobFields, "a Vertex CustomJob");
    readName(custom_job, spec, name_required);
    Field job = custom_job.require("jobSpec", "the job's workerPoolSpecs");
    readJobFields(FieldMap(job, joined(kJobFields, kCloudOnlyJobFields), "a map"), spec);
    return;
  }
  FieldMap map(top, joined({"displayName"}, kJobFields), "the job spec to be a map");
  readName(map, spec, name_required);
  readJobFields(map, spec);
}

std::string formatSpecError(const std::string& source, const YAML::Mark& mark,
                            const std::string& path, const std::string& message) {
  int line = mark.is_null() ? 1 : mark.line + 1;
  int column = mark.is_null() ? 1 : mark.column + 1;
  std::string where = source + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
  return where + (path.empty() ? "" : path + ": ") + message;
}

namespace {

// The one document of a spec; empty files and extra documents are errors.
YAML::Node loadSpecDocument(const std::string& text, const std::string& expected) {
  std::vector<YAML::Node> docs = YAML::LoadAll(text);
  if (docs.empty() || docs[0].IsNull()) {
    throw SpecError{YAML::Mark(), "", "the spec is empty; expected " + expected};
  }
  for (size_t i = 1; i < docs.size(); ++i) {
    if (!docs[i].IsNull()) {
      throw SpecError{docs[i].Mark(), "",
                      "a second YAML document starts here; a spec is one document (drop the "
                      "'---')"};
    }
  }
  return docs[0];
}

}  // namespace

bool parseSpecText(const std::string& text, const std::string& source, const std::string& expected,
                   const std::function<void(const Field&)>& read, std::string* error) {
  try {
    YAML::Node root = loadSpecDocument(text, expected);
    read(Field{root, "", root.Mark()});
  } catch (const SpecError& e) {
    *error = formatSpecError(source, e.mark, e.path, e.message);
    return false;
  } catch (const YAML::ParserException& e) {
    *error = formatSpecError(source, e.mark, "", "YAML syntax error: " + e.msg);
    return false;
  } catch (const YAML::Exception& e) {  // not expected: the readers check before converting
    *error = formatSpecError(source, e.mark, "", "cannot read the spec: " + e.msg);
    return false;
  }
  return true;
}

bool readSpecFile(const std::string& path, const std::string& what, std::string* text,
                  std::string* error) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    *error = path + ": cannot open the " + what + ": " + std::strerror(errno);
    return false;
  }
  char buf[65536];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, file)) > 0) text->append(buf, n);
  int read_errno = std::ferror(file) != 0 ? errno : 0;
  std::fclose(file);
  if (read_errno != 0) {
    *error = path + ": cannot read the " + what + ": " + std::strerror(read_errno);
    return false;
  }
  return true;
}

const char* poolName(PoolKind kind) {
  switch (kind) {
    case PoolKind::kPrimary: return "primary";
    case PoolKind::kWorkers: return "worker";
    case PoolKind::kReducers: return "reducer";
    case PoolKind::kEvaluators: return "evaluator";
  }
  return "unknown";
}

bool parseDuration(const std::string& text, int64_t* seconds) {
  static constexpr std::pair<char, int64_t> kUnits[] = {{'h', 3600}, {'m', 60}, {'s', 1}};
  if (text.empty()) return false;
  const char* p = text.data();
  const char* end = p + text.size();
  int64_t total = 0;
  size_t next_unit = 0;  // units go largest first, each at most once: "1h30m", not "30m1h"
  while (p != end) {
    int64_t n = 0;
    auto [after, ec] = std::from_chars(p, end, n);
    if (ec != std::errc() || n < 0 || *p == '-') return false;
    p = after;
    int64_t scale = 0;
    if (p == end && total == 0 && next_unit == 0) {
      scale = 1;  // a bare number is seconds
    } else {
      while (next_unit < std::size(kUnits) && p != end && kUnits[next_unit].first != *p)
        ++next_unit;
      if (p == end || next_unit == std::size(kUnits)) return false;
      scale = kUnits[next_unit++].second;
      ++p;
    }
    int64_t part = 0;
    if (__builtin_mul_overflow(n, scale, &part) || __builtin_add_overflow(total, part, &total)) {
      return false;
    }
  }
  *seconds = total;
  return true;
}

bool parseJobSpec(const std::string& text, const std::string& source, JobSpec* spec,
                  std::string* error) {
  JobSpec parsed;
  auto read = [&](const Field& top) { readJobSpecField(top, &parsed, true); };
  if (!parseSpecText(text, source, "a map with displayName and workerPoolSpecs", read, error)) {
    return false;
  }
  *spec = std::move(parsed);
  return true;
}

std::string pathFromSpec(const std::string& spec_path, const std::string& path) {
  size_t slash = spec_path.rfind('/');
  if (path.empty() || path[0] == '/' || slash == std::string::npos) return path;
  return spec_path.substr(0, slash + 1) + path;
}

void resolveSpecPaths(const std::string& spec_path, JobSpec* spec) {
  spec->base_output_dir = pathFromSpec(spec_path, spec->base_output_dir);
  for (PoolSpec& pool : spec->pools) pool.working_dir = pathFromSpec(spec_path, pool.working_dir);
  // Absolute: the ranks read it from wherever they run (a Slurm node's own directory).
  if (spec->reducer_pool.attached()) {
    spec->reducer_pool.key_file =
        absolutePath(pathFromSpec(spec_path, spec->reducer_pool.key_file));
  }
}

bool loadJobSpec(const std::string& path, JobSpec* spec, std::string* error) {
  std::string text;
  if (!readSpecFile(path, "job spec", &text, error) || !parseJobSpec(text, path, spec, error)) {
    return false;
  }
  resolveSpecPaths(path, spec);
  return true;
}

bool isRankPool(PoolKind kind) {
  return kind == PoolKind::kPrimary || kind == PoolKind::kWorkers;
}

PoolKind rankZeroPool(const JobSpec& spec) {
  return spec.pool(PoolKind::kPrimary).replica_count > 0 ? PoolKind::kPrimary : PoolKind::kWorkers;
}

bool isJobName(const std::string& text) {
  if (text.empty() || text.size() > kMaxNameLength || text == "." || text == "..") return false;
  return std::all_of(text.begin(), text.end(), [](unsigned char c) { return isNameCharacter(c); });
}

}  // namespace rd::orch
