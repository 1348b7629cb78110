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
  void* send_mh = nullptr;
  void* out_mh = nullptr;
  if (coll.regMr(setup.comm, mine.data(), mine.size(), &send_mh) != ncclSuccess ||
      coll.regMr(setup.comm, out.data(), out.size(), &out_mh) != ncclSuccess) {
    return false;
  }
  Sge parts[2] = {{out.data(), first, out_mh}, {out.data() + first, bytes - first, out_mh}};
  void* req = nullptr;
  const void* send = mine.data() + (lo > begin ? lo - begin : 0);
  if (coll.iallgather(setup.comm, const_cast<void*>(send), 2, parts, per_rank, offset, bytes,
                      send_mh, &req) != ncclSuccess ||
      req == nullptr ||
      !testUntilDone([&](int* done) { return coll.test(req, done, nullptr); }, "iallgather") ||
      coll.deregMr(setup.comm, send_mh) != ncclSuccess ||
      coll.deregMr(setup.comm, out_mh) != ncclSuccess) {
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

// Window of a reduce-scatter of @p dtype and @p op; this rank's reduced bytes land at the start
// of recv. Byte counts are multiples of the element size.
bool reduceScatterWindow(const CollNetApi& coll, const FileExchange& ex, const CollSetup& setup,
                         int dtype, int op, size_t per_rank, size_t offset, size_t bytes) {
  const uint64_t salt = nextSalt();
  const size_t elem = kTypeSize[dtype];
  const int n = ex.nranks();
  std::vector<char> in(per_rank * static_cast<size_t>(n));
  for (size_t j = 0; j < in.size() / elem; ++j)
    store(dtype, in.data(), j, input(ex.rank(), dtype, op, j, salt));
  std::vector<char> out(per_rank, 0);
  void* in_mh = nullptr;
  void* out_mh = nullptr;
  if (coll.regMr(setup.comm, in.data(), in.size(), &in_mh) != ncclSuccess ||
      coll.regMr(setup.comm, out.data(), out.size(), &out_mh) != ncclSuccess) {
    return false;
  }
  char* window = in.data() + offset;
  Sge parts[2] = {{window, 12, in_mh}, {window + 12, bytes - 12, in_mh}};
  void* req = nullptr;
  if (coll.ireducescatter(setup.comm, 2, parts, out.data(), per_rank, offset, bytes, dtype, op,
                          out_mh, &req) != ncclSuccess ||
      req == nullptr ||
      !testUntilDone([&](int* done) { return coll.test(req, done, nullptr); }, "ireducescatter") ||
      coll.deregMr(setup.comm, in_mh) != ncclSuccess ||
      coll.deregMr(setup.comm, out_mh) != ncclSuccess) {
    return false;
  }
  size_t begin = static_cast<size_t>(ex.rank()) * per_rank;
  size_t lo = std::max(begin, offset);
  size_t hi = std::min(begin + per_rank, offset + bytes);
  double tolerance = op == 4 ? 1e-2 : 0;  // avg of floats, as for the all-reduce
  for (size_t b = lo; b < hi; b += elem) {
    size_t j = b / elem;
    double want = expected(op, dtype, n, j, salt);
    double got = load(dtype, out.data(), (b - lo) / elem);
    if (std::fabs(got - want) > tolerance * std::fabs(want)) {
      std::fprintf(stderr, "reduce-scatter dtype %d op %d element %zu is %g, expected %g\n", dtype,
                   op, j, got, want);
      return false;
    }
  }
  return true;
}

// Host memory needs no flush: iflush completes at once. DMA-BUF is never offered, so refused.
bool flushAndRefuseDmaBuf(const CollNetApi& coll, const CollSetup& setup) {
  std::vector<char> buf(4096);
  void* mh = nullptr;
  void* request = reinterpret_cast<void*>(1);
  if (coll.regMr(setup.comm, buf.data(), buf.size(), &mh) != ncclSuccess ||
      coll.iflush(setup.comm, buf.data(), static_cast<int>(buf.size()), mh, &request) !=
          ncclSuccess ||
      (request != nullptr &&
       !testUntilDone([&](int* done) { return coll.test(request, done, nullptr); }, "iflush")) ||
      coll.deregMr(setup.comm, mh) != ncclSuccess) {
    std::fprintf(stderr, "CollNet iflush did not complete\n");
    return false;
  }
  void* dmabuf_mh = nullptr;
  if (coll.regMrDmaBuf(setup.comm, buf.data(), buf.size(), &dmabuf_mh) == ncclSuccess ||
      dmabuf_mh != nullptr) {
    std::fprintf(stderr, "CollNet regMrDmaBuf accepted a DMA-BUF it never offered\n");
    return false;
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
  for (int dtype = 0; dtype < kNumTypes; ++dtype) {
    for (int op = 0; op < kNumOps; ++op) {
      if (!reduceScatterWindow(coll, ex, setup, dtype, op, rs_per_rank, 0, rs_total)) return false;
    }
  }
  if (!reduceScatterWindow(coll, ex, setup, kFloat32, 0, rs_per_rank, 200, rs_total - 200)) {
    return false;
  }
  std::printf("all-gather windows and reduce-scatter windows of %d dtypes x %d ops ok\n", kNumTypes,
              kNumOps);
  if (!flushAndRefuseDmaBuf(coll, setup)) return false;
  std::printf("CollNet iflush and DMA-BUF refusal ok\n");
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

bool collNetTwoContexts(const CollNetApi& coll, const FileExchange& ex) {
  if (!coll.openContext) {
    std::fprintf(stderr, "contexts: this version has none (v11 and later)\n");
    return false;
  }
  void* ctx[2] = {};
  CollSetup setup[2];
  for (int c = 0; c < 2; ++c) {
    char handle[kNcclNetHandleMaxSize] = {};
    std::vector<std::string> all;
    std::vector<void*> handles;
    if (coll.openContext(0xc0 + c, &ctx[c]) != ncclSuccess ||
        coll.listenIn(ctx[c], handle, &setup[c].listen) != ncclSuccess ||
        !ex.allGather("ctx" + std::to_string(c), std::string(handle, sizeof handle), &all)) {
      return false;
    }
    handles.reserve(all.size());
    for (std::string& h : all) handles.push_back(h.data());
    if (coll.connect(handles.data(), ex.nranks(), ex.rank(), setup[c].listen, &setup[c].comm) !=
        ncclSuccess) {
      return false;
    }
  }
  std::vector<Op> ops[2];  // both communicators' all-reduces in flight at once
  for (int c = 0; c < 2; ++c) ops[c].push_back(makeOp(kFloat32, 0, 50000 + c, ex.rank()));
  for (int c = 0; c < 2; ++c) {
    Op& o = ops[c][0];
    if (coll.iallreduce(setup[c].comm, o.send.data(), o.recv.data(), o.count, o.dtype, o.op,
                        nullptr, nullptr, &o.req) != ncclSuccess) {
      return false;
    }
  }
  for (int c = 0; c < 2; ++c) {
    Op& o = ops[c][0];
    if (!testUntilDone([&](int* done) { return coll.test(o.req, done, nullptr); }, "iallreduce") ||
        !checkAllReduce(o, ex.nranks())) {
      return false;
    }
  }
  if (coll.finalizeContext(ctx[0]) != ncclInvalidUsage) {
    std::fprintf(stderr, "finalize of a context with its comm open was not refused\n");
    return false;
  }
  if (coll.closeColl(setup[0].comm) != ncclSuccess ||
      coll.closeListen(setup[0].listen) != ncclSuccess ||
      coll.finalizeContext(ctx[0]) != ncclSuccess || coll.finalizeContext(ctx[0]) == ncclSuccess) {
    std::fprintf(stderr, "closing the first communicator's context went wrong\n");
    return false;
  }
  char handle[kNcclNetHandleMaxSize] = {};
  void* stale = nullptr;
  if (coll.listenIn(ctx[0], handle, &stale) == ncclSuccess) {
    std::fprintf(stderr, "listen in a finalized context was accepted\n");
    return false;
  }
  if (!collNetAllReduceLoop(coll, ex, setup[1], 5, 4096, 0)) return false;
  std::printf("two contexts ok: both communicators verified, the second after the first ended\n");
  return coll.closeColl(setup[1].comm) == ncclSuccess &&
         coll.closeListen(setup[1].listen) == ncclSuccess &&
         coll.finalizeContext(ctx[1]) == ncclSuccess;
}

bool collNetWireCompressed(const CollNetApi& coll, const FileExchange& ex, const CollSetup& setup) {
  constexpr size_t kCount = 100000;
  constexpr float kLowBits = 1.0f + 0x1p-20f;  // not a bf16 value: rounds to 1 on the wire
  const auto n = static_cast<float>(ex.nranks());
  std::vector<float> in(kCount), out(kCount, -1.0f);
  for (size_t i = 0; i < kCount; ++i) {
    in[i] = i % 2 == 0 ? static_cast<float>((ex.rank() + 1) * static_cast<int>(i % 13)) : kLowBits;
  }
  void* req = nullptr;
  if (coll.iallreduce(setup.comm, in.data(), out.data(), kCount, kFloat32, 0, nullptr, nullptr,
                      &req) != ncclSuccess ||
      !testUntilDone([&](int* done) { return coll.test(req, done, nullptr); }, "iallreduce")) {
    return false;
  }
  const float ranks_sum = n * (n + 1) / 2;  // sum of (rank + 1)
  for (size_t i = 0; i < kCount; ++i) {
    float want = i % 2 == 0 ? ranks_sum * static_cast<float>(i % 13) : n;
    if (out[i] != want) {
      std::fprintf(stderr, "wire bf16: element %zu is %.9g, expected %.9g%s\n", i, out[i], want,
                   out[i] == n * kLowBits ? " (float32 travelled: not compressed)" : "");
      return false;
    }
  }
  std::printf("wire compression through CollNet ok: bf16-exact sums exact, low bits dropped\n");
  return true;
}

}  // namespace rd::test
