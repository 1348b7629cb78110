// SPDX-License-Identifier: BSD-3-Clause
// Loads libnccl-net-libreduce.so the way NCCL does (dlopen, then ncclNetPlugin_vN and
// ncclCollNetPlugin_vN looked up newest first) and gives the harness one version-neutral set of
// calls over whichever struct version it resolved, so every test runs unchanged per version.
#pragma once

#include <functional>
#include <string>

#include "nccl_plugin/nccl_net_abi.h"

namespace rd::test {

/** Receives NCCL-style log lines from the plugin: printed to stderr for the test to read. */
void harnessLogger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...);

struct NetApi {
  std::function<ncclResult_t()> init;
  std::function<ncclResult_t(int*)> devices;
  /** ptrSupport and maxRecvs of device @p dev, from the version's own properties struct. */
  std::function<ncclResult_t(int dev, int* ptr_support, int* max_recvs)> properties;
  std::function<ncclResult_t(void* handle, void** listen_comm)> listen;
  std::function<ncclResult_t(void* handle, void** send_comm)> connect;
  std::function<ncclResult_t(void* listen_comm, void** recv_comm)> accept;
  std::function<ncclResult_t(void* comm, void* data, size_t size, void** mh)> regMr;
  std::function<ncclResult_t(void* comm, void* mh)> deregMr;
  std::function<ncclResult_t(void* comm, void* data, size_t size, int tag, void* mh, void** req)>
      isend;
  std::function<ncclResult_t(void* comm, int n, void** data, size_t* sizes, int* tags, void** mh,
                             void** req)>
      irecv;
  std::function<ncclResult_t(void* comm, int n, void** data, int* sizes, void** mh, void** req)>
      iflush;
  /** regMrDmaBuf with a dummy fd: the plugin offers no DMA-BUF and must refuse. */
  std::function<ncclResult_t(void* comm, void* data, size_t size, void** mh)> regMrDmaBuf;
  std::function<ncclResult_t(void* req, int* done, int* sizes)> test;
  std::function<ncclResult_t(void*comm)> closeSend, closeRecv, closeListen;
  std::function<ncclResult_t()> finalize;  // v11+: ends the context init made; else nothing
};

struct Sge {
  void* address;
  size_t size;
  void* mhandle = nullptr;  // from the comm's regMr, as NCCL passes it
};

struct CollNetApi {
  std::function<ncclResult_t()> init;
  std::function<ncclResult_t(int*)> devices;
  std::function<ncclResult_t(int dev, int* ptr_support)> properties;
  std::function<ncclResult_t(void* handle, void** listen_comm)> listen;
  std::function<ncclResult_t(void** handles, int nranks, int rank, void* listen_comm, void** coll)>
      connect;
  std::function<ncclResult_t(int dtype, int op, int* supported)> reduceSupport;
  std::function<ncclResult_t(void* comm, void* data, size_t size, void** mh)> regMr;
  std::function<ncclResult_t(void* comm, void* mh)> deregMr;
  std::function<ncclResult_t(void* comm, void* send, void* recv, size_t count, int dtype, int op,
                             void* send_mh, void* recv_mh, void** req)>
      iallreduce;
  std::function<ncclResult_t(void* comm, void* send, int nparts, const Sge* parts,
                             size_t bytes_per_rank, size_t offset, size_t bytes, void* send_mh,
                             void** req)>
      iallgather;
  std::function<ncclResult_t(void* comm, int nparts, const Sge* parts, void* recv,
                             size_t bytes_per_rank, size_t offset, size_t bytes, int dtype, int op,
                             void* recv_mh, void** req)>
      ireducescatter;
  std::function<ncclResult_t(void* comm, void* data, int size, void* mh, void** req)> iflush;
  /** regMrDmaBuf with a dummy fd: the plugin offers no DMA-BUF and must refuse. */
  std::function<ncclResult_t(void* comm, void* data, size_t size, void** mh)> regMrDmaBuf;
  std::function<ncclResult_t(void* req, int* done, int* size)> test;
  std::function<ncclResult_t(void*comm)> closeColl, closeListen;
  std::function<ncclResult_t()> finalize;
  /**
   * v11+ only (empty before): a context per NCCL communicator, as NCCL makes one in each
   * communicator's init; listenIn listens in a given one; finalizeContext ends it.
   */
  std::function<ncclResult_t(uint64_t comm_id, void** ctx)> openContext;
  std::function<ncclResult_t(void* ctx, void* handle, void** listen_comm)> listenIn;
  std::function<ncclResult_t(void* ctx)> finalizeContext;
};

struct LoadedPlugin {
  void* library = nullptr;
  int version = 0;  // of both structs
  NetApi net;
  CollNetApi collnet;
};

/**
 * dlopens @p path and resolves version @p version, or with 0 the newest ncclNetPlugin_vN
 * (N = 12 down to 6) as NCCL does. Fails (with @p error) when the library, the Net struct or the
 * CollNet struct of that version is missing, or the version is one the harness cannot drive.
 */
bool loadPlugin(const std::string& path, int version, LoadedPlugin* out, std::string* error);

}  // namespace rd::test
