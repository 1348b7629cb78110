// SPDX-License-Identifier: BSD-3-Clause
// mpi_perf: the MPI library's collectives (MPI_Allreduce, MPI_Reduce_scatter_block,
// MPI_Allgather, MPI_Bcast) measured with rd_perf's flags, sweep, verification and table, so
// libreduce's figures have a baseline taken the same way. Launch with mpirun; the library
// picks its own algorithms and transports (tune them with its MCA parameters, not here).
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <string>

#include "perf/perf_runner.h"

namespace {

using rd::perf::Coll;

// MPI's type for reductions; MPI_DATATYPE_NULL where MPI has none (float16, bfloat16).
MPI_Datatype reduceType(rdDataType_t d) {
  switch (d) {
    case rdInt8: return MPI_INT8_T;
    case rdUint8: return MPI_UINT8_T;
    case rdInt32: return MPI_INT32_T;
    case rdUint32: return MPI_UINT32_T;
    case rdInt64: return MPI_INT64_T;
    case rdUint64: return MPI_UINT64_T;
    case rdFloat32: return MPI_FLOAT;
    case rdFloat64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
  }
}

// Broadcast and all-gather only move bytes: any type of the same size does.
MPI_Datatype copyType(rdDataType_t d) {
  switch (rdDataTypeSize(d)) {
    case 1: return MPI_UINT8_T;
    case 2: return MPI_UINT16_T;
    case 4: return MPI_UINT32_T;
    case 8: return MPI_UINT64_T;
    default: return MPI_DATATYPE_NULL;
  }
}

// MPI has no avg; a user would divide after a sum, which is not the same operation.
MPI_Op reduceOp(rdRedOp_t op) {
  switch (op) {
    case rdSum: return MPI_SUM;
    case rdProd: return MPI_PROD;
    case rdMin: return MPI_MIN;
    case rdMax: return MPI_MAX;
    default: return MPI_OP_NULL;
  }
}

// "Open MPI v4.1.4, package: ..." -> "mpi (Open MPI v4.1.4)".
std::string libraryName() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<size_t>(len));
  s = s.substr(0, s.find_first_of(",\n"));
  return s.empty() ? "mpi" : "mpi (" + s + ")";
}

class MpiBackend final : public rd::perf::Backend {
 public:
  MpiBackend() : name_(libraryName()) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks_);
  }

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  std::string name() const override { return name_; }

  bool supports(Coll coll, rdDataType_t d, rdRedOp_t op) const override {
    const bool copy_only = coll == Coll::kBroadcast || coll == Coll::kAllGather;
    if (copy_only) return copyType(d) != MPI_DATATYPE_NULL;
    return reduceType(d) != MPI_DATATYPE_NULL && reduceOp(op) != MPI_OP_NULL;
  }

  bool run(Coll coll, const void* send, void* recv, size_t count, rdDataType_t d, rdRedOp_t op,
           int root, std::string* error) override {
    if (count > static_cast<size_t>(INT_MAX)) {
      *error = "MPI counts are int: at most " + std::to_string(INT_MAX) + " elements per call";
      return false;
    }
    const int n = static_cast<int>(count);
    int rc = MPI_SUCCESS;
    switch (coll) {
      case Coll::kAllReduce:
        rc = MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, n, reduceType(d), reduceOp(op),
                           MPI_COMM_WORLD);
        break;
      case Coll::kReduceScatter: rc = reduceScatter(send, recv, count, d, op); break;
      case Coll::kAllGather: {
        // In place, this rank's share already sits at its place in recv (MPI's and nccl's
        // convention alike).
        const auto* share =
            static_cast<const char*>(recv) + static_cast<size_t>(rank_) * count * rdDataTypeSize(d);
        rc = send == share
                 ? MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, copyType(d),
                                 MPI_COMM_WORLD)
                 : MPI_Allgather(send, n, copyType(d), recv, n, copyType(d), MPI_COMM_WORLD);
        break;
      }
      case Coll::kBroadcast:
        // MPI_Bcast works in one buffer: out of place, the root copies its input first.
        if (rank_ == root && send != recv) std::memcpy(recv, send, count * rdDataTypeSize(d));
        rc = MPI_Bcast(recv, n, copyType(d), root, MPI_COMM_WORLD);
        break;
    }
    if (rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING] = {0};
      int len = 0;
      MPI_Error_string(rc, text, &len);
      *error = text;
    }
    return rc == MPI_SUCCESS;
  }

  double combine(double value, int how) override {
    static const MPI_Op kOps[] = {MPI_SUM, MPI_MIN, MPI_MAX};
    double out = value;
    if (MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, kOps[how], MPI_COMM_WORLD) != MPI_SUCCESS) {
      std::fprintf(stderr, "# rank %d: combining times failed\n", rank_);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return out;
  }

 private:
  // nccl's in-place reduce-scatter has recv = send + rank * share, which MPI forbids (the
  // buffers overlap). MPI's own in-place form reduces the whole buffer and leaves this rank's
  // share at its start, so the share is then moved to where nccl's convention wants it.
  int reduceScatter(const void* send, void* recv, size_t share, rdDataType_t d, rdRedOp_t op) {
    const size_t esize = rdDataTypeSize(d);
    const auto* in = static_cast<const char*>(send);
    auto* out = static_cast<char*>(recv);
    const int n = static_cast<int>(share);
    if (out < in || out >= in + share * static_cast<size_t>(nranks_) * esize) {
      return MPI_Reduce_scatter_block(send, recv, n, reduceType(d), reduceOp(op), MPI_COMM_WORLD);
    }
    char* whole = const_cast<char*>(in);
    int rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, whole, n, reduceType(d), reduceOp(op),
                                      MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS && out != whole) std::memmove(out, whole, share * esize);
    return rc;
  }

  std::string name_;
  int rank_ = 0;
  int nranks_ = 1;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  // Errors come back as codes, so a failed call is reported in the table's terms.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rc = 0;
  {
    MpiBackend backend;
    rd::perf::Options o;
    rc = rd::perf::parseCommandLine(argc, argv, "mpi_perf", {},
                                    "Launch with mpirun; ranks are MPI_COMM_WORLD's.\n",
                                    backend.rank() == 0, &o);
    if (rc < 0) rc = rd::perf::runPerf(backend, o);
  }
  MPI_Finalize();
  return rc;
}
