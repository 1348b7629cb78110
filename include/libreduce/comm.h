/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file comm.h
 * @brief libreduce communicators and collectives (included by reduce.h).
 *
 * A communicator is a group of ranks (workers) that reduce through a pool of reducers
 * (`reduce-server` processes), or among themselves with ring all-reduce when no reducers are
 * given. Without reducers the other collectives run as one ring all-reduce each (exact, but
 * all-gather and broadcast move n times the bytes a dedicated algorithm would). Two ways to create
 * one:
 *
 * - NCCL style: rank 0 calls ::rdGetUniqueId, passes the id to every rank out of band, and every
 *   rank calls ::rdCommInitRank.
 * - From the environment (launchers, `reducectl`): ::rdCommInitFromEnv reads LIBREDUCE_REDUCERS,
 *   LIBREDUCE_COMM_ID, RANK / WORLD_SIZE (or LIBREDUCE_RANK / LIBREDUCE_WORLD_SIZE) and the job
 *   secret; see docs/settings.md.
 *
 * Every collective has a blocking form and an asynchronous form that returns an ::rdRequest_t to
 * test or wait on. Operations on one communicator must be posted in the same order on every rank;
 * several may be in flight at once. Every wait for a peer is bounded by LIBREDUCE_TIMEOUT_MS: a
 * dead or frozen rank or reducer makes the operation fail with an error naming it, and the
 * communicator then reports that error on every call until it is destroyed.
 * All functions are thread-safe.
 */
#ifndef LIBREDUCE_COMM_H
#define LIBREDUCE_COMM_H

#include "libreduce/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Size of ::rdUniqueId in bytes. */
#define RD_UNIQUE_ID_BYTES 1024

/** Everything ranks need to find each other: reducer list, communicator id, secret. Opaque. */
typedef struct rdUniqueId {
  char internal[RD_UNIQUE_ID_BYTES];
} rdUniqueId;

/** A communicator (opaque). */
typedef struct rdComm* rdComm_t;

/** An asynchronous operation (opaque); release with ::rdRequestFree. */
typedef struct rdRequest* rdRequest_t;

/**
 * All-reduce algorithms. The communicator's algorithm is resolved once, when it is created, from
 * LIBREDUCE_ALGO, the unique id and ::rdCommConfig_t, and every rank must resolve the same one
 * (the join refuses a rank that differs). Collectives the algorithm does not run (ring has no
 * reduce-scatter of its own) go through the reducers when there are any, else are run as one
 * ring all-reduce.
 */
typedef enum rdAlgorithm {
  /**
   * "auto": as LIBREDUCE_ALGO says. Its default, auto, measures rs and ring per size class with
   * reducers and keeps the faster; without reducers it is the ring.
   */
  rdAlgoDefault = 0,
  rdAlgoReductionServer = 1, /**< "rs": through the reducers. */
  rdAlgoRing = 2,            /**< "ring": ring all-reduce between the workers. */
  rdNumAlgorithms = 3
} rdAlgorithm_t;

/** Name of an algorithm ("auto", "rs", "ring"), or "invalid". */
RD_API const char* rdAlgorithmName(rdAlgorithm_t algorithm);

/** The algorithm called @p name (as LIBREDUCE_ALGO spells it); ::rdInvalidArgument if none. */
RD_API rdResult_t rdAlgorithmFromName(const char* name, rdAlgorithm_t* algorithm);

/**
 * Optional settings for ::rdCommInitRankConfig. Start from RD_COMM_CONFIG_INITIALIZER: fields
 * left at their initial value take the LIBREDUCE_* setting. New fields are only ever appended;
 * `size` tells the library which ones the caller knows.
 */
typedef struct rdCommConfig {
  size_t size;        /**< sizeof(rdCommConfig_t) of the caller. */
  size_t chunk_bytes; /**< 0 = LIBREDUCE_CHUNK_BYTES. */
  int window;         /**< 0 = LIBREDUCE_WINDOW. */
  int timeout_ms;     /**< 0 = LIBREDUCE_TIMEOUT_MS. */
  rdAlgorithm_t algorithm;
  int deterministic; /**< -1 = LIBREDUCE_DETERMINISTIC, 0 = off, 1 = rank order. */
  /**
   * Wire compression (LIBREDUCE_WIRE_DTYPE): the type float32 values of all-reduce and
   * reduce-scatter (sum, avg) and all-gather travel as to the reducers. -1 = the setting;
   * rdFloat32 = none (as they are); rdBfloat16 or rdFloat16 = rounded to nearest even, summed
   * by the reducers in float32 and rounded once. Every rank must choose the same.
   */
  int wire_dtype;
} rdCommConfig_t;

#define RD_COMM_CONFIG_INITIALIZER \
  { sizeof(rdCommConfig_t), 0, 0, 0, rdAlgoDefault, -1, -1 }

/**
 * The wire type called @p name as LIBREDUCE_WIRE_DTYPE spells it: "none" (rdFloat32), "bf16"
 * (rdBfloat16), "fp16" (rdFloat16); ::rdInvalidArgument for other names.
 */
RD_API rdResult_t rdWireDtypeFromName(const char* name, rdDataType_t* wire_dtype);

/** "none", "bf16" or "fp16" for a wire type; "invalid" for other types. */
RD_API const char* rdWireDtypeName(rdDataType_t wire_dtype);

/**
 * Creates a unique id for a new communicator, to be called once (usually on rank 0).
 * Reducers come from LIBREDUCE_REDUCERS and the secret from LIBREDUCE_SECRET(_FILE). Without
 * reducers this process starts a small rendezvous service that lives until the process exits,
 * and the communicator uses ring all-reduce. The id is the communicator's definition: ranks use
 * the reducers it names, whatever their own LIBREDUCE_REDUCERS says.
 */
RD_API rdResult_t rdGetUniqueId(rdUniqueId* id);

/**
 * Like ::rdGetUniqueId with an explicit comma-separated reducer list ("host:port,...") and
 * secret (NULL or "" = none).
 */
RD_API rdResult_t rdGetUniqueIdFor(const char* reducers, const char* secret, rdUniqueId* id);

/**
 * Like ::rdGetUniqueId, for ranks that reach this host the way they reach @p peer_host (a host
 * name or address, e.g. the host of a store the ranks share): without reducers, the rendezvous
 * listens on this host's address on the route toward @p peer_host, unless
 * LIBREDUCE_LISTEN_HOST names one. NULL or "" = ::rdGetUniqueId's choice (MASTER_ADDR, the
 * host name's address, the default route's interface).
 */
RD_API rdResult_t rdGetUniqueIdToward(const char* peer_host, rdUniqueId* id);

/**
 * Removes the job secret from @p id, so that it can be passed through a channel others may read
 * (a torch TCPStore, a file). Every rank that joins with such an id uses its own secret from
 * LIBREDUCE_SECRET(_FILE), as `reducectl` gives each rank, and fails with ::rdInvalidArgument
 * when it has none. An id without a secret is left as it is.
 */
RD_API rdResult_t rdUniqueIdStripSecret(rdUniqueId* id);

/**
 * Joins the communicator described by @p id as @p rank of @p nranks (1..65536). Blocks until
 * every rank has joined every reducer, or fails after LIBREDUCE_TIMEOUT_MS naming the reducer or
 * the ranks that are missing. A wrong secret fails with ::rdAuthFailed on both sides.
 */
RD_API rdResult_t rdCommInitRank(rdComm_t* comm, int nranks, rdUniqueId id, int rank);

/** ::rdCommInitRank with settings; @p config may be NULL. */
RD_API rdResult_t rdCommInitRankConfig(rdComm_t* comm, int nranks, rdUniqueId id, int rank,
                                       const rdCommConfig_t* config);

/**
 * Creates a communicator from the environment: LIBREDUCE_REDUCERS, LIBREDUCE_COMM_ID, the
 * secret, and the rank and size from LIBREDUCE_RANK / LIBREDUCE_WORLD_SIZE or RANK / WORLD_SIZE.
 * Without reducers, rank 0 serves the rendezvous on MASTER_ADDR:(MASTER_PORT + 1) (torch's store
 * owns MASTER_PORT itself) and the ranks use ring all-reduce.
 */
RD_API rdResult_t rdCommInitFromEnv(rdComm_t* comm);

/**
 * Fails every pending operation with ::rdAborted and closes the connections without waiting for
 * any peer. Returns at once (well under a second), even when peers are dead or frozen.
 */
RD_API rdResult_t rdCommAbort(rdComm_t comm);

/** Leaves the communicator and frees it. Bounded in time, also after ::rdCommAbort. */
RD_API rdResult_t rdCommDestroy(rdComm_t comm);

/** Number of ranks. */
RD_API rdResult_t rdCommCount(rdComm_t comm, int* count);

/**
 * What carries this rank's traffic to reducer @p reducer (0-based, in the order the id names
 * them): the UCX transports and devices of its connections, "TL/DEVICE" joined by '+', such as
 * "tcp/eth1" or "rc_mlx5/mlx5_0:1+tcp/eth0"; "A (results: B)" when the results come back
 * another way than the contributions go. Written into @p text (@p len bytes, always
 * terminated, cut short if it does not fit); "" while the links are still being set up, which
 * ends once the first operation has gone through. ::rdInvalidArgument for a reducer the
 * communicator does not have (a ring communicator has none).
 */
RD_API rdResult_t rdCommGetReducerTransports(rdComm_t comm, int reducer, char* text, size_t len);

/** This process's rank. */
RD_API rdResult_t rdCommUserRank(rdComm_t comm, int* rank);

/**
 * The error that failed the communicator (::rdSuccess while healthy). Its text is available
 * through ::rdGetLastError after this call.
 */
RD_API rdResult_t rdCommGetAsyncError(rdComm_t comm, rdResult_t* error);

/**
 * All-reduce of @p count elements: every rank ends with the element-wise reduction of all ranks'
 * @p sendbuf in its @p recvbuf. In place when @p sendbuf == @p recvbuf. Semantics of each
 * operator and dtype as for ::rdLocalReduce (avg divides by the number of ranks).
 */
RD_API rdResult_t rdAllReduce(const void* sendbuf, void* recvbuf, size_t count, rdDataType_t dtype,
                              rdRedOp_t op, rdComm_t comm);

/**
 * Reduce-scatter: rank r receives elements [r * @p recvcount, (r + 1) * @p recvcount) of the
 * reduction of all ranks' @p sendbuf (nranks * @p recvcount elements each).
 */
RD_API rdResult_t rdReduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                  rdDataType_t dtype, rdRedOp_t op, rdComm_t comm);

/** All-gather: @p recvbuf (nranks * @p sendcount elements) gets every rank's @p sendbuf in rank
 * order. */
RD_API rdResult_t rdAllGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                              rdDataType_t dtype, rdComm_t comm);

/** Broadcast of @p root's @p sendbuf into every rank's @p recvbuf (only root's sendbuf is read). */
RD_API rdResult_t rdBroadcast(const void* sendbuf, void* recvbuf, size_t count, rdDataType_t dtype,
                              int root, rdComm_t comm);

/** Returns once every rank has entered the barrier. */
RD_API rdResult_t rdBarrier(rdComm_t comm);

/** Asynchronous forms: post the operation and return a request at once. */
RD_API rdResult_t rdAllReduceAsync(const void* sendbuf, void* recvbuf, size_t count,
                                   rdDataType_t dtype, rdRedOp_t op, rdComm_t comm,
                                   rdRequest_t* request);
RD_API rdResult_t rdReduceScatterAsync(const void* sendbuf, void* recvbuf, size_t recvcount,
                                       rdDataType_t dtype, rdRedOp_t op, rdComm_t comm,
                                       rdRequest_t* request);
RD_API rdResult_t rdAllGatherAsync(const void* sendbuf, void* recvbuf, size_t sendcount,
                                   rdDataType_t dtype, rdComm_t comm, rdRequest_t* request);
RD_API rdResult_t rdBroadcastAsync(const void* sendbuf, void* recvbuf, size_t count,
                                   rdDataType_t dtype, int root, rdComm_t comm,
                                   rdRequest_t* request);
RD_API rdResult_t rdBarrierAsync(rdComm_t comm, rdRequest_t* request);

/** The @p peer of a receive that takes a message from whichever rank sends one first. */
#define RD_ANY_SOURCE (-1)

/**
 * Point-to-point: sends @p count elements of @p buf to rank @p peer with @p tag. Messages
 * from one rank to another with one tag are received in the order they were sent; sends and
 * receives are not ordered with the collectives. A send completes once the receiver has the
 * data (small messages: once they left), so a send to a rank that never receives fails after
 * LIBREDUCE_TIMEOUT_MS, as does a receive that gets no message. A peer whose connection is
 * lost fails the sends to it and the receives from it, naming it; the communicator stays
 * usable. A rank cannot send to itself. Any int is a tag; negative tags are used by libraries
 * built on these calls (the torch backend's gather, scatter and all-to-all), user code should
 * keep to tags >= 0.
 */
RD_API rdResult_t rdSend(const void* buf, size_t count, rdDataType_t dtype, int peer, int tag,
                         rdComm_t comm);

/**
 * Receives a message with @p tag from rank @p peer (or ::RD_ANY_SOURCE) into @p buf. The
 * message must hold exactly @p count elements of @p dtype (anything else fails the receive
 * with ::rdInvalidArgument, naming both, and the message is dropped). @p source (may be NULL)
 * gets the sender's rank.
 */
RD_API rdResult_t rdRecv(void* buf, size_t count, rdDataType_t dtype, int peer, int tag,
                         rdComm_t comm, int* source);

/** Asynchronous forms of ::rdSend and ::rdRecv (::rdRequestSource gives a receive's sender). */
RD_API rdResult_t rdSendAsync(const void* buf, size_t count, rdDataType_t dtype, int peer, int tag,
                              rdComm_t comm, rdRequest_t* request);
RD_API rdResult_t rdRecvAsync(void* buf, size_t count, rdDataType_t dtype, int peer, int tag,
                              rdComm_t comm, rdRequest_t* request);

/**
 * Cancels a receive that no message has matched yet: it completes with ::rdAborted and a later
 * message goes to the next matching receive. Returns ::rdInProgress (and cancels nothing) for
 * any other request: a send, a collective, a receive already matched or complete.
 */
RD_API rdResult_t rdRequestCancel(rdRequest_t request);

/** The rank a completed receive took its message from; -1 for other requests. */
RD_API rdResult_t rdRequestSource(rdRequest_t request, int* source);

/**
 * Calls @p callback(@p arg) once when @p request completes: on a library thread (it must return
 * quickly and must not call into the library), or at once on this thread when the request has
 * already completed. One callback per request; it lets a caller wait on many requests at once.
 */
RD_API rdResult_t rdRequestSetCallback(rdRequest_t request, void (*callback)(void* arg), void* arg);

/** ::rdSuccess when done, ::rdInProgress while running, or the operation's error. */
RD_API rdResult_t rdRequestTest(rdRequest_t request);

/**
 * Waits up to @p timeout_ms (-1 = until the operation ends, which its own timeouts bound).
 * Returns the operation's status, or ::rdInProgress when the wait ran out first.
 */
RD_API rdResult_t rdRequestWait(rdRequest_t request, int timeout_ms);

/** Frees a request. A request still running keeps running; its buffers must stay valid. */
RD_API rdResult_t rdRequestFree(rdRequest_t request);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LIBREDUCE_COMM_H */
