// SPDX-License-Identifier: BSD-3-Clause
#include "common/settings.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "common/algorithm.h"
#include "common/limits.h"
#include "common/status.h"

namespace rd::settings {
namespace {

constexpr const char* kLogLevels[] = {"none", "error", "warn", "info", "debug", "trace"};
constexpr const char* kCpuIsas[] = {"auto", "avx512", "avx2", "scalar"};
constexpr const char* kWireDtypes[] = {"none", "bf16", "fp16"};

// Rows must stay in Id order: info() indexes this array by Id.
constexpr Setting kTable[] = {
    {.id = Id::kLogLevel,
     .name = "log_level",
     .env = "LIBREDUCE_LOG_LEVEL",
     .kind = Kind::kChoice,
     .default_value = "warn",
     .description = "Messages at this level and more severe go to stderr.",
     .min = 0,
     .max = kUnbounded,
     .choices = kLogLevels},
    {.id = Id::kCpuIsa,
     .name = "cpu_isa",
     .env = "LIBREDUCE_CPU_ISA",
     .kind = Kind::kChoice,
     .default_value = "auto",
     .description = "CPU kernel instruction set; auto picks the best the running CPU supports. "
                    "Forcing one the CPU lacks makes reductions fail with 'unsupported'.",
     .min = 0,
     .max = kUnbounded,
     .choices = kCpuIsas},
    {.id = Id::kKernelThreads,
     .name = "kernel_threads",
     .env = "LIBREDUCE_KERNEL_THREADS",
     .kind = Kind::kInt,
     .default_value = "0",
     .description = "Threads one large CPU reduction may use (the caller included); 0 = one per "
                    "online CPU, at most 8.",
     .min = 0,
     .max = 256,
     .choices = {}},
    {.id = Id::kKernelSplitBytes,
     .name = "kernel_split_bytes",
     .env = "LIBREDUCE_KERNEL_SPLIT_BYTES",
     .kind = Kind::kSize,
     .default_value = "1M",
     .description = "A CPU reduction is split across threads only in parts of at least this many "
                    "destination bytes.",
     .min = 4096,
     .max = kUnbounded,
     .choices = {}},
    {.id = Id::kKernelStreamBytes,
     .name = "kernel_stream_bytes",
     .env = "LIBREDUCE_KERNEL_STREAM_BYTES",
     .kind = Kind::kSize,
     .default_value = "4M",
     .description = "Destinations at least this large are written with non-temporal stores, "
                    "which skip the cache and the read-for-ownership; 0 = never.",
     .min = 0,
     .max = kUnbounded,
     .choices = {}},
    {.id = Id::kReducers,
     .name = "reducers",
     .env = "LIBREDUCE_REDUCERS",
     .kind = Kind::kString,
     .default_value = "",
     .description = "Comma-separated reducer addresses (host:port) a communicator created from "
                    "the environment or by rdGetUniqueId uses. Empty: no reducers, the workers "
                    "run ring all-reduce among themselves. A unique id carries its own list, "
                    "which wins over this one.",
     .min = 0,
     .max = kUnbounded,
     .choices = {}},
    {.id = Id::kSecret,
     .name = "secret",
     .env = "LIBREDUCE_SECRET",
     .kind = Kind::kString,
     .default_value = "",
     .description = "The job secret workers prove to reducers at join (HMAC challenge-response). "
                    "Prefer LIBREDUCE_SECRET_FILE: environment values can show up in process "
                    "listings.",
     .min = 0,
     .max = kUnbounded,
     .choices = {}},
    {.id = Id::kSecretFile,
     .name = "secret_file",
     .env = "LIBREDUCE_SECRET_FILE",
     .kind = Kind::kString,
     .default_value = "",
     .description = "File holding the job secret (first line); used when LIBREDUCE_SECRET is "
                    "empty.",
     .min = 0,
     .max = kUnbounded,
     .choices = {}},
    {.id = Id::kCommId,
     .name = "comm_id",
     .env = "LIBREDUCE_COMM_ID",
     .kind = Kind::kString,
     .default_value = "",
     .description = "Communicator (job) id shared by every rank of a communicator created from "
                    "the environment; any text. Empty: drawn at random by rank 0, which hands "
                    "it out from a rendezvous on MASTER_PORT + 1. A job on a shared reducer "
                    "pool gives the one its key was made for.",
     .min = 0,
     .max = kUnbounded,
     .choices = {}},
    {.id = Id::kRank,
     .name = "rank",
     .env = "LIBREDUCE_RANK",
     .kind = Kind::kInt,
     .default_value = "-1",
     .description = "This process's rank for rdCommInitFromEnv; -1 = take RANK (torchrun, "
                    "reducectl).",
     .min = -1,
     .max = limits::kMaxRanks - 1,
     .choices = {}},
    {.id = Id::kWorldSize,
     .name = "world_size",
     .env = "LIBREDUCE_WORLD_SIZE",
     .kind = Kind::kInt,
     .default_value = "-1",
     .description = "Number of ranks for rdCommInitFromEnv; -1 = take WORLD_SIZE.",
     .min = -1,
     .max = limits::kMaxRanks,
     .choices = {}},
    {.id = Id::kAlgo,
     .name = "algo",
     .env = "LIBREDUCE_ALGO",
     .kind = Kind::kChoice,
     .default_value = "auto",
     .description = "All-reduce algorithm (reduce-info and docs/settings.md say what each does). "
                    "Resolved once per communicator, after the unique id and rdCommConfig_t; "
                    "every rank must resolve the same one.",
     .min = 0,
     .max = kUnbounded,
     .choices = kAlgorithmNames},
    {.id = Id::kChunkBytes,
     .name = "chunk_bytes",
     .env = "LIBREDUCE_CHUNK_BYTES",
     .kind = Kind::kSize,
     .default_value = "auto",
     .description =
         "Bytes per chunk a worker sends to a reducer (rounded down to whole elements). auto: "
         "chosen per operation from its size, the ranks and the reducers, so that every "
         "reducer gets a pipeline of several chunks and the chunks in flight fit "
         "LIBREDUCE_INGRESS_BYTES (docs/performance.md); 128K when every reducer is at a "
         "loopback address (one host, where messages, not links, cost the time). A number "
         "fixes the chunk size; a buffer with less than that per reducer is still spread over "
         "every reducer.",
     .min = limits::kMinChunkBytes,
     .max = limits::kMaxChunkBytes,
     .choices = {},
     .has_auto = true},
    {.id = Id::kWindow,
     .name = "window",
     .env = "LIBREDUCE_WINDOW",
     .kind = Kind::kInt,
     .default_value = "auto",
     .description = "Chunks a worker keeps in flight per reducer (and per ring neighbour). "
                    "auto: 4 per reducer, enough to hide a chunk's round trip.",
     .min = limits::kMinWindow,
     .max = limits::kMaxWindow,
     .choices = {},
     .has_auto = true},
    {.id = Id::kTimeoutMs,
     .name = "timeout_ms",
     .env = "LIBREDUCE_TIMEOUT_MS",
     .kind = Kind::kInt,
     .default_value = "60000",
     .description = "Longest wait for a peer: join, each step of an operation. A peer silent for "
                    "longer is reported by name and the operation fails.",
     .min = limits::kMinTimeoutMs,
     .max = limits::kMaxTimeoutMs,
     .choices = {}},
    {.id = Id::kConnectTimeoutMs,
     .name = "connect_timeout_ms",
     .env = "LIBREDUCE_CONNECT_TIMEOUT_MS",
     .kind = Kind::kInt,
     .default_value = "60000",
     .description = "Longest a joining rank keeps retrying a reducer or rendezvous address it "
                    "cannot connect to (refused, unreachable, no such host) before the join "
                    "fails naming it; it warns after 2 s and every 10 s. Reducers started after "
                    "their workers must be up within it. At most timeout_ms.",
     .min = limits::kMinTimeoutMs,
     .max = limits::kMaxTimeoutMs,
     .choices = {}},
    {.id = Id::kHeartbeatMs,
     .name = "heartbeat_ms",
     .env = "LIBREDUCE_HEARTBEAT_MS",
     .kind = Kind::kInt,
     .default_value = "5000",
     .description =
         "Workers and reducers send each other a heartbeat 4 times per period; a peer "
         "that sent nothing for a whole period is frozen or cut off, and is reported "
         "by name long before LIBREDUCE_TIMEOUT_MS (the reducers' value is the first "
         "rank's). Time an observer was itself held up (a starved host) is not counted "
         "against its peers. 0: no heartbeats, silence is found by the timeout alone; under "
         "200 counts as 200.",
     .min = 0,
     .max = limits::kMaxTimeoutMs,
     .choices = {}},
    {.id = Id::kFailover,
     .name = "failover",
     .env = "LIBREDUCE_FAILOVER",
     .kind = Kind::kInt,
     .default_value = "1",
     .description = "1: with two or more reducers, a lost reducer's chunks go to the others and "
                    "the communicator goes on (docs/failover.md); each operation then ends with "
                    "a release round (one small message each way; all-reduces up to 256 KiB "
                    "complete before it, from a copy). 0: a lost reducer fails the communicator.",
     .min = 0,
     .max = 1,
     .choices = {}},
    {.id = Id::kEventsFile,
     .name = "events_file",
     .env = "LIBREDUCE_EVENTS_FILE",
     .kind = Kind::kString,
     .default_value = "",
     .description = "A file each reducer failover is appended to, one JSON object per line "
                    "(docs/failover.md): a reducer lost, the operations it held up done, a "
                    "replacement admitted. reducectl sets it for every rank and records the "
                    "failovers in job.json. Empty: none.",
     .min = 0,
     .max = kUnbounded,
     .choices = {}},
    {.id = Id::kDeterministic,
     .name = "deterministic",
     .env = "LIBREDUCE_DETERMINISTIC",
     .kind = Kind::kInt,
     .default_value = "0",
     .description = "1: reducers combine contributions in rank order, so results are "
                    "bit-identical run to run. 0: contributions are combined as they arrive "
                    "(lower latency).",
     .min = 0,
     .max = 1,
     .choices = {}},
    {.id = Id::kListenHost,
     .name = "listen_host",
     .env = "LIBREDUCE_LISTEN_HOST",
     .kind = Kind::kString,
     .default_value = "",
     .description = "Address a worker listens on for ring neighbours; empty = the local address "
                    "that routes to the first reducer (or to MASTER_ADDR).",
     .min = 0,
     .max = kUnbounded,
     .choices = {}},
    {.id = Id::kSpinUs,
     .name = "spin_us",
     .env = "LIBREDUCE_SPIN_US",
     .kind = Kind::kInt,
     .default_value = "0",
     .description = "Microseconds the progress thread keeps polling after network activity "
                    "before it sleeps on the event fd. Idle processes always sleep.",
     .min = 0,
     .max = 1000000,
     .choices = {}},
    {.id = Id::kBootstrapTimeoutMs,
     .name = "bootstrap_timeout_ms",
     .env = "LIBREDUCE_BOOTSTRAP_TIMEOUT_MS",
     .kind = Kind::kInt,
     .default_value = "10000",
     .description = "Longest a connection may take to finish libreduce's authenticated "
                    "handshake, on the listening and the connecting side; a peer that has not "
                    "proven the secret by then is dropped.",
     .min = 100,
     .max = 600000,
     .choices = {}},
    {.id = Id::kBootstrapPending,
     .name = "bootstrap_pending",
     .env = "LIBREDUCE_BOOTSTRAP_PENDING",
     .kind = Kind::kInt,
     .default_value = "256",
     .description = "Connections a listening port holds that have not authenticated yet; a new "
                    "one past this drops the oldest, so idle connections held open cannot lock "
                    "out a real peer.",
     .min = 1,
     .max = 65536,
     .choices = {}},
    {.id = Id::kEagerBytes,
     .name = "eager_bytes",
     .env = "LIBREDUCE_EAGER_BYTES",
     .kind = Kind::kSize,
     .default_value = "256K",
     .description = "Messages up to this size are sent at once, without the rendezvous "
                    "handshake (a round trip) larger ones wait for; the receiver holds them "
                    "until it takes them. 0: every message with a payload waits for the "
                    "handshake.",
     .min = 0,
     .max = limits::kMaxChunkBytes,
     .choices = {}},
    {.id = Id::kIngressBytes,
     .name = "ingress_bytes",
     .env = "LIBREDUCE_INGRESS_BYTES",
     .kind = Kind::kSize,
     .default_value = "1M",
     .description = "Bytes all ranks together keep in flight toward one reducer when the chunk "
                    "size is auto (window x chunk per rank = this / ranks): n ranks sending to "
                    "one reducer at once overflow its link's queue (incast) when each keeps "
                    "much more than a link's delay worth in flight.",
     .min = limits::kMinChunkBytes,
     .max = kUnbounded,
     .choices = {}},
    {.id = Id::kReducerThreads,
     .name = "reducer_threads",
     .env = "LIBREDUCE_REDUCER_THREADS",
     .kind = Kind::kInt,
     .default_value = "auto",
     .description = "Threads a reducer runs its large reductions on, so that network progress "
                    "never waits on one (reduce-server --threads). auto: one per online CPU, "
                    "at most 4.",
     .min = 1,
     .max = 256,
     .choices = {},
     .has_auto = true},
    {.id = Id::kReducerLanes,
     .name = "reducer_lanes",
     .env = "LIBREDUCE_REDUCER_LANES",
     .kind = Kind::kInt,
     .default_value = "1",
     .description = "Network lanes of a reducer (reduce-server --lanes): each has its own "
                    "thread, UCX worker and port, so one reducer uses that many cores for "
                    "network progress. Its ready line lists every lane's address; workers are "
                    "given them all.",
     .min = 1,
     .max = 64,
     .choices = {}},
    {.id = Id::kReducerMaxCommunicators,
     .name = "reducer_max_communicators",
     .env = "LIBREDUCE_REDUCER_MAX_COMMUNICATORS",
     .kind = Kind::kInt,
     .default_value = "256",
     .description = "Communicators one reducer serves at once (reduce-server "
                    "--max-communicators); a join beyond it is refused, naming the limit.",
     .min = 1,
     .max = 65536,
     .choices = {}},
    {.id = Id::kReducerMaxRanks,
     .name = "reducer_max_ranks",
     .env = "LIBREDUCE_REDUCER_MAX_RANKS",
     .kind = Kind::kInt,
     .default_value = "4096",
     .description = "Ranks one communicator may have on a reducer (reduce-server --max-ranks): "
                    "a hello claiming more is refused before any per-rank state exists.",
     .min = 1,
     .max = 65536,
     .choices = {}},
    {.id = Id::kReducerCommMemoryPercent,
     .name = "reducer_comm_memory_percent",
     .env = "LIBREDUCE_REDUCER_COMM_MEMORY_PERCENT",
     .kind = Kind::kInt,
     .default_value = "50",
     .description = "Share of a reducer's memory limit one communicator may hold, in percent "
                    "(reduce-server --comm-memory-percent): its chunk buffers and its "
                    "per-rank and per-chunk state. Past it, its own contributions wait; other "
                    "communicators keep the rest.",
     .min = 1,
     .max = 100,
     .choices = {}},
    {.id = Id::kWireDtype,
     .name = "wire_dtype",
     .env = "LIBREDUCE_WIRE_DTYPE",
     .kind = Kind::kChoice,
     .default_value = "none",
     .description = "Wire compression: float32 all-reduce and reduce-scatter (sum, avg) and "
                    "all-gather through the reducers travel as bf16 or fp16 (rounded to nearest "
                    "even); reducers sum "
                    "in float32 and round the result once. Half the bytes on a link-bound job; "
                    "bf16 keeps float32's range, fp16 three more bits of precision but overflows "
                    "to Inf beyond 65504 (docs/performance.md).",
     .min = 0,
     .max = kUnbounded,
     .choices = kWireDtypes},
    {.id = Id::kNcclTuner,
     .name = "nccl_tuner",
     .env = "LIBREDUCE_NCCL_TUNER",
     .kind = Kind::kInt,
     .default_value = "1",
     .description = "The NCCL plugin's tuner (docs/nccl_plugin.md): 1 makes NCCL choose CollNet, "
                    "i.e. the reducers, for all-reduces of the sizes where the model predicts "
                    "they win; 0 leaves every choice to NCCL.",
     .min = 0,
     .max = 1,
     .choices = {}},
    {.id = Id::kNcclCollNetLatencyUs,
     .name = "nccl_collnet_latency_us",
     .env = "LIBREDUCE_NCCL_COLLNET_LATENCY_US",
     .kind = Kind::kInt,
     .default_value = "50",
     .description = "The NCCL tuner's fixed cost of one all-reduce through the reducers, in "
                    "microseconds (two network hops and a reduction), added to its bandwidth "
                    "term. Larger: CollNet only for larger all-reduces.",
     .min = 0,
     .max = 10000000,
     .choices = {}},
    {.id = Id::kNcclChunkBytes,
     .name = "nccl_chunk_bytes",
     .env = "LIBREDUCE_NCCL_CHUNK_BYTES",
     .kind = Kind::kSize,
     .default_value = "auto",
     .description = "Chunk size the NCCL tuner asks NCCL (2.30 and later) to hand CollNet; each "
                    "chunk is one all-reduce through the reducers. auto: the all-reduce's bytes "
                    "per channel, so NCCL's largest buffer step; never less than NCCL's own "
                    "choice.",
     .min = 4096,
     .max = kUnbounded,
     .choices = {},
     .has_auto = true},
    {.id = Id::kMetrics,
     .name = "metrics",
     .env = "LIBREDUCE_METRICS",
     .kind = Kind::kString,
     .default_value = "",
     .description = "Where this process exports per-collective Prometheus metrics "
                    "(docs/observability.md): [HOST:]PORT serves them at /metrics (HOST "
                    "defaults to 127.0.0.1), a directory gets a textfile per process for "
                    "node_exporter. Empty: none.",
     .min = 0,
     .max = kUnbounded,
     .choices = {}},
    {.id = Id::kMetricsIntervalMs,
     .name = "metrics_interval_ms",
     .env = "LIBREDUCE_METRICS_INTERVAL_MS",
     .kind = Kind::kInt,
     .default_value = "10000",
     .description = "How often the metrics textfile (LIBREDUCE_METRICS=DIR) is rewritten; it is "
                    "written at exit too.",
     .min = 100,
     .max = 3600000,
     .choices = {}},
    {.id = Id::kTrace,
     .name = "trace",
     .env = "LIBREDUCE_TRACE",
     .kind = Kind::kString,
     .default_value = "",
     .description = "A directory in which this process writes its timeline, each operation and "
                    "chunk with its phases as Chrome trace JSON (docs/observability.md): at "
                    "exit, on SIGUSR1 and when a communicator fails. Empty: none.",
     .min = 0,
     .max = kUnbounded,
     .choices = {}},
    {.id = Id::kTraceSpans,
     .name = "trace_spans",
     .env = "LIBREDUCE_TRACE_SPANS",
     .kind = Kind::kInt,
     .default_value = "100000",
     .description = "How many spans the timeline keeps (the newest; about 100 bytes each).",
     .min = 1000,
     .max = 100000000,
     .choices = {}},
};
static_assert(std::size(kTable) == static_cast<size_t>(Id::kCount), "one row per settings::Id");

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// "64M" for sizes that are whole K/M/G/T, else the plain number.
std::string sizeText(int64_t v) {
  static const char kSuffix[] = {'T', 'G', 'M', 'K'};
  for (int i = 0; i < 4; ++i) {
    int shift = 40 - 10 * i;
    int64_t unit = int64_t{1} << shift;
    if (v != 0 && v % unit == 0) return std::to_string(v / unit) + kSuffix[i];
  }
  return std::to_string(v);
}

rdResult_t rangeError(const Setting& s, const std::string& value) {
  return setErrorf(rdInvalidArgument, "%s=%s is not valid: expected %s in %s", s.env, value.c_str(),
                   s.kind == Kind::kSize ? "a size (e.g. 512K, 4M)" : "an integer",
                   allowedText(s).c_str());
}

// The parsers behind readInt/readSize/readChoice and checkValue: @p text is the value whether it
// comes from the environment or from a job spec, so both report it the same way.
// "auto" (or 0) of a setting that has it.
bool isAuto(const Setting& s, const std::string& text) {
  return s.has_auto && (lower(text) == "auto" || text == "0");
}

rdResult_t parseInt(const Setting& s, const std::string& text, int64_t* out) {
  if (isAuto(s, text)) {
    *out = 0;
    return rdSuccess;
  }
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || v < s.min || v > s.max) {
    return rangeError(s, text);
  }
  *out = v;
  return rdSuccess;
}

rdResult_t parseSizeValue(const Setting& s, const std::string& text, uint64_t* out) {
  if (isAuto(s, text)) {
    *out = 0;
    return rdSuccess;
  }
  uint64_t v = 0;
  if (!parseSize(text, &v) || v > static_cast<uint64_t>(INT64_MAX) ||
      static_cast<int64_t>(v) < s.min || static_cast<int64_t>(v) > s.max) {
    return rangeError(s, text);
  }
  *out = v;
  return rdSuccess;
}

rdResult_t parseChoice(const Setting& s, const std::string& text, std::string* out) {
  std::string value = lower(text);
  for (const char* choice : s.choices) {
    if (value == choice) {
      *out = value;
      return rdSuccess;
    }
  }
  return setErrorf(rdInvalidArgument, "%s=%s is not valid: expected one of %s", s.env, text.c_str(),
                   allowedText(s).c_str());
}

}  // namespace

std::string allowedText(const Setting& s) {
  switch (s.kind) {
    case Kind::kChoice: {
      std::string text;
      for (const char* choice : s.choices) text += (text.empty() ? "" : "|") + std::string(choice);
      return text;
    }
    case Kind::kInt:
    case Kind::kSize: {
      auto show = [&](int64_t v) {
        return s.kind == Kind::kSize ? sizeText(v) : std::to_string(v);
      };
      return (s.has_auto ? "auto|" : "") + show(s.min) + ".." +
             (s.max == kUnbounded ? std::string() : show(s.max));
    }
    case Kind::kString: break;
  }
  return "any";
}

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
