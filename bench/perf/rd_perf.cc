// SPDX-License-Identifier: BSD-3-Clause
// rd_perf: libreduce's collectives measured like nccl-tests' all_reduce_perf (same flags, same
// table), through the reducers (--algo rs) or the ring between the workers (--algo ring).
// One process per rank; ranks and the rendezvous come from the launcher's environment.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "libreduce/comm.h"
#include "perf/algo_compare.h"
#include "perf/footprint.h"
#include "perf/perf_runner.h"

namespace {

using rd::perf::Coll;

class LibreduceBackend final : public rd::perf::Backend {
 public:
  LibreduceBackend(rdComm_t comm, std::string algo, rdDataType_t wire)
      : comm_(comm), algo_(std::move(algo)), wire_(wire) {
    rdCommUserRank(comm_, &rank_);
    rdCommCount(comm_, &nranks_);
  }
  ~LibreduceBackend() override { rdCommDestroy(comm_); }
  LibreduceBackend(const LibreduceBackend&) = delete;
  LibreduceBackend& operator=(const LibreduceBackend&) = delete;

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  std::string name() const override {
    if (wire_ == rdFloat32) return "libreduce " + algo_;
    return "libreduce " + algo_ + ", float32 on the wire as " + rdWireDtypeName(wire_);
  }

  rdDataType_t precision(rdDataType_t dtype) const override {
    return dtype == rdFloat32 ? wire_ : dtype;
  }

  bool supports(Coll coll, rdDataType_t, rdRedOp_t) const override {
    // The ring runs all-reduce only; everything else needs reducers.
    return algo_ != "ring" || coll == Coll::kAllReduce;
  }

  bool run(Coll coll, const void* send, void* recv, size_t count, rdDataType_t d, rdRedOp_t op,
           int root, std::string* error) override {
    rdResult_t st = rdSuccess;
    switch (coll) {
      case Coll::kAllReduce: st = rdAllReduce(send, recv, count, d, op, comm_); break;
      case Coll::kReduceScatter: st = rdReduceScatter(send, recv, count, d, op, comm_); break;
      case Coll::kAllGather: st = rdAllGather(send, recv, count, d, comm_); break;
      case Coll::kBroadcast: st = rdBroadcast(send, recv, count, d, root, comm_); break;
    }
    if (st != rdSuccess) *error = std::string(rdGetErrorString(st)) + ": " + rdGetLastError();
    return st == rdSuccess;
  }

  double combine(double value, int how) override {
    static const rdRedOp_t kOps[] = {rdSum, rdMin, rdMax};
    double out = value;
    if (rdAllReduce(&value, &out, 1, rdFloat64, kOps[how], comm_) != rdSuccess) {
      std::fprintf(stderr, "# rank %d: combining times failed: %s\n", rank_, rdGetLastError());
      std::exit(2);
    }
    return out;
  }

 private:
  rdComm_t comm_;
  std::string algo_;
  rdDataType_t wire_;
  int rank_ = 0;
  int nranks_ = 1;
};

const char* const kExtraHelp =
    "  --algo auto|rs|ring     auto (default): with reducers, each size tries both and keeps\n"
    "                          the faster; rs: through the reducers; ring: between the\n"
    "                          workers (LIBREDUCE_ALGO)\n"
    "  --algo A,B,...          each in a communicator of its own in these processes, measured\n"
    "                          interleaved, the first against the fastest of the others\n"
    "                          (all-reduce; needs reducers)\n"
    "  --rounds N              with several --algo: timed rounds per size (default 5)\n"
    "  --reducers H:P,...      the reducers (LIBREDUCE_REDUCERS); none = ring\n"
    "  --chunk BYTES, --window N   chunk size and chunks in flight per reducer\n"
    "  --wire-dtype none|bf16|fp16 float32 through the reducers travels as that type, summed\n"
    "                          in float32 (LIBREDUCE_WIRE_DTYPE)\n"
    "  --footprint FILE        at the end each rank appends a line to FILE: its join time,\n"
    "                          peak memory, open files, sockets and threads\n"
    "The communicator id comes from LIBREDUCE_COMM_ID; without it (or without reducers) rank 0\n"
    "serves a rendezvous on MASTER_ADDR:MASTER_PORT + 1 that draws it (and joins the ring).\n";

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) items.push_back(item);
  return items;
}

// The float32 wire type LIBREDUCE_WIRE_DTYPE asks for, which applies to the reducers only.
bool wireDtype(const std::string& algo, rdDataType_t* wire) {
  const char* name = std::getenv("LIBREDUCE_WIRE_DTYPE");
  *wire = rdFloat32;
  if (algo == "ring" || name == nullptr || *name == '\0') return true;
  if (rdWireDtypeFromName(name, wire) == rdSuccess) return true;
  std::fprintf(stderr, "rd_perf: %s\n", rdGetLastError());
  return false;
}

// --footprint FILE: times this process's joins, then appends its cost to FILE once measured
// (while its communicators are still open, so their files and sockets count).
class FootprintRecorder {
 public:
  explicit FootprintRecorder(std::string path) : path_(std::move(path)) {}

  /** Runs @p join (a communicator's creation, true when it worked) and adds its wall time. */
  template <typename Join>
  bool timeJoin(Join&& join) {
    const auto start = std::chrono::steady_clock::now();
    const bool joined = join();
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    cost_.join_ms += took.count();
    if (joined) ++cost_.communicators;
    return joined;
  }

  /** Writes the line if asked for; false (said on stderr) when the file cannot take it. */
  bool record(int rank, int nranks) {
    if (path_.empty()) return true;
    cost_.rank = rank;
    cost_.nranks = nranks;
    rd::perf::readProcessCost(&cost_);
    if (rd::perf::appendFootprint(path_, cost_)) return true;
    std::fprintf(stderr, "rd_perf: --footprint %s: %s\n", path_.c_str(), std::strerror(errno));
    return false;
  }

 private:
  std::string path_;
  rd::perf::Footprint cost_;
};

// A new communicator running @p algo, made NCCL style: rank 0's unique id goes to every rank
// through @p via. Null (said on stderr) on failure.
std::unique_ptr<LibreduceBackend> joinNew(rdComm_t via, int rank, int nranks,
                                          const std::string& algo, const std::string& label) {
  rdCommConfig_t config = RD_COMM_CONFIG_INITIALIZER;
  rdDataType_t wire = rdFloat32;
  if (rdAlgorithmFromName(algo.c_str(), &config.algorithm) != rdSuccess ||
      !wireDtype(algo, &wire)) {
    std::fprintf(stderr, "rd_perf: --algo %s: %s\n", algo.c_str(), rdGetLastError());
    return nullptr;
  }
  rdUniqueId id{};
  rdComm_t comm = nullptr;
  if ((rank == 0 && rdGetUniqueId(&id) != rdSuccess) ||
      rdBroadcast(&id, &id, sizeof id, rdUint8, 0, via) != rdSuccess ||
      rdCommInitRankConfig(&comm, nranks, id, rank, &config) != rdSuccess) {
    std::fprintf(stderr, "rd_perf: cannot create the %s communicator: %s\n", algo.c_str(),
                 rdGetLastError());
    return nullptr;
  }
  return std::make_unique<LibreduceBackend>(comm, label, wire);
}

// --algo A,B,...: a communicator per algorithm, and one more (rs: it never measures, so lining
// up costs the same throughout) that lines the ranks up between timed runs.
int compareAlgorithms(const std::vector<std::string>& algos, const rd::perf::Options& o, int rounds,
                      FootprintRecorder* footprint) {
  const char* reducers = std::getenv("LIBREDUCE_REDUCERS");
  if (reducers == nullptr || *reducers == '\0') {
    std::fprintf(stderr, "rd_perf: --algo with several algorithms needs reducers\n");
    return 2;
  }
  if (o.coll != Coll::kAllReduce) {
    std::fprintf(stderr, "rd_perf: --algo with several algorithms compares all-reduce only\n");
    return 2;
  }
  // rdAlgoDefault in a config means "as LIBREDUCE_ALGO says": auto, here, so that an "auto"
  // communicator measures. The first one only hands out the others' ids.
  setenv("LIBREDUCE_ALGO", "auto", 1);
  rdComm_t first = nullptr;
  if (!footprint->timeJoin([&] { return rdCommInitFromEnv(&first) == rdSuccess; })) {
    std::fprintf(stderr, "rd_perf: cannot create the communicator: %s\n", rdGetLastError());
    return 2;
  }
  LibreduceBackend bootstrap(first, "auto", rdFloat32);
  const int rank = bootstrap.rank(), nranks = bootstrap.nranks();
  std::unique_ptr<LibreduceBackend> lineup;
  if (!footprint->timeJoin([&] {
        lineup = joinNew(first, rank, nranks, "rs", "rs");
        return lineup != nullptr;
      })) {
    return 2;
  }
  std::vector<std::unique_ptr<LibreduceBackend>> owned;
  std::vector<rd::perf::Backend*> systems;
  for (const std::string& algo : algos) {
    // The same algorithm twice (rs,rs: what two communicators differ by) gets a second name.
    const auto same =
        std::count(algos.begin(), algos.begin() + static_cast<long>(owned.size()), algo);
    const std::string label = same == 0 ? algo : algo + " (" + std::to_string(same + 1) + ")";
    if (!footprint->timeJoin([&] {
          owned.push_back(joinNew(first, rank, nranks, algo, label));
          return owned.back() != nullptr;
        })) {
      return 2;
    }
    systems.push_back(owned.back().get());
  }
  const int rc = rd::perf::runCompare(*lineup, systems, o, rounds);
  return footprint->record(rank, nranks) ? rc : 2;
}

}  // namespace

int main(int argc, char** argv) {
  rd::perf::Options o;
  if (int rc = rd::perf::parseCommandLine(argc, argv, "rd_perf",
                                          {"--algo", "--reducers", "--chunk", "--window",
                                           "--wire-dtype", "--rounds", "--footprint"},
                                          kExtraHelp, true, &o);
      rc >= 0) {
    return rc;
  }
  static const char* const kEnv[][2] = {{"--algo", "LIBREDUCE_ALGO"},
                                        {"--reducers", "LIBREDUCE_REDUCERS"},
                                        {"--chunk", "LIBREDUCE_CHUNK_BYTES"},
                                        {"--window", "LIBREDUCE_WINDOW"},
                                        {"--wire-dtype", "LIBREDUCE_WIRE_DTYPE"}};
  for (size_t i = 0; i + 1 < o.extra.size(); i += 2) {
    for (const auto& pair : kEnv) {
      if (o.extra[i] == pair[0]) setenv(pair[1], o.extra[i + 1].c_str(), 1);
    }
  }
  // mpirun / srun give their own rank variables: hand them to libreduce as RANK / WORLD_SIZE.
  int rank = 0, nranks = 0;
  if (std::getenv("RANK") == nullptr && rd::perf::rankFromEnvironment(&rank, &nranks)) {
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(nranks).c_str(), 1);
  }
  std::string algo_flag, footprint_path;
  int rounds = 5;
  for (size_t i = 0; i + 1 < o.extra.size(); i += 2) {
    if (o.extra[i] == "--algo") algo_flag = o.extra[i + 1];
    if (o.extra[i] == "--rounds") rounds = std::atoi(o.extra[i + 1].c_str());
    if (o.extra[i] == "--footprint") footprint_path = o.extra[i + 1];
  }
  FootprintRecorder footprint(footprint_path);
  if (rounds < 1) {
    std::fprintf(stderr, "rd_perf: --rounds must be 1 or more\n");
    return 2;
  }
  if (auto algos = splitList(algo_flag); algos.size() > 1) {
    return compareAlgorithms(algos, o, rounds, &footprint);
  }
  rdComm_t comm = nullptr;
  if (!footprint.timeJoin([&] { return rdCommInitFromEnv(&comm) == rdSuccess; })) {
    std::fprintf(stderr, "rd_perf: cannot create the communicator: %s\n", rdGetLastError());
    return 2;
  }
  const char* reducers = std::getenv("LIBREDUCE_REDUCERS");
  const char* algo = std::getenv("LIBREDUCE_ALGO");
  // What the communicator resolved: auto without reducers is the ring.
  std::string asked = algo != nullptr && *algo != '\0' ? algo : "auto";
  std::string effective = (reducers == nullptr || *reducers == '\0') ? "ring" : asked;
  // Compression happens only through the reducers (the ring sends float32 as it is).
  rdDataType_t wire = rdFloat32;
  if (!wireDtype(effective, &wire)) return 2;
  LibreduceBackend backend(comm, effective, wire);
  const int rc = rd::perf::runPerf(backend, o);
  return footprint.record(backend.rank(), backend.nranks()) ? rc : 2;
}
