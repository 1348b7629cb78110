// SPDX-License-Identifier: BSD-3-Clause
#include "nccl_plugin/coll_net.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/unique_id.h"
#include "common/auth.h"
#include "common/settings.h"
#include "common/status.h"
#include "libreduce/reduce.h"
#include "nccl_plugin/net_engine.h"
#include "nccl_plugin/plugin_log.h"
#include "reduction_server/rendezvous_service.h"

namespace rd::nccl::collnet {

namespace {

constexpr uint32_t kCollHandleMagic = 0x6c724332;  // "lrC2"
constexpr size_t kHostBytes = 64;

struct CollHandle {
  uint32_t magic;
  uint32_t has_reducers;     // LIBREDUCE_REDUCERS is set on this rank's node
  uint64_t nonce;            // rank 0's becomes the communicator id
  uint64_t reducers_digest;  // of the parsed reducer list: every rank must name the same
  char host[kHostBytes];     // for messages: which node lacks what
};
static_assert(sizeof(CollHandle) <= kNcclNetHandleMaxSize, "NCCL's handle is 128 bytes");

// One per NCCL communicator (v11+); before v11 every listen and comm belongs to none.
struct Context {
  uint64_t comm_id = 0;
  std::atomic<int> open{0};  // listens and comms made in it and not closed yet
};

std::mutex g_contexts_mu;
std::set<Context*> g_contexts;

bool isLive(Context* ctx) {
  std::lock_guard<std::mutex> lock(g_contexts_mu);
  return g_contexts.count(ctx) != 0;
}

struct CollListen {
  uint64_t nonce = 0;
  Context* ctx = nullptr;
};

struct CollComm {
  rdComm_t comm = nullptr;
  int rank = 0;
  int nranks = 0;
  Context* ctx = nullptr;
  std::atomic<bool> reported{false};  // the first collective is logged: proof CollNet is used
};

struct MemRecord {  // libreduce registers what it sends from and receives into itself
  void* data;
  size_t size;
};

struct CollRequest {
  rdRequest_t request = nullptr;  // null: nothing to move, done at once
  size_t bytes = 0;
  std::string what;              // for error messages
  std::vector<char> window;      // staging of iallgather / ireducescatter
  std::function<void()> finish;  // copies the staged result out
};

bool validType(ncclDataType_t dtype) {
  return static_cast<int>(dtype) >= 0 && static_cast<int>(dtype) < rdNumDataTypes;
}
bool validOp(ncclRedOp_t op) {
  return static_cast<int>(op) >= 0 && static_cast<int>(op) < rdNumRedOps;
}

// Bytes [lo, hi) of rank @p rank's slice that lie in the window (lo == hi when none).
void sliceInWindow(int rank, size_t bytes_per_rank, size_t window_offset, size_t window_bytes,
                   size_t* lo, size_t* hi) {
  size_t begin = static_cast<size_t>(rank) * bytes_per_rank;
  *lo = std::max(begin, window_offset);
  *hi = std::min(begin + bytes_per_rank, window_offset + window_bytes);
  if (*hi < *lo) *hi = *lo;
}

size_t totalSize(int nparts, const Part* parts) {
  size_t total = 0;
  for (int i = 0; i < nparts; ++i) total += parts[i].size;
  return total;
}

ncclResult_t postAllReduce(CollComm* cc, const void* send, void* recv, size_t count,
                           ncclDataType_t dtype, ncclRedOp_t op, CollRequest* req) {
  req->bytes = count * rdDataTypeSize(static_cast<rdDataType_t>(dtype));
  if (count == 0) return ncclSuccess;
  rdResult_t st = rdAllReduceAsync(send, recv, count, static_cast<rdDataType_t>(dtype),
                                   static_cast<rdRedOp_t>(op), cc->comm, &req->request);
  if (st != rdSuccess) return RD_NCCL_FAIL(st, req->what);
  return ncclSuccess;
}

// Hands @p req to NCCL when posting worked, else frees it.
ncclResult_t handOut(ncclResult_t posted, CollRequest* req, void** request) {
  if (posted != ncclSuccess) {
    delete req;
    return posted;
  }
  *request = req;
  return ncclSuccess;
}

// The reducer list of this node, parsed and rejoined (so spacing does not matter), or "".
std::string localReducers() {
  std::vector<std::string> list;
  if (coll::parseReducerList(settings::rawValue(settings::Id::kReducers), &list) != rdSuccess) {
    return "";
  }
  std::string joined;
  for (const std::string& address : list) joined += (joined.empty() ? "" : ",") + address;
  return joined;
}

// NCCL's own switch, which a job sets alike on every node (NCCL reads it as an integer).
bool collNetRequested() {
  const char* value = std::getenv("NCCL_COLLNET_ENABLE");  // NCCL's variable, not a setting
  return value != nullptr && std::strtol(value, nullptr, 10) != 0;
}

std::string hostOf(const CollHandle& h) {
  return std::string(h.host, strnlen(h.host, sizeof h.host));
}

// Every rank runs this on the same handles, so every rank fails or none does.
ncclResult_t checkHandles(void* const* handles, int nranks, CollHandle* root) {
  for (int r = 0; r < nranks; ++r) {
    if (handles[r] == nullptr) return ncclInvalidArgument;
    CollHandle h{};
    std::memcpy(&h, handles[r], sizeof h);
    if (r == 0) *root = h;
    if (h.magic != kCollHandleMagic) {
      RD_NCCL_WARN("CollNet connect: rank %d's handle was not made by this plugin's CollNet", r);
      return ncclInvalidUsage;
    }
    if (h.has_reducers == 0) {
      RD_NCCL_WARN(
          "CollNet off for this communicator: rank %d (host %s) has no "
          "LIBREDUCE_REDUCERS; NCCL goes on without CollNet",
          r, hostOf(h).c_str());
      return ncclInvalidUsage;
    }
    if (h.reducers_digest != root->reducers_digest) {
      RD_NCCL_WARN(
          "CollNet off for this communicator: rank %d (host %s) names other reducers "
          "in LIBREDUCE_REDUCERS than rank 0 (host %s)",
          r, hostOf(h).c_str(), hostOf(*root).c_str());
      return ncclInvalidUsage;
    }
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t init(ncclDebugLogger_t logger) {
  setLogger(logger);
  return ncclSuccess;
}

ncclResult_t openContext(uint64_t comm_id, void** ctx) {
  if (ctx == nullptr) return ncclInvalidArgument;
  auto* context = new Context;
  context->comm_id = comm_id;
  std::lock_guard<std::mutex> lock(g_contexts_mu);
  g_contexts.insert(context);
  *ctx = context;
  return ncclSuccess;
}

ncclResult_t closeContext(void* ctx) {
  auto* context = static_cast<Context*>(ctx);
  std::lock_guard<std::mutex> lock(g_contexts_mu);
  if (g_contexts.count(context) == 0) {
    RD_NCCL_WARN("CollNet finalize: not a context this plugin made, or finalized already");
    return ncclInvalidUsage;
  }
  if (int open = context->open.load(); open != 0) {
    RD_NCCL_WARN("CollNet finalize of comm 0x%llx with %d listen or collective comms open",
                 static_cast<unsigned long long>(context->comm_id), open);
    return ncclInvalidUsage;
  }
  g_contexts.erase(context);
  delete context;
  return ncclSuccess;
}

ncclResult_t devices(int* ndev) {
  if (ndev == nullptr) return ncclInvalidArgument;
  bool have_reducers = !settings::rawValue(settings::Id::kReducers).empty();
  *ndev = have_reducers || collNetRequested() ? 1 : 0;
  if (*ndev == 0) {
    RD_NCCL_INFO(kNcclLogInit, "CollNet off: neither LIBREDUCE_REDUCERS nor NCCL_COLLNET_ENABLE");
  } else if (!have_reducers) {
    RD_NCCL_WARN(
        "NCCL_COLLNET_ENABLE is set but LIBREDUCE_REDUCERS is not: this node reports a "
        "CollNet device like the others, and its communicators run without CollNet");
  }
  return ncclSuccess;
}

ncclResult_t fillProperties(int dev, ncclNetProperties_v8_t* props) {
  // The same device as the Net half, under the same name: NCCL's topology keys NICs by name, so
  // the one NIC serves both point-to-point and CollNet, as with SHARP.
  return net::fillProperties(dev, props);
}

ncclResult_t listen(void* ctx, int dev, void* handle, void** listen_comm) {
  if (dev != 0 || handle == nullptr || listen_comm == nullptr) return ncclInvalidArgument;
  auto* context = static_cast<Context*>(ctx);
  if (context != nullptr && !isLive(context)) {
    RD_NCCL_WARN("CollNet listen: not a live context of this plugin");
    return ncclInvalidArgument;
  }
  auto* lc = new CollListen;
  lc->ctx = context;
  rdResult_t st = auth::randomBytes(&lc->nonce, sizeof lc->nonce);
  if (st != rdSuccess) {
    delete lc;
    return RD_NCCL_FAIL(st, "CollNet listen");
  }
  std::string reducers = localReducers();
  CollHandle h{};
  h.magic = kCollHandleMagic;
  h.has_reducers = reducers.empty() ? 0 : 1;
  h.nonce = lc->nonce;
  h.reducers_digest = reducers.empty() ? 0 : auth::commIdOfText(reducers);  // a digest
  if (gethostname(h.host, sizeof h.host - 1) != 0) std::strcpy(h.host, "?");
  std::memset(handle, 0, kNcclNetHandleMaxSize);
  std::memcpy(handle, &h, sizeof h);
  if (context != nullptr) ++context->open;
  *listen_comm = lc;
  return ncclSuccess;
}

ncclResult_t connect(void* const* handles, int nranks, int rank, void* listen_comm,
                     void** coll_comm) {
  if (handles == nullptr || listen_comm == nullptr || coll_comm == nullptr || nranks < 1 ||
      rank < 0 || rank >= nranks || handles[0] == nullptr) {
    return ncclInvalidArgument;
  }
  *coll_comm = nullptr;
  CollHandle root{};
  if (ncclResult_t checked = checkHandles(handles, nranks, &root); checked != ncclSuccess) {
    return checked;
  }
  std::string reducers = localReducers();
  std::string secret;
  rdResult_t st = auth::secretFromSettings(&secret);
  if (st != rdSuccess) return RD_NCCL_FAIL(st, "CollNet connect: reading the job secret");
  rdUniqueId id;
  st = coll::makeUniqueIdWithCommId(reducers, secret, root.nonce, &server::startRendezvous, &id);
  if (st != rdSuccess) return RD_NCCL_FAIL(st, "CollNet connect");
  rdCommConfig_t config = RD_COMM_CONFIG_INITIALIZER;
  config.algorithm = rdAlgoReductionServer;
  auto* cc = new CollComm;
  cc->rank = rank;
  cc->nranks = nranks;
  cc->ctx = static_cast<CollListen*>(listen_comm)->ctx;
  st = rdCommInitRankConfig(&cc->comm, nranks, id, rank, &config);
  if (st != rdSuccess) {
    delete cc;
    return RD_NCCL_FAIL(st, "CollNet connect: rank " + std::to_string(rank) + " of " +
                                std::to_string(nranks) + " joining reducers " + reducers);
  }
  RD_NCCL_INFO(kNcclLogInit | kNcclLogNet, "CollNet rank %d of %d joined reducers %s", rank, nranks,
               reducers.c_str());
  if (cc->ctx != nullptr) ++cc->ctx->open;
  *coll_comm = cc;
  return ncclSuccess;
}

ncclResult_t reduceSupport(ncclDataType_t dtype, ncclRedOp_t op, int* supported) {
  if (supported == nullptr) return ncclInvalidArgument;
  *supported = validType(dtype) && validOp(op) ? 1 : 0;
  return ncclSuccess;
}

ncclResult_t regMr(void* coll_comm, void* data, size_t size, int type, void** mhandle) {
  if (coll_comm == nullptr || mhandle == nullptr) return ncclInvalidArgument;
  if (type != kNcclPtrHost) {
    RD_NCCL_WARN("CollNet regMr: only host memory is supported (type %d)", type);
    return ncclInvalidArgument;
  }
  *mhandle = new MemRecord{data, size};
  return ncclSuccess;
}

ncclResult_t deregMr(void* /*coll_comm*/, void* mhandle) {
  delete static_cast<MemRecord*>(mhandle);
  return ncclSuccess;
}

ncclResult_t iallreduce(void* coll_comm, void* send, void* recv, size_t count, ncclDataType_t dtype,
                        ncclRedOp_t op, void** request) {
  auto* cc = static_cast<CollComm*>(coll_comm);
  if (cc == nullptr || request == nullptr) return ncclInvalidArgument;
  if (!validType(dtype) || !validOp(op)) {
    RD_NCCL_WARN("iallreduce: dtype %d / op %d not supported", static_cast<int>(dtype),
                 static_cast<int>(op));
    return ncclInvalidArgument;
  }
  auto* req = new CollRequest;
  req->what = "all-reduce of " + std::to_string(count) + " " +
              rdDataTypeName(static_cast<rdDataType_t>(dtype)) + " (" +
              rdRedOpName(static_cast<rdRedOp_t>(op)) + ")";
  if (!cc->reported.exchange(true)) {
    RD_NCCL_INFO(kNcclLogColl | kNcclLogNet,
                 "CollNet rank %d: first iallreduce through the reducers: %s", cc->rank,
                 req->what.c_str());
  }
  return handOut(postAllReduce(cc, send, recv, count, dtype, op, req), req, request);
}

ncclResult_t iallgather(void* coll_comm, void* send, int nparts, const Part* parts,
                        size_t bytes_per_rank, size_t window_offset, size_t window_bytes,
                        void** request) {
  auto* cc = static_cast<CollComm*>(coll_comm);
  if (cc == nullptr || request == nullptr || nparts < 0 || (nparts > 0 && parts == nullptr) ||
      totalSize(nparts, parts) < window_bytes ||
      window_offset + window_bytes > bytes_per_rank * static_cast<size_t>(cc->nranks)) {
    return ncclInvalidArgument;
  }
  auto* req = new CollRequest;
  req->what = "all-gather window of " + std::to_string(window_bytes) + " bytes";
  // Each byte of the window has exactly one contributor: a uint8 sum of the zero-filled window
  // with this rank's bytes in place is the all-gather, exactly.
  req->window.assign(window_bytes, 0);
  size_t lo = 0, hi = 0;
  sliceInWindow(cc->rank, bytes_per_rank, window_offset, window_bytes, &lo, &hi);
  if (hi > lo) std::memcpy(req->window.data() + (lo - window_offset), send, hi - lo);
  std::vector<Part> out(parts, parts + nparts);
  req->finish = [req, out] {
    size_t at = 0;
    for (const Part& p : out) {
      size_t n = std::min(p.size, req->window.size() - at);
      std::memcpy(p.address, req->window.data() + at, n);
      at += n;
    }
  };
  ncclResult_t posted =
      postAllReduce(cc, req->window.data(), req->window.data(), window_bytes,
                    static_cast<ncclDataType_t>(rdUint8), static_cast<ncclRedOp_t>(rdSum), req);
  return handOut(posted, req, request);
}

ncclResult_t ireducescatter(void* coll_comm, int nparts, const Part* parts, void* recv,
                            size_t bytes_per_rank, size_t window_offset, size_t window_bytes,
                            ncclDataType_t dtype, ncclRedOp_t op, void** request) {
  auto* cc = static_cast<CollComm*>(coll_comm);
  size_t elem = validType(dtype) ? rdDataTypeSize(static_cast<rdDataType_t>(dtype)) : 0;
  if (cc == nullptr || request == nullptr || nparts < 0 || (nparts > 0 && parts == nullptr) ||
      elem == 0 || !validOp(op) || window_offset % elem != 0 || window_bytes % elem != 0 ||
      totalSize(nparts, parts) < window_bytes ||
      window_offset + window_bytes > bytes_per_rank * static_cast<size_t>(cc->nranks)) {
    return ncclInvalidArgument;
  }
  auto* req = new CollRequest;
  req->what = "reduce-scatter window of " + std::to_string(window_bytes) + " bytes";
  req->window.resize(window_bytes);
  size_t at = 0;
  for (int i = 0; i < nparts && at < window_bytes; ++i) {
    size_t n = std::min(parts[i].size, window_bytes - at);
    std::memcpy(req->window.data() + at, parts[i].address, n);
    at += n;
  }
  size_t lo = 0, hi = 0;
  sliceInWindow(cc->rank, bytes_per_rank, window_offset, window_bytes, &lo, &hi);
  req->finish = [req, recv, lo, hi, window_offset] {
    if (hi > lo) std::memcpy(recv, req->window.data() + (lo - window_offset), hi - lo);
  };
  ncclResult_t posted = postAllReduce(cc, req->window.data(), req->window.data(),
                                      window_bytes / elem, dtype, op, req);
  return handOut(posted, req, request);
}

ncclResult_t iflush(void*, void*, int, void*, void** request) {
  if (request == nullptr) return ncclInvalidArgument;
  *request = nullptr;
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* size) {
  auto* req = static_cast<CollRequest*>(request);
  if (req == nullptr || done == nullptr) return ncclInvalidArgument;
  *done = 0;
  rdResult_t st = req->request == nullptr ? rdSuccess : rdRequestTest(req->request);
  if (st == rdInProgress) return ncclSuccess;
  ncclResult_t res = ncclSuccess;
  if (st == rdSuccess) {
    if (req->finish) req->finish();
    *done = 1;
    if (size != nullptr) *size = static_cast<int>(req->bytes);
  } else {
    res = RD_NCCL_FAIL(st, req->what);
  }
  if (req->request != nullptr) rdRequestFree(req->request);
  delete req;
  return res;
}

ncclResult_t closeColl(void* coll_comm) {
  auto* cc = static_cast<CollComm*>(coll_comm);
  if (cc == nullptr) return ncclInvalidArgument;
  rdResult_t error = rdSuccess;
  rdCommGetAsyncError(cc->comm, &error);
  if (error != rdSuccess) rdCommAbort(cc->comm);  // peers may be gone: do not wait for them
  rdResult_t st = rdCommDestroy(cc->comm);
  if (cc->ctx != nullptr) --cc->ctx->open;
  delete cc;
  if (st != rdSuccess) return RD_NCCL_FAIL(st, "CollNet close");
  return ncclSuccess;
}

ncclResult_t closeListen(void* listen_comm) {
  auto* lc = static_cast<CollListen*>(listen_comm);
  if (lc == nullptr) return ncclInvalidArgument;
  if (lc->ctx != nullptr) --lc->ctx->open;
  delete lc;
  return ncclSuccess;
}

}  // namespace rd::nccl::collnet
