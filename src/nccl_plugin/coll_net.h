// SPDX-License-Identifier: BSD-3-Clause
// The CollNet half of the plugin: NCCL's collective offload, served by libreduce's reducers.
//
// Every rank's listen() writes into its handle a random nonce, its host name and a digest of its
// LIBREDUCE_REDUCERS; NCCL all-gathers the handles and calls connect() on every rank with the
// same list. So every rank sees at once whether all of them name the same reducers, and when one
// does not, every rank fails connect at once with the same message naming that rank's host (NCCL
// then runs the communicator without CollNet) instead of waiting for a join that cannot
// complete. The communicator id is rank 0's nonce; the job secret comes from
// LIBREDUCE_SECRET(_FILE), as reducectl sets it: each rank builds the same libreduce unique id on
// its own and joins the reducers with it (bounded by LIBREDUCE_TIMEOUT_MS).
//
// NCCL 2.30 refuses a job whose nodes report different CollNet device counts, so the count does
// not depend on the node alone: 1 when LIBREDUCE_REDUCERS is set or NCCL_COLLNET_ENABLE=1 (the
// job asks for CollNet), else 0. From v11 on NCCL gives each of its communicators a context
// (init .. finalize); listen and connect keep to the context they were given.
//
// iallreduce maps onto rdAllReduceAsync; iallgather and ireducescatter (a window of the
// all-ranks buffer) onto an all-reduce of that window. Version-neutral like net_engine.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl_plugin/nccl_net_abi.h"

namespace rd::nccl::collnet {

/** One part of a scattered buffer (any SGE version, widened). */
struct Part {
  void* address;
  size_t size;
};

ncclResult_t init(ncclDebugLogger_t logger);
/** v11+: a context for NCCL communicator @p comm_id (NCCL's hash), until closeContext. */
ncclResult_t openContext(uint64_t comm_id, void** ctx);
/** Refuses (ncclInvalidUsage) a context that is unknown or still has comms open. */
ncclResult_t closeContext(void* ctx);
/** 1 when LIBREDUCE_REDUCERS is set or NCCL_COLLNET_ENABLE=1, else 0: see above. */
ncclResult_t devices(int* ndev);
ncclResult_t fillProperties(int dev, ncclNetProperties_v8_t* props);
/** @p ctx: from openContext (v11+), or null before v11. */
ncclResult_t listen(void* ctx, int dev, void* handle, void** listen_comm);
/** Blocks until every rank joined the reducers, or fails within LIBREDUCE_TIMEOUT_MS. */
ncclResult_t connect(void* const* handles, int nranks, int rank, void* listen_comm,
                     void** coll_comm);
/** Exactly the dtypes and operators libreduce's kernels reduce. */
ncclResult_t reduceSupport(ncclDataType_t dtype, ncclRedOp_t op, int* supported);
ncclResult_t regMr(void* coll_comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t deregMr(void* coll_comm, void* mhandle);
ncclResult_t iallreduce(void* coll_comm, void* send, void* recv, size_t count, ncclDataType_t dtype,
                        ncclRedOp_t op, void** request);
/**
 * Window [@p window_offset, + @p window_bytes) of the all-gather of every rank's
 * @p bytes_per_rank bytes, into @p parts. @p send holds this rank's bytes that fall in the window.
 */
ncclResult_t iallgather(void* coll_comm, void* send, int nparts, const Part* parts,
                        size_t bytes_per_rank, size_t window_offset, size_t window_bytes,
                        void** request);
/**
 * @p parts hold window [@p window_offset, + @p window_bytes) of this rank's all-ranks input;
 * @p recv gets the part of the reduced window that is this rank's slice.
 */
ncclResult_t ireducescatter(void* coll_comm, int nparts, const Part* parts, void* recv,
                            size_t bytes_per_rank, size_t window_offset, size_t window_bytes,
                            ncclDataType_t dtype, ncclRedOp_t op, void** request);
/** Host memory needs no flush: completes at once (null request). */
ncclResult_t iflush(void* coll_comm, void* data, int size, void* mhandle, void** request);
ncclResult_t test(void* request, int* done, int* size);
ncclResult_t closeColl(void* coll_comm);
ncclResult_t closeListen(void* listen_comm);

}  // namespace rd::nccl::collnet
