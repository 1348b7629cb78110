// SPDX-License-Identifier: BSD-3-Clause
// The exported ncclCollNetPlugin_v8 .. _v12 structs: each version's signatures adapted to
// coll_net.h. NCCL uses CollNet only together with a Net struct of the same library.
#include <vector>

#include "nccl_plugin/coll_net.h"
#include "nccl_plugin/properties.h"

namespace rd::nccl::collnet {
namespace {

ncclResult_t connectAll(void* handles[], int nranks, int rank, void* listen_comm,
                        void** coll_comm) {
  return connect(handles, nranks, rank, listen_comm, coll_comm);
}

ncclResult_t regMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void**) {
  return ncclInvalidUsage;  // ptrSupport never offers DMA-BUF
}

ncclResult_t iallreduceInt(void* coll_comm, void* send, void* recv, int count, ncclDataType_t dtype,
                           ncclRedOp_t op, void*, void*, void** request) {
  if (count < 0) return ncclInvalidArgument;
  return iallreduce(coll_comm, send, recv, static_cast<size_t>(count), dtype, op, request);
}

ncclResult_t iallreduceSized(void* coll_comm, void* send, void* recv, size_t count,
                             ncclDataType_t dtype, ncclRedOp_t op, void*, void*, void** request) {
  return iallreduce(coll_comm, send, recv, count, dtype, op, request);
}

template <typename Sge>
std::vector<Part> widen(int nparts, const Sge* parts) {
  std::vector<Part> out;
  for (int i = 0; parts != nullptr && i < nparts; ++i) {
    out.push_back(Part{parts[i].address, static_cast<size_t>(parts[i].size)});
  }
  return out;
}

template <typename Sge>
ncclResult_t iallgatherSge(void* coll_comm, void* send, int nparts, Sge* parts,
                           size_t bytes_per_rank, size_t window_offset, size_t window_bytes,
                           void* /*send_mh*/, void** request) {
  std::vector<Part> wide = widen(nparts, parts);
  return iallgather(coll_comm, send, static_cast<int>(wide.size()), wide.data(), bytes_per_rank,
                    window_offset, window_bytes, request);
}

template <typename Sge>
ncclResult_t ireducescatterSge(void* coll_comm, int nparts, Sge* parts, void* recv,
                               size_t bytes_per_rank, size_t window_offset, size_t window_bytes,
                               ncclDataType_t dtype, ncclRedOp_t op, void* /*recv_mh*/,
                               void** request) {
  std::vector<Part> wide = widen(nparts, parts);
  return ireducescatter(coll_comm, static_cast<int>(wide.size()), wide.data(), recv, bytes_per_rank,
                        window_offset, window_bytes, dtype, op, request);
}

ncclResult_t initV11(void** ctx, uint64_t comm_id, ncclDebugLogger_t logger) {
  if (ctx == nullptr) return ncclInvalidArgument;
  init(logger);
  return openContext(comm_id, ctx);
}

ncclResult_t listenV8(int dev, void* handle, void** listen_comm) {
  return listen(nullptr, dev, handle, listen_comm);
}

template <typename Props>
ncclResult_t getProperties(int dev, Props* props) {
  return fillVersioned(&fillProperties, dev, props);
}

ncclResult_t getPropertiesV8(int dev, ncclNetProperties_v8_t* props) {
  return fillProperties(dev, props);
}

}  // namespace
}  // namespace rd::nccl::collnet

namespace collnet = rd::nccl::collnet;
using rd::nccl::makeSingleVDevice;

#define RD_NCCL_EXPORT __attribute__((visibility("default")))

extern "C" {

// NCCL 2.20 - 2.23.
RD_NCCL_EXPORT ncclCollNet_v8_t ncclCollNetPlugin_v8 = {
    .name = "libreduce",
    .init = collnet::init,
    .devices = collnet::devices,
    .getProperties = collnet::getPropertiesV8,
    .listen = collnet::listenV8,
    .connect = collnet::connectAll,
    .reduceSupport = collnet::reduceSupport,
    .regMr = collnet::regMr,
    .regMrDmaBuf = collnet::regMrDmaBuf,
    .deregMr = collnet::deregMr,
    .iallreduce = collnet::iallreduceInt,
    .iallgather = collnet::iallgatherSge<ncclNetSGE_v8_t>,
    .ireducescatter = collnet::ireducescatterSge<ncclNetSGE_v8_t>,
    .iflush = collnet::iflush,
    .test = collnet::test,
    .closeColl = collnet::closeColl,
    .closeListen = collnet::closeListen,
};

// NCCL 2.24 - 2.25 (v9) and 2.26 - 2.27 (v10): one layout.
RD_NCCL_EXPORT ncclCollNet_v9_t ncclCollNetPlugin_v9 = {
    .name = "libreduce",
    .init = collnet::init,
    .devices = collnet::devices,
    .getProperties = collnet::getProperties<ncclNetProperties_v9_t>,
    .listen = collnet::listenV8,
    .connect = collnet::connectAll,
    .reduceSupport = collnet::reduceSupport,
    .regMr = collnet::regMr,
    .regMrDmaBuf = collnet::regMrDmaBuf,
    .deregMr = collnet::deregMr,
    .iallreduce = collnet::iallreduceSized,
    .iallgather = collnet::iallgatherSge<ncclNetSGE_v9_t>,
    .ireducescatter = collnet::ireducescatterSge<ncclNetSGE_v9_t>,
    .iflush = collnet::iflush,
    .test = collnet::test,
    .closeColl = collnet::closeColl,
    .closeListen = collnet::closeListen,
    .makeVDevice = makeSingleVDevice<ncclNetVDeviceProps<kNcclNetMaxDevsPerNicV9>>,
};
RD_NCCL_EXPORT ncclCollNet_v10_t ncclCollNetPlugin_v10 = ncclCollNetPlugin_v9;

// NCCL 2.28 - 2.29.
RD_NCCL_EXPORT ncclCollNet_v11_t ncclCollNetPlugin_v11 = {
    .name = "libreduce",
    .init = collnet::initV11,
    .devices = collnet::devices,
    .getProperties = collnet::getProperties<ncclNetProperties_v11_t>,
    .listen = collnet::listen,
    .connect = collnet::connectAll,
    .reduceSupport = collnet::reduceSupport,
    .regMr = collnet::regMr,
    .regMrDmaBuf = collnet::regMrDmaBuf,
    .deregMr = collnet::deregMr,
    .iallreduce = collnet::iallreduceSized,
    .iallgather = collnet::iallgatherSge<ncclNetSGE_v9_t>,
    .ireducescatter = collnet::ireducescatterSge<ncclNetSGE_v9_t>,
    .iflush = collnet::iflush,
    .test = collnet::test,
    .closeColl = collnet::closeColl,
    .closeListen = collnet::closeListen,
    .makeVDevice = makeSingleVDevice<ncclNetVDeviceProps<kNcclNetMaxDevsPerNicV9>>,
    .finalize = collnet::closeContext,
};

// NCCL 2.30 - 2.32 (the v12 layout of NCCL 2.30's headers; 2.31 and 2.32 look up no newer one).
RD_NCCL_EXPORT ncclCollNet_v12_t ncclCollNetPlugin_v12 = {
    .name = "libreduce",
    .init = collnet::initV11,
    .devices = collnet::devices,
    .getProperties = collnet::getProperties<ncclNetProperties_v12_t>,
    .listen = collnet::listen,
    .connect = collnet::connectAll,
    .reduceSupport = collnet::reduceSupport,
    .regMr = collnet::regMr,
    .regMrDmaBuf = collnet::regMrDmaBuf,
    .deregMr = collnet::deregMr,
    .iallreduce = collnet::iallreduceSized,
    .iallgather = collnet::iallgatherSge<ncclNetSGE_v9_t>,
    .ireducescatter = collnet::ireducescatterSge<ncclNetSGE_v9_t>,
    .iflush = collnet::iflush,
    .test = collnet::test,
    .closeColl = collnet::closeColl,
    .closeListen = collnet::closeListen,
    .makeVDevice = makeSingleVDevice<ncclNetVDeviceProps<kNcclNetMaxDevsPerNicV12>>,
    .finalize = collnet::closeContext,
};

}  // extern "C"
