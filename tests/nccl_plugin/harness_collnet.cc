// SPDX-License-Identifier: BSD-3-Clause
// CollNet checks: reduceSupport says exactly what the kernels reduce; all-reduces of every dtype
// and operator with inputs whose results are exact in every type, several in flight; windowed
// all-gather and reduce-scatter as NCCL's CollNet Direct slices them.
#include <cmath>
#include <cstring>

#include "harness.h"
#include "perf/exact_values.h"

namespace rd::test {

namespace {

constexpr int kNumTypes = 10;  // int8 .. bfloat16, numbered as NCCL numbers them
constexpr int kNumOps = 5;     // sum, prod, max, min, avg
constexpr int kFloat32 = 7;
constexpr int kUint8 = 1;
const size_t kTypeSize[kNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};

// The exact data of the perf programs and tests (NCCL numbers dtypes and operators as libreduce
// does): the inputs of operation number seq of this process are salted by it, so a result left
// from an earlier operation, or a chunk's result at another offset, is wrong.
uint64_t g_operations = 0;

uint64_t nextSalt() {
  return perf::opSalt(0, g_operations++);
}

double input(int rank, int dtype, int op, size_t i, uint64_t salt) {
  return perf::exactValue(rank, i, static_cast<rdDataType_t>(dtype), op == 1 ? rdProd : rdSum,
                          salt);
}

void store(int dtype, void* buf, size_t i, double v) {
  perf::store(buf, i, v, static_cast<rdDataType_t>(dtype));
}

double load(int dtype, const void* buf, size_t i) {
  return perf::load(buf, i, static_cast<rdDataType_t>(dtype));
}

double expected(int op, int dtype, int nranks, size_t i, uint64_t salt) {
  double sum = 0, prod = 1, mx = -1e300, mn = 1e300;
  for (int r = 0; r < nranks; ++r) {
    double v = input(r, dtype, op, i, salt);
    sum += v;
    prod *= v;
    mx = std::max(mx, v);
    mn = std::min(mn, v);
  }
  switch (op) {
    case 0: return sum;
    case 1: return prod;
    case 2: return mx;
    case 3: return mn;
    default:
      return dtype == 6 || dtype == 7 || dtype == 8 || dtype == 9 ? sum / nranks
                                                                  : std::trunc(sum / nranks);
  }
}

struct Op {
  int dtype = 0;
  int op = 0;
  size_t count = 0;
  uint64_t salt = 0;
  std::vector<char> send, recv;
  void* send_mh = nullptr;
  void* recv_mh = nullptr;
  void* req = nullptr;
};

bool checkAllReduce(const Op& o, int nranks) {
  double tolerance = o.op == 4 ? 1e-2 : 0;  // avg of floats: sum * (1/n) in the type
  for (size_t i = 0; i < o.count; ++i) {
    double want = expected(o.op, o.dtype, nranks, i, o.salt);
    double got = load(o.dtype, o.recv.data(), i);
    if (std::fabs(got - want) > tolerance * std::fabs(want)) {
      std::fprintf(stderr, "all-reduce dtype %d op %d: element %zu is %g, expected %g\n", o.dtype,
                   o.op, i, got, want);
      return false;
    }
  }
  return true;
}

// Posts @p ops (all in flight together), then tests each to its end and checks it.
bool runAllReduces(const CollNetApi& coll, const CollSetup& setup, int nranks,
                   std::vector<Op>& ops) {
  for (Op& o : ops) {
    if (coll.regMr(setup.comm, o.send.data(), o.send.size(), &o.send_mh) != ncclSuccess ||
        coll.regMr(setup.comm, o.recv.data(), o.recv.size(), &o.recv_mh) != ncclSuccess ||
        coll.iallreduce(setup.comm, o.send.data(), o.recv.data(), o.count, o.dtype, o.op, o.send_mh,
                        o.recv_mh, &o.req) != ncclSuccess ||
        o.req == nullptr) {
      std::fprintf(stderr, "iallreduce dtype %d op %d not posted\n", o.dtype, o.op);
      return false;
    }
  }
  for (Op& o : ops) {
    int size = -1;
    if (!testUntilDone([&](int* done) { return coll.test(o.req, done, &size); }, "iallreduce") ||
        !checkAllReduce(o, nranks) || coll.deregMr(setup.comm, o.send_mh) != ncclSuccess ||
        coll.deregMr(setup.comm, o.recv_mh) != ncclSuccess) {
      return false;
    }
  }
  return true;
}

Op makeOp(int dtype, int op, size_t count, int rank) {
  Op o;
  o.dtype = dtype;
  o.op = op;
  o.count = count;
  o.salt = nextSalt();
  o.send.resize(count * kTypeSize[dtype]);
  o.recv.assign(count * kTypeSize[dtype], 0);
  for (size_t i = 0; i < count; ++i)
    store(dtype, o.send.data(), i, input(rank, dtype, op, i, o.salt));
  return o;
}

unsigned char gatherByte(int rank, size_t j, uint64_t salt) {
  return static_cast<unsigned char>(input(rank, kUint8, 0, j, salt));
}

// Window [offset, offset + bytes) of the all-gather of @p per_rank bytes each, into two parts.
bool allGatherWindow(const CollNetApi& coll, const FileExchange& ex, const CollSetup& setup,
                     size_t per_rank, size_t offset, size_t bytes) {
  const uint64_t salt = nextSalt();
  std::vector<unsigned char> mine(per_rank);
  for (size_t j = 0; j < per_rank; ++j) mine[j] = gatherByte(ex.rank(), j, salt);
  size_t begin = static_cast<size_t>(ex.rank()) * per_rank;
  size_t lo = std::max(begin, offset);  // this rank's bytes in the window start here
  std::vector<unsigned char> out(bytes, 0);
  size_t first = bytes / 3;
  Sge parts[2] = {{out.data(), first}, {out.data() + first, bytes - first}};
  void* req = nullptr;
  const void* send = mine.data() + (lo > begin ? lo - begin : 0);
  if (coll.iallgather(setup.comm, const_cast<void*>(send), 2, parts, per_rank, offset, bytes,
                      &req) != ncclSuccess ||
      req == nullptr ||
      !testUntilDone([&](int* done) { return coll.test(req, done, nullptr); }, "iallgather")) {
    return false;
  }
  for (size_t k = 0; k < bytes; ++k) {
    size_t global = offset + k;
    unsigned char want = gatherByte(static_cast<int>(global / per_rank), global % per_rank, salt);
    if (out[k] != want) {
      std::fprintf(stderr, "all-gather window at %zu: byte %zu wrong\n", offset, k);
      return false;
    }
  }
  return true;
}

// Window of a float32 sum reduce-scatter; this rank's reduced bytes land at the start of recv.
bool reduceScatterWindow(const CollNetApi& coll, const FileExchange& ex, const CollSetup& setup,
                         size_t per_rank, size_t offset, size_t bytes) {
  const uint64_t salt = nextSalt();
  size_t total = per_rank * static_cast<size_t>(ex.nranks()) / 4;
  std::vector<float> in(total);
  for (size_t j = 0; j < total; ++j) {
    in[j] = static_cast<float>(input(ex.rank(), kFloat32, 0, j, salt));
  }
  std::vector<float> out(per_rank / 4, -1.0f);
  char* window = reinterpret_cast<char*>(in.data()) + offset;
  Sge parts[2] = {{window, 12}, {window + 12, bytes - 12}};
  void* req = nullptr;
  if (coll.ireducescatter(setup.comm, 2, parts, out.data(), per_rank, offset, bytes, kFloat32, 0,
                          &req) != ncclSuccess ||
      req == nullptr ||
      !testUntilDone([&](int* done) { return coll.test(req, done, nullptr); }, "ireducescatter")) {
    return false;
  }
  size_t begin = static_cast<size_t>(ex.rank()) * per_rank;
  size_t lo = std::max(begin, offset);
  size_t hi = std::min(begin + per_rank, offset + bytes);
  int n = ex.nranks();
  for (size_t b = lo; b < hi; b += 4) {
    size_t j = b / 4;
    auto want = static_cast<float>(expected(0, kFloat32, n, j, salt));
    float got = out[(b - lo) / 4];
    if (got != want) {
      std::fprintf(stderr, "reduce-scatter element %zu is %g, expected %g\n", j, got, want);
      return false;
    }
  }
  return true;
}

}  // namespace

bool collNetQueries(const CollNetApi& coll) {
  int ndev = 0, ptr = 0;
  if (coll.devices(&ndev) != ncclSuccess || ndev != 1 || coll.properties(0, &ptr) != ncclSuccess ||
      (ptr & kNcclPtrHost) == 0) {
    std::fprintf(stderr, "CollNet devices/properties wrong: ndev %d ptr %d\n", ndev, ptr);
    return false;
  }
  for (int dtype = 0; dtype <= kNumTypes + 1; ++dtype) {  // 10, 11: fp8 types NCCL may pass
    for (int op = 0; op <= kNumOps; ++op) {               // 5: a pre-multiplied sum
      int supported = -1;
      if (coll.reduceSupport(dtype, op, &supported) != ncclSuccess) return false;
      int want = dtype < kNumTypes && op < kNumOps ? 1 : 0;
      if (supported != want) {
        std::fprintf(stderr, "reduceSupport(%d, %d) = %d, expected %d\n", dtype, op, supported,
                     want);
        return false;
      }
    }
  }
  return true;
}

bool collNetConnect(const CollNetApi& coll, const FileExchange& ex, CollSetup* setup,
                    ncclResult_t* result) {
  char handle[kNcclNetHandleMaxSize] = {};
  *result = coll.listen(handle, &setup->listen);
  if (*result != ncclSuccess) return false;
  std::vector<std::string> all;
  if (!ex.allGather("coll", std::string(handle, sizeof handle), &all)) return false;
  std::vector<void*> handles;
  handles.reserve(all.size());
  for (std::string& h : all) handles.push_back(h.data());
  *result = coll.connect(handles.data(), ex.nranks(), ex.rank(), setup->listen, &setup->comm);
  return *result == ncclSuccess && setup->comm != nullptr;
}

bool collNetCollectives(const CollNetApi& coll, const FileExchange& ex, const CollSetup& setup) {
  int rank = ex.rank(), n = ex.nranks();
  std::vector<Op> batch;
  for (int dtype = 0; dtype < kNumTypes; ++dtype) {
    for (int op = 0; op < kNumOps; ++op) batch.push_back(makeOp(dtype, op, 1000, rank));
    if (!runAllReduces(coll, setup, n, batch)) return false;  // one dtype's ops in flight at once
    batch.clear();
  }
  batch.push_back(makeOp(kFloat32, 0, (3u << 20) / 4 + 7, rank));  // several chunks per reducer
  batch.push_back(makeOp(kUint8, 0, 0, rank));                     // empty
  batch.push_back(makeOp(kFloat32, 2, 1, rank));
  if (!runAllReduces(coll, setup, n, batch)) return false;
  std::printf("all-reduce ok: %d dtypes x %d ops, large and empty\n", kNumTypes, kNumOps);
  size_t per_rank = 1000, total = per_rank * static_cast<size_t>(n);
  if (!allGatherWindow(coll, ex, setup, per_rank, 0, total) ||
      !allGatherWindow(coll, ex, setup, per_rank, 500, total - 700)) {
    return false;
  }
  size_t rs_per_rank = 400, rs_total = rs_per_rank * static_cast<size_t>(n);
  if (!reduceScatterWindow(coll, ex, setup, rs_per_rank, 0, rs_total) ||
      !reduceScatterWindow(coll, ex, setup, rs_per_rank, 200, rs_total - 200)) {
    return false;
  }
  std::printf("all-gather and reduce-scatter windows ok\n");
  return true;
}

bool collNetAllReduceLoop(const CollNetApi& coll, const FileExchange& ex, const CollSetup& setup,
                          int iterations, size_t count, int announce_after) {
  for (int i = 1; i <= iterations; ++i) {
    std::vector<Op> ops;
    ops.push_back(makeOp(kFloat32, 0, count, ex.rank()));
    if (!runAllReduces(coll, setup, ex.nranks(), ops)) return false;
    if (i == announce_after) {
      std::printf("rank %d: %d collectives done\n", ex.rank(), i);
      std::fflush(stdout);
    }
  }
  std::printf("rank %d: %d all-reduces ok\n", ex.rank(), iterations);
  return true;
}

}  // namespace rd::test
