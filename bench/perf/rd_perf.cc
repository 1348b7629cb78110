// rd_perf: libreduce's collectives measured like nccl-tests' all_reduce_perf (same flags, same
// table), through the reducers (--algo rs) or the ring between the workers (--algo ring).
// One process per rank; ranks and the rendezvous come from the launcher's environment.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "libreduce/comm.h"
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
    "  --reducers H:P,...      the reducers (LIBREDUCE_REDUCERS); none = ring\n"
    "  --chunk BYTES, --window N   chunk size and chunks in flight per reducer\n"
    "  --wire-dtype none|bf16|fp16 float32 through the reducers travels as that type, summed\n"
    "                          in float32 (LIBREDUCE_WIRE_DTYPE)\n"
    "The communicator id comes from LIBREDUCE_COMM_ID or MASTER_ADDR:MASTER_PORT; without\n"
    "reducers rank 0 serves the ring's rendezvous on MASTER_PORT + 1.\n";

}  // namespace

int main(int argc, char** argv) {
  rd::perf::Options o;
  if (int rc = rd::perf::parseCommandLine(
          argc, argv, "rd_perf", {"--algo", "--reducers", "--chunk", "--window", "--wire-dtype"},
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
  rdComm_t comm = nullptr;
  if (rdCommInitFromEnv(&comm) != rdSuccess) {
    std::fprintf(stderr, "rd_perf: cannot create the communicator: %s\n", rdGetLastError());
    return 2;
  }
  const char* reducers = std::getenv("LIBREDUCE_REDUCERS");
  const char* algo = std::getenv("LIBREDUCE_ALGO");
  // What the communicator resolved: auto without reducers is the ring.
  std::string asked = algo != nullptr && *algo != '\0' ? algo : "auto";
  std::string effective = (reducers == nullptr || *reducers == '\0') ? "ring" : asked;
  // Compression happens only through the reducers (the ring sends float32 as it is).
  const char* wire_name = std::getenv("LIBREDUCE_WIRE_DTYPE");
  rdDataType_t wire = rdFloat32;
  if (effective != "ring" && wire_name != nullptr && *wire_name != '\0' &&
      rdWireDtypeFromName(wire_name, &wire) != rdSuccess) {
    std::fprintf(stderr, "rd_perf: %s\n", rdGetLastError());
    return 2;
  }
  LibreduceBackend backend(comm, effective, wire);
  return rd::perf::runPerf(backend, o);
}
