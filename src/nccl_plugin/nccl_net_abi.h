// SPDX-License-Identifier: BSD-3-Clause
// NCCL's plugin ABI, declared here so that the plugin builds without NCCL or CUDA headers.
// Layouts follow NCCL's net plugin interface: v8 (NCCL 2.20-2.23), v9 (2.24-2.25), v10
// (2.26-2.27), v11 (2.28-2.29) and v12 (2.30-2.32), by the symbol each release looks up (2.19 looks
// up v5..v7 only, which this plugin does not export). Every struct is C layout; field order and
// types must not change. Only what this plugin uses or fills is declared.
#pragma once

#include <stddef.h>
#include <stdint.h>

// Types only: the exported plugin objects are declared extern "C" where they are defined.

// ---- Shared types (unchanged from v8 to v12) -------------------------------------------------

enum ncclResult_t : int {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
};

// Values equal libreduce's rdDataType_t / rdRedOp_t for every type both know.
enum ncclDataType_t : int {};  // any value NCCL passes is representable
enum ncclRedOp_t : int {};

enum ncclDebugLogLevel : int {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5,
};
constexpr unsigned long kNcclLogInit = 1;  // NCCL_INIT
constexpr unsigned long kNcclLogColl = 2;  // NCCL_COLL
constexpr unsigned long kNcclLogNet = 16;  // NCCL_NET

using ncclDebugLogger_t = void (*)(ncclDebugLogLevel level, unsigned long flags, const char* file,
                                   int line, const char* fmt, ...);
using ncclProfilerCallback_t = ncclResult_t (*)(void** handle, int type, void* phandle,
                                                int64_t plugin_id, void* ext_data);

constexpr int kNcclNetHandleMaxSize = 128;  // NCCL_NET_HANDLE_MAXSIZE
constexpr int kNcclPtrHost = 0x1;           // NCCL_PTR_HOST
constexpr int kNcclNetMaxRequests = 32;     // NCCL_NET_MAX_REQUESTS

enum ncclNetDeviceType : int { NCCL_NET_DEVICE_HOST = 0 };

// ncclNetDeviceHandle_v7_t .. _v12_t: the same struct. This plugin never creates one.
struct ncclNetDeviceHandle_t {
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  void* handle;
  size_t size;
  int needsProxyProgress;
};

// Scatter-gather element of iallgather / ireducescatter. v8 had a 32-bit size.
struct ncclNetSGE_v8_t {
  void* mhandle;
  void* address;
  uint32_t size;
};
struct ncclNetSGE_v9_t {
  void* mhandle;
  void* address;
  size_t size;
};

// ---- Device properties ------------------------------------------------------------------------

struct ncclNetProperties_v8_t {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int speed;  // Mbps
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
};

constexpr int kNcclNetMaxDevsPerNicV9 = 4;  // v9 .. v11
constexpr int kNcclNetMaxDevsPerNicV12 = 8;

template <int kMaxDevs>
struct ncclNetVDeviceProps {
  int ndevs;
  int devs[kMaxDevs];
};

// v9 and v10 share one layout.
struct ncclNetProperties_v9_t {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  ncclNetVDeviceProps<kNcclNetMaxDevsPerNicV9> vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
};

struct ncclNetProperties_v11_t {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  ncclNetVDeviceProps<kNcclNetMaxDevsPerNicV9> vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
};

struct ncclNetProperties_v12_t {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  ncclNetVDeviceProps<kNcclNetMaxDevsPerNicV12> vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
  int16_t railId;
  int16_t planeId;
};

struct ncclNetCommConfig_t {  // v10 .. v12
  int trafficClass;
};

struct ncclNetAttr_t {  // v11, v12: hints this plugin may ignore
  int32_t send_attr[4];
  int32_t recv_attr[4];
  uint32_t op;
  uint32_t algo;
  uint32_t proto;
};

// ---- Net (point-to-point) ---------------------------------------------------------------------

struct ncclNet_v8_t {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logger);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listen_comm);
  ncclResult_t (*connect)(int dev, void* handle, void** send_comm,
                          ncclNetDeviceHandle_t** dev_comm);
  ncclResult_t (*accept)(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_t** dev_comm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* send_comm, void* data, int size, int tag, void* mhandle,
                        void** request);
  ncclResult_t (*irecv)(void* recv_comm, int n, void** data, int* sizes, int* tags, void** mhandles,
                        void** request);
  ncclResult_t (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* send_comm);
  ncclResult_t (*closeRecv)(void* recv_comm);
  ncclResult_t (*closeListen)(void* listen_comm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recv_comm, int n, void* request);
};

struct ncclNet_v9_t {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logger);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listen_comm);
  ncclResult_t (*connect)(int dev, void* handle, void** send_comm,
                          ncclNetDeviceHandle_t** dev_comm);
  ncclResult_t (*accept)(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_t** dev_comm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                        void** request);
  ncclResult_t (*irecv)(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** request);
  ncclResult_t (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* send_comm);
  ncclResult_t (*closeRecv)(void* recv_comm);
  ncclResult_t (*closeListen)(void* listen_comm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recv_comm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* dev, ncclNetVDeviceProps<kNcclNetMaxDevsPerNicV9>* props);
};

struct ncclNet_v10_t {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logger, ncclProfilerCallback_t profiler);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listen_comm);
  ncclResult_t (*connect)(int dev, ncclNetCommConfig_t* config, void* handle, void** send_comm,
                          ncclNetDeviceHandle_t** dev_comm);
  ncclResult_t (*accept)(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_t** dev_comm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                        void* phandle, void** request);
  ncclResult_t (*irecv)(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** phandles, void** request);
  ncclResult_t (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* send_comm);
  ncclResult_t (*closeRecv)(void* recv_comm);
  ncclResult_t (*closeListen)(void* listen_comm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recv_comm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* dev, ncclNetVDeviceProps<kNcclNetMaxDevsPerNicV9>* props);
};

// v11 and v12 differ only in the properties struct and the virtual-device size.
template <typename Props, int kMaxDevs>
struct ncclNet_v11_layout {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t comm_id, ncclNetCommConfig_t* config,
                       ncclDebugLogger_t logger, ncclProfilerCallback_t profiler);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, Props* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listen_comm);
  ncclResult_t (*connect)(void* ctx, int dev, void* handle, void** send_comm,
                          ncclNetDeviceHandle_t** dev_comm);
  ncclResult_t (*accept)(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_t** dev_comm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                        void* phandle, void** request);
  ncclResult_t (*irecv)(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** phandles, void** request);
  ncclResult_t (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* send_comm);
  ncclResult_t (*closeRecv)(void* recv_comm);
  ncclResult_t (*closeListen)(void* listen_comm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recv_comm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* dev, ncclNetVDeviceProps<kMaxDevs>* props);
  ncclResult_t (*finalize)(void* ctx);
  ncclResult_t (*setNetAttr)(void* ctx, ncclNetAttr_t* attr);
};
using ncclNet_v11_t = ncclNet_v11_layout<ncclNetProperties_v11_t, kNcclNetMaxDevsPerNicV9>;
using ncclNet_v12_t = ncclNet_v11_layout<ncclNetProperties_v12_t, kNcclNetMaxDevsPerNicV12>;

// ---- CollNet (collectives offload) ------------------------------------------------------------

// v8: 32-bit counts and SGE sizes.
struct ncclCollNet_v8_t {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logger);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listen_comm);
  ncclResult_t (*connect)(void* handles[], int nranks, int rank, void* listen_comm,
                          void** coll_comm);
  ncclResult_t (*reduceSupport)(ncclDataType_t dtype, ncclRedOp_t op, int* supported);
  ncclResult_t (*regMr)(void* coll_comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* coll_comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* coll_comm, void* mhandle);
  ncclResult_t (*iallreduce)(void* coll_comm, void* send, void* recv, int count,
                             ncclDataType_t dtype, ncclRedOp_t op, void* send_mh, void* recv_mh,
                             void** request);
  ncclResult_t (*iallgather)(void* coll_comm, void* send, int nparts, ncclNetSGE_v8_t* parts,
                             size_t bytes_per_rank, size_t window_offset, size_t window_bytes,
                             void* send_mh, void** request);
  ncclResult_t (*ireducescatter)(void* coll_comm, int nparts, ncclNetSGE_v8_t* parts, void* recv,
                                 size_t bytes_per_rank, size_t window_offset, size_t window_bytes,
                                 ncclDataType_t dtype, ncclRedOp_t op, void* recv_mh,
                                 void** request);
  ncclResult_t (*iflush)(void* coll_comm, void* data, int size, void* mhandle, void** request);
  ncclResult_t (*test)(void* request, int* done, int* size);
  ncclResult_t (*closeColl)(void* coll_comm);
  ncclResult_t (*closeListen)(void* listen_comm);
};

// v9, v10: size_t counts, virtual devices.
template <typename Props>
struct ncclCollNet_v9_layout {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logger);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, Props* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listen_comm);
  ncclResult_t (*connect)(void* handles[], int nranks, int rank, void* listen_comm,
                          void** coll_comm);
  ncclResult_t (*reduceSupport)(ncclDataType_t dtype, ncclRedOp_t op, int* supported);
  ncclResult_t (*regMr)(void* coll_comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* coll_comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* coll_comm, void* mhandle);
  ncclResult_t (*iallreduce)(void* coll_comm, void* send, void* recv, size_t count,
                             ncclDataType_t dtype, ncclRedOp_t op, void* send_mh, void* recv_mh,
                             void** request);
  ncclResult_t (*iallgather)(void* coll_comm, void* send, int nparts, ncclNetSGE_v9_t* parts,
                             size_t bytes_per_rank, size_t window_offset, size_t window_bytes,
                             void* send_mh, void** request);
  ncclResult_t (*ireducescatter)(void* coll_comm, int nparts, ncclNetSGE_v9_t* parts, void* recv,
                                 size_t bytes_per_rank, size_t window_offset, size_t window_bytes,
                                 ncclDataType_t dtype, ncclRedOp_t op, void* recv_mh,
                                 void** request);
  ncclResult_t (*iflush)(void* coll_comm, void* data, int size, void* mhandle, void** request);
  ncclResult_t (*test)(void* request, int* done, int* size);
  ncclResult_t (*closeColl)(void* coll_comm);
  ncclResult_t (*closeListen)(void* listen_comm);
  ncclResult_t (*makeVDevice)(int* dev, ncclNetVDeviceProps<kNcclNetMaxDevsPerNicV9>* props);
};
using ncclCollNet_v9_t = ncclCollNet_v9_layout<ncclNetProperties_v9_t>;
using ncclCollNet_v10_t = ncclCollNet_v9_layout<ncclNetProperties_v9_t>;

// v11, v12: a context per NCCL communicator, finalize.
template <typename Props, int kMaxDevs>
struct ncclCollNet_v11_layout {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t comm_id, ncclDebugLogger_t logger);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, Props* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listen_comm);
  ncclResult_t (*connect)(void* handles[], int nranks, int rank, void* listen_comm,
                          void** coll_comm);
  ncclResult_t (*reduceSupport)(ncclDataType_t dtype, ncclRedOp_t op, int* supported);
  ncclResult_t (*regMr)(void* coll_comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* coll_comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* coll_comm, void* mhandle);
  ncclResult_t (*iallreduce)(void* coll_comm, void* send, void* recv, size_t count,
                             ncclDataType_t dtype, ncclRedOp_t op, void* send_mh, void* recv_mh,
                             void** request);
  ncclResult_t (*iallgather)(void* coll_comm, void* send, int nparts, ncclNetSGE_v9_t* parts,
                             size_t bytes_per_rank, size_t window_offset, size_t window_bytes,
                             void* send_mh, void** request);
  ncclResult_t (*ireducescatter)(void* coll_comm, int nparts, ncclNetSGE_v9_t* parts, void* recv,
                                 size_t bytes_per_rank, size_t window_offset, size_t window_bytes,
                                 ncclDataType_t dtype, ncclRedOp_t op, void* recv_mh,
                                 void** request);
  ncclResult_t (*iflush)(void* coll_comm, void* data, int size, void* mhandle, void** request);
  ncclResult_t (*test)(void* request, int* done, int* size);
  ncclResult_t (*closeColl)(void* coll_comm);
  ncclResult_t (*closeListen)(void* listen_comm);
  ncclResult_t (*makeVDevice)(int* dev, ncclNetVDeviceProps<kMaxDevs>* props);
  ncclResult_t (*finalize)(void* ctx);
};
using ncclCollNet_v11_t = ncclCollNet_v11_layout<ncclNetProperties_v11_t, kNcclNetMaxDevsPerNicV9>;
using ncclCollNet_v12_t = ncclCollNet_v11_layout<ncclNetProperties_v12_t, kNcclNetMaxDevsPerNicV12>;
