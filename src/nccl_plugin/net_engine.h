// SPDX-License-Identifier: BSD-3-Clause
// The Net half of the plugin: NCCL's point-to-point transport between nodes, over libreduce's
// UCX transport (one per process, its own progress thread blocking on the UCX event fd).
//
// A send comm is one transport connection; its first message names the listen comm it is for,
// and the receiving side turns the connection into a recv comm that accept() hands out. Every
// isend is one message (a small header with the tag, then the bytes, fetched by UCX rendezvous
// straight into the posted buffer when large). Messages are matched to irecv buffers by tag in
// arrival order; one that arrives before its irecv waits (UCX keeps large ones on the sender).
//
// Version-neutral: the exported v8..v12 structs adapt their signatures to these calls.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl_plugin/nccl_net_abi.h"

namespace rd::nccl::net {

/** Most receives NCCL may group into one irecv (reported as maxRecvs). */
constexpr int kMaxRecvs = 8;

ncclResult_t init(ncclDebugLogger_t logger);
ncclResult_t devices(int* ndev);
/** The fields every properties version shares, filled for @p dev. */
ncclResult_t fillProperties(int dev, ncclNetProperties_v8_t* props);
ncclResult_t listen(int dev, void* handle, void** listen_comm);
/** Returns at once with a usable send comm (sends queue until the connection is up). */
ncclResult_t connect(int dev, void* handle, void** send_comm);
/** Sets *@p recv_comm to null until a peer's connection has arrived; NCCL calls again. */
ncclResult_t accept(void* listen_comm, void** recv_comm);
ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t deregMr(void* comm, void* mhandle);
ncclResult_t isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                   void** request);
ncclResult_t irecv(void* recv_comm, int n, void** data, const size_t* sizes, const int* tags,
                   void** mhandles, void** request);
/** Host memory needs no flush: completes at once (null request). */
ncclResult_t iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                    void** request);
/** Done with the byte count of each receive; an error frees the request too. */
ncclResult_t test(void* request, int* done, int* sizes);
ncclResult_t closeSend(void* send_comm);
ncclResult_t closeRecv(void* recv_comm);
ncclResult_t closeListen(void* listen_comm);

}  // namespace rd::nccl::net
