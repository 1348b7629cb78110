// SPDX-License-Identifier: BSD-3-Clause
// The exported ncclNetPlugin_v8 .. _v12 structs: each version's signatures adapted to
// net_engine.h. NCCL looks these up newest first and uses the first one it knows.
#include "nccl_plugin/net_engine.h"
#include "nccl_plugin/properties.h"

namespace rd::nccl::net {
namespace {

int g_context;  // v11+: one shared context; every NCCL communicator uses the same transport

ncclResult_t connectNoDevice(int dev, void* handle, void** send_comm,
                             ncclNetDeviceHandle_t** dev_comm) {
  if (dev_comm != nullptr) *dev_comm = nullptr;
  return connect(dev, handle, send_comm);
}

ncclResult_t acceptNoDevice(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_t** dev_comm) {
  if (dev_comm != nullptr) *dev_comm = nullptr;
  return accept(listen_comm, recv_comm);
}

ncclResult_t regMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void**) {
  return ncclInvalidUsage;  // ptrSupport never offers DMA-BUF
}

ncclResult_t isendSized(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                        void** request) {
  return isend(send_comm, data, size, tag, mhandle, request);
}

ncclResult_t isendInt(void* send_comm, void* data, int size, int tag, void* mhandle,
                      void** request) {
  if (size < 0) return ncclInvalidArgument;
  return isend(send_comm, data, static_cast<size_t>(size), tag, mhandle, request);
}

ncclResult_t isendProfiled(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                           void* /*phandle*/, void** request) {
  return isend(send_comm, data, size, tag, mhandle, request);
}

ncclResult_t irecvSized(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** request) {
  return irecv(recv_comm, n, data, sizes, tags, mhandles, request);
}

ncclResult_t irecvInt(void* recv_comm, int n, void** data, int* sizes, int* tags, void** mhandles,
                      void** request) {
  if (n < 1 || n > kMaxRecvs || sizes == nullptr) return ncclInvalidArgument;
  size_t wide[kMaxRecvs];
  for (int i = 0; i < n; ++i) wide[i] = sizes[i] < 0 ? 0 : static_cast<size_t>(sizes[i]);
  return irecv(recv_comm, n, data, wide, tags, mhandles, request);
}

ncclResult_t irecvProfiled(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                           void** mhandles, void** /*phandles*/, void** request) {
  return irecv(recv_comm, n, data, sizes, tags, mhandles, request);
}

ncclResult_t initV10(ncclDebugLogger_t logger, ncclProfilerCallback_t /*profiler*/) {
  return init(logger);
}

ncclResult_t connectV10(int dev, ncclNetCommConfig_t* /*config*/, void* handle, void** send_comm,
                        ncclNetDeviceHandle_t** dev_comm) {
  return connectNoDevice(dev, handle, send_comm, dev_comm);
}

ncclResult_t initV11(void** ctx, uint64_t /*comm_id*/, ncclNetCommConfig_t* /*config*/,
                     ncclDebugLogger_t logger, ncclProfilerCallback_t /*profiler*/) {
  if (ctx == nullptr) return ncclInvalidArgument;
  *ctx = &g_context;
  return init(logger);
}

ncclResult_t listenV11(void* /*ctx*/, int dev, void* handle, void** listen_comm) {
  return listen(dev, handle, listen_comm);
}

ncclResult_t connectV11(void* /*ctx*/, int dev, void* handle, void** send_comm,
                        ncclNetDeviceHandle_t** dev_comm) {
  return connectNoDevice(dev, handle, send_comm, dev_comm);
}

ncclResult_t finalize(void* /*ctx*/) {
  return ncclSuccess;
}  // the transport serves all comms

ncclResult_t setNetAttr(void* /*ctx*/, ncclNetAttr_t* /*attr*/) {
  return ncclSuccess;
}

template <typename Props>
ncclResult_t getProperties(int dev, Props* props) {
  return fillVersioned(&fillProperties, dev, props);
}

ncclResult_t getPropertiesV8(int dev, ncclNetProperties_v8_t* props) {
  return fillProperties(dev, props);
}

}  // namespace
}  // namespace rd::nccl::net

namespace net = rd::nccl::net;
using rd::nccl::makeSingleVDevice;

#define RD_NCCL_EXPORT __attribute__((visibility("default")))

extern "C" {

// NCCL 2.20 - 2.23.
RD_NCCL_EXPORT ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = "libreduce",
    .init = net::init,
    .devices = net::devices,
    .getProperties = net::getPropertiesV8,
    .listen = net::listen,
    .connect = net::connectNoDevice,
    .accept = net::acceptNoDevice,
    .regMr = net::regMr,
    .regMrDmaBuf = net::regMrDmaBuf,
    .deregMr = net::deregMr,
    .isend = net::isendInt,
    .irecv = net::irecvInt,
    .iflush = net::iflush,
    .test = net::test,
    .closeSend = net::closeSend,
    .closeRecv = net::closeRecv,
    .closeListen = net::closeListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
};

// NCCL 2.24 - 2.25.
RD_NCCL_EXPORT ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = "libreduce",
    .init = net::init,
    .devices = net::devices,
    .getProperties = net::getProperties<ncclNetProperties_v9_t>,
    .listen = net::listen,
    .connect = net::connectNoDevice,
    .accept = net::acceptNoDevice,
    .regMr = net::regMr,
    .regMrDmaBuf = net::regMrDmaBuf,
    .deregMr = net::deregMr,
    .isend = net::isendSized,
    .irecv = net::irecvSized,
    .iflush = net::iflush,
    .test = net::test,
    .closeSend = net::closeSend,
    .closeRecv = net::closeRecv,
    .closeListen = net::closeListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = makeSingleVDevice<ncclNetVDeviceProps<kNcclNetMaxDevsPerNicV9>>,
};

// NCCL 2.26 - 2.27.
RD_NCCL_EXPORT ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = "libreduce",
    .init = net::initV10,
    .devices = net::devices,
    .getProperties = net::getProperties<ncclNetProperties_v9_t>,
    .listen = net::listen,
    .connect = net::connectV10,
    .accept = net::acceptNoDevice,
    .regMr = net::regMr,
    .regMrDmaBuf = net::regMrDmaBuf,
    .deregMr = net::deregMr,
    .isend = net::isendProfiled,
    .irecv = net::irecvProfiled,
    .iflush = net::iflush,
    .test = net::test,
    .closeSend = net::closeSend,
    .closeRecv = net::closeRecv,
    .closeListen = net::closeListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = makeSingleVDevice<ncclNetVDeviceProps<kNcclNetMaxDevsPerNicV9>>,
};

// NCCL 2.28 - 2.29.
RD_NCCL_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = "libreduce",
    .init = net::initV11,
    .devices = net::devices,
    .getProperties = net::getProperties<ncclNetProperties_v11_t>,
    .listen = net::listenV11,
    .connect = net::connectV11,
    .accept = net::acceptNoDevice,
    .regMr = net::regMr,
    .regMrDmaBuf = net::regMrDmaBuf,
    .deregMr = net::deregMr,
    .isend = net::isendProfiled,
    .irecv = net::irecvProfiled,
    .iflush = net::iflush,
    .test = net::test,
    .closeSend = net::closeSend,
    .closeRecv = net::closeRecv,
    .closeListen = net::closeListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = makeSingleVDevice<ncclNetVDeviceProps<kNcclNetMaxDevsPerNicV9>>,
    .finalize = net::finalize,
    .setNetAttr = net::setNetAttr,
};

// NCCL 2.30 - 2.32 (the v12 layout of NCCL 2.30's headers; 2.31 and 2.32 look up no newer one).
RD_NCCL_EXPORT ncclNet_v12_t ncclNetPlugin_v12 = {
    .name = "libreduce",
    .init = net::initV11,
    .devices = net::devices,
    .getProperties = net::getProperties<ncclNetProperties_v12_t>,
    .listen = net::listenV11,
    .connect = net::connectV11,
    .accept = net::acceptNoDevice,
    .regMr = net::regMr,
    .regMrDmaBuf = net::regMrDmaBuf,
    .deregMr = net::deregMr,
    .isend = net::isendProfiled,
    .irecv = net::irecvProfiled,
    .iflush = net::iflush,
    .test = net::test,
    .closeSend = net::closeSend,
    .closeRecv = net::closeRecv,
    .closeListen = net::closeListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = makeSingleVDevice<ncclNetVDeviceProps<kNcclNetMaxDevsPerNicV12>>,
    .finalize = net::finalize,
    .setNetAttr = net::setNetAttr,
};

}  // extern "C"
