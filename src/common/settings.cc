#include "common/settings.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "common/status.h"

namespace rd::settings {
namespace {

// Rows must stay in Id order: info() indexes this array by Id.
constexpr Setting kTable[] = {
    {Id::kLogLevel, "log_level", "LIBREDUCE_LOG_LEVEL", Kind::kChoice, "warn",
     "none|error|warn|info|debug|trace", "Messages at this level and more severe go to stderr."},
    {Id::kCpuIsa, "cpu_isa", "LIBREDUCE_CPU_ISA", Kind::kChoice, "auto", "auto|avx512|avx2|scalar",
     "CPU kernel instruction set; auto picks the best the running CPU supports. Forcing one the "
     "CPU lacks makes reductions fail with 'unsupported'."},
    {Id::kKernelThreads, "kernel_threads", "LIBREDUCE_KERNEL_THREADS", Kind::kInt, "0", "0..256",
     "Threads one large CPU reduction may use (the caller included); 0 = one per online CPU, "
     "at most 8."},
    {Id::kKernelSplitBytes, "kernel_split_bytes", "LIBREDUCE_KERNEL_SPLIT_BYTES", Kind::kSize, "1M",
     "4K..",
     "A CPU reduction is split across threads only in parts of at least this many destination "
     "bytes."},
    {Id::kKernelStreamBytes, "kernel_stream_bytes", "LIBREDUCE_KERNEL_STREAM_BYTES", Kind::kSize,
     "4M", "0..",
     "Destinations at least this large are written with non-temporal stores, which skip the "
     "cache and the read-for-ownership; 0 = never."},
    {Id::kReducers, "reducers", "LIBREDUCE_REDUCERS", Kind::kString, "", "",
     "Comma-separated reducer addresses (host:port) a communicator created from the environment "
     "uses. Empty: no reducers, the workers run ring all-reduce among themselves."},
    {Id::kSecret, "secret", "LIBREDUCE_SECRET", Kind::kString, "", "",
     "The job secret workers prove to reducers at join (HMAC challenge-response). Prefer "
     "LIBREDUCE_SECRET_FILE: environment values can show up in process listings."},
    {Id::kSecretFile, "secret_file", "LIBREDUCE_SECRET_FILE", Kind::kString, "", "",
     "File holding the job secret (first line); used when LIBREDUCE_SECRET is empty."},
    {Id::kCommId, "comm_id", "LIBREDUCE_COMM_ID", Kind::kString, "", "",
     "Communicator (job) id shared by every rank of a communicator created from the environment; "
     "any text. Empty: derived from MASTER_ADDR:MASTER_PORT."},
    {Id::kRank, "rank", "LIBREDUCE_RANK", Kind::kInt, "-1", "-1..65535",
     "This process's rank for rdCommInitFromEnv; -1 = take RANK (torchrun, reducectl)."},
    {Id::kWorldSize, "world_size", "LIBREDUCE_WORLD_SIZE", Kind::kInt, "-1", "-1..65536",
     "Number of ranks for rdCommInitFromEnv; -1 = take WORLD_SIZE."},
    {Id::kAlgo, "algo", "LIBREDUCE_ALGO", Kind::kChoice, "auto", "auto|rs|ring",
     "All-reduce algorithm: rs (through the reducers), ring (between the workers), auto (rs when "
     "reducers are given, else ring)."},
    {Id::kChunkBytes, "chunk_bytes", "LIBREDUCE_CHUNK_BYTES", Kind::kSize, "1M", "4K..64M",
     "Bytes per chunk a worker sends to a reducer (rounded down to whole elements)."},
    {Id::kWindow, "window", "LIBREDUCE_WINDOW", Kind::kInt, "4", "1..64",
     "Chunks a worker keeps in flight per reducer (and per ring neighbour)."},
    {Id::kTimeoutMs, "timeout_ms", "LIBREDUCE_TIMEOUT_MS", Kind::kInt, "60000", "100..86400000",
     "Longest wait for a peer: join, each step of an operation. A peer silent for longer is "
     "reported by name and the operation fails."},
    {Id::kDeterministic, "deterministic", "LIBREDUCE_DETERMINISTIC", Kind::kInt, "0", "0..1",
     "1: reducers combine contributions in rank order, so results are bit-identical run to run. "
     "0: contributions are combined as they arrive (lower latency)."},
    {Id::kListenHost, "listen_host", "LIBREDUCE_LISTEN_HOST", Kind::kString, "", "",
     "Address a worker listens on for ring neighbours; empty = the local address that routes to "
     "the first reducer (or to MASTER_ADDR)."},
    {Id::kSpinUs, "spin_us", "LIBREDUCE_SPIN_US", Kind::kInt, "0", "0..1000000",
     "Microseconds a progress thread keeps polling after network activity before it sleeps on "
     "the event fd. Idle processes always sleep."},
};
static_assert(std::size(kTable) == static_cast<size_t>(Id::kCount), "one row per settings::Id");

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Parses "a..b" (either side may be empty) from the allowed column.
void parseRange(const char* allowed, bool size, int64_t* lo, int64_t* hi) {
  std::string range = allowed;
  *lo = INT64_MIN;
  *hi = INT64_MAX;
  size_t dots = range.find("..");
  if (dots == std::string::npos) return;
  std::string a = range.substr(0, dots), b = range.substr(dots + 2);
  uint64_t v = 0;
  if (!a.empty()) *lo = size && parseSize(a, &v) ? static_cast<int64_t>(v) : std::atoll(a.c_str());
  if (!b.empty()) *hi = size && parseSize(b, &v) ? static_cast<int64_t>(v) : std::atoll(b.c_str());
}

rdResult_t rangeError(const Setting& s, const std::string& value) {
  return setErrorf(rdInvalidArgument, "%s=%s is not valid: expected %s in %s", s.env, value.c_str(),
                   s.kind == Kind::kSize ? "a size (e.g. 512K, 4M)" : "an integer", s.allowed);
}

// The parsers behind readInt/readSize/readChoice and checkValue: @p text is the value whether it
// comes from the environment or from a job spec, so both report it the same way.
rdResult_t parseInt(const Setting& s, const std::string& text, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  int64_t lo = 0, hi = 0;
  parseRange(s.allowed, false, &lo, &hi);
  if (text.empty() || errno != 0 || *end != '\0' || v < lo || v > hi) return rangeError(s, text);
  *out = v;
  return rdSuccess;
}

rdResult_t parseSizeValue(const Setting& s, const std::string& text, uint64_t* out) {
  uint64_t v = 0;
  int64_t lo = 0, hi = 0;
  parseRange(s.allowed, true, &lo, &hi);
  if (!parseSize(text, &v) || v > static_cast<uint64_t>(INT64_MAX) ||
      static_cast<int64_t>(v) < lo || static_cast<int64_t>(v) > hi) {
    return rangeError(s, text);
  }
  *out = v;
  return rdSuccess;
}

rdResult_t parseChoice(const Setting& s, const std::string& text, std::string* out) {
  std::string value = lower(text);
  std::string allowed = s.allowed;
  size_t start = 0;
  while (start <= allowed.size()) {
    size_t bar = allowed.find('|', start);
    if (bar == std::string::npos) bar = allowed.size();
    if (allowed.compare(start, bar - start, value) == 0 && bar - start == value.size()) {
      *out = value;
      return rdSuccess;
    }
    start = bar + 1;
  }
  return setErrorf(rdInvalidArgument, "%s=%s is not valid: expected one of %s", s.env, text.c_str(),
                   s.allowed);
}

}  // namespace

std::span<const Setting> all() {
  return kTable;
}

const Setting& info(Id id) {
  return kTable[static_cast<int>(id)];
}

bool isSetInEnv(Id id) {
  const char* v = std::getenv(info(id).env);
  return v != nullptr && v[0] != '\0';
}

std::string rawValue(Id id) {
  const Setting& s = info(id);
  const char* v = std::getenv(s.env);
  return (v != nullptr && v[0] != '\0') ? std::string(v) : std::string(s.default_value);
}

bool parseSize(const std::string& text, uint64_t* out) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return false;
  std::string suffix = lower(end);
  if (suffix == "b") suffix.clear();
  if (!suffix.empty() && suffix.back() == 'b') suffix.pop_back();  // "64kb", "1mib"
  if (!suffix.empty() && suffix.back() == 'i') suffix.pop_back();
  int shift = 0;
  if (suffix == "k")
    shift = 10;
  else if (suffix == "m")
    shift = 20;
  else if (suffix == "g")
    shift = 30;
  else if (suffix == "t")
    shift = 40;
  else if (!suffix.empty())
    return false;
  if (shift != 0 && v > (UINT64_MAX >> shift)) return false;
  *out = static_cast<uint64_t>(v) << shift;
  return true;
}

rdResult_t readInt(Id id, int64_t* out) {
  return parseInt(info(id), rawValue(id), out);
}

rdResult_t readSize(Id id, uint64_t* out) {
  return parseSizeValue(info(id), rawValue(id), out);
}

rdResult_t readChoice(Id id, std::string* out) {
  return parseChoice(info(id), rawValue(id), out);
}

rdResult_t checkValue(Id id, const std::string& text) {
  const Setting& s = info(id);
  int64_t i = 0;
  uint64_t size = 0;
  std::string choice;
  switch (s.kind) {
    case Kind::kInt: return parseInt(s, text, &i);
    case Kind::kSize: return parseSizeValue(s, text, &size);
    case Kind::kChoice: return parseChoice(s, text, &choice);
    case Kind::kString: break;
  }
  return rdSuccess;
}

}  // namespace rd::settings
