// SPDX-License-Identifier: BSD-3-Clause
// The C API of communicators and collectives (include/libreduce/comm.h). It is where the worker
// side meets the reducer: a communicator without reducers joins through a rendezvous served in
// this process (reduction_server/rendezvous_service.h).
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include "collectives/communicator.h"
#include "collectives/unique_id.h"
#include "common/check.h"
#include "common/dtype.h"
#include "common/limits.h"
#include "common/settings.h"
#include "libreduce/reduce.h"
#include "reduction_server/rendezvous_service.h"

struct rdComm {
  std::unique_ptr<rd::coll::Communicator> impl;
};

struct rdRequest {
  std::shared_ptr<rd::coll::Request> request;
  rd::coll::Communicator* comm = nullptr;  // receives only: to cancel them
};

namespace {

using rd::coll::Collective;
using rd::coll::OpDesc;

rdResult_t checkComm(rdComm_t comm) {
  if (comm == nullptr || !comm->impl) return rd::setError(rdInvalidArgument, "comm is NULL");
  return rdSuccess;
}

rdResult_t checkBuffers(const OpDesc& d, uint32_t nranks, uint32_t rank) {
  if (!rd::validDtype(d.dtype)) {
    return rd::setErrorf(rdInvalidArgument, "invalid dtype %d", static_cast<int>(d.dtype));
  }
  if (!rd::validRedOp(d.op)) {
    return rd::setErrorf(rdInvalidArgument, "invalid op %d", static_cast<int>(d.op));
  }
  if (d.count > rd::limits::kMaxCount / nranks) {
    return rd::setErrorf(rdInvalidArgument, "count %llu is too large",
                         static_cast<unsigned long long>(d.count));
  }
  if (d.coll == Collective::kBroadcast && d.root >= nranks) {
    return rd::setErrorf(rdInvalidArgument, "root %u out of range (%u ranks)", d.root, nranks);
  }
  bool reads_send = d.coll != Collective::kBroadcast || rank == d.root;
  if (d.count != 0 && (d.recv == nullptr || (reads_send && d.send == nullptr))) {
    return rd::setError(rdInvalidArgument, "NULL buffer with a non-zero count");
  }
  return rdSuccess;
}

rdResult_t postOp(rdComm_t comm, const OpDesc& desc, rdRequest_t* out) {
  rd::clearLastError();
  if (comm == nullptr || !comm->impl) return rd::setError(rdInvalidArgument, "comm is NULL");
  if (out == nullptr) return rd::setError(rdInvalidArgument, "request is NULL");
  const auto& cfg = comm->impl->config();
  RD_CHECK(checkBuffers(desc, cfg.nranks, cfg.rank));
  std::shared_ptr<rd::coll::Request> request;
  RD_CHECK(comm->impl->post(desc, &request));
  *out = new rdRequest{std::move(request)};
  return rdSuccess;
}

// Blocking form of a posted operation: waits for it (its own timeouts bound the wait).
rdResult_t waitAndFree(rdResult_t posted, rdRequest_t request) {
  if (posted != rdSuccess || request == nullptr) return posted;
  rdResult_t status = request->request->wait(-1);
  delete request;
  return status;
}

rdResult_t runOp(rdComm_t comm, const OpDesc& desc) {
  rdRequest_t request = nullptr;
  rdResult_t posted = postOp(comm, desc, &request);
  return waitAndFree(posted, request);
}

OpDesc makeDesc(Collective coll, const void* send, void* recv, size_t count, rdDataType_t dtype,
                rdRedOp_t op, int root) {
  OpDesc d;
  d.coll = coll;
  d.send = send;
  d.recv = recv;
  d.count = count;
  d.dtype = dtype;
  d.op = op;
  d.root = static_cast<uint32_t>(root < 0 ? UINT32_MAX : root);
  return d;
}

rdResult_t postPointToPoint(bool is_send, const void* buf, size_t count, rdDataType_t dtype,
                            int peer, int tag, rdComm_t comm, rdRequest_t* out) {
  rd::clearLastError();
  if (out != nullptr) *out = nullptr;
  RD_CHECK(checkComm(comm));
  if (out == nullptr) return rd::setError(rdInvalidArgument, "request is NULL");
  const auto& cfg = comm->impl->config();
  if (!rd::validDtype(dtype)) {
    return rd::setErrorf(rdInvalidArgument, "invalid dtype %d", static_cast<int>(dtype));
  }
  const bool any = !is_send && peer == RD_ANY_SOURCE;
  if (!any && (peer < 0 || static_cast<uint32_t>(peer) >= cfg.nranks)) {
    return rd::setErrorf(rdInvalidArgument, "peer %d is not a rank of this communicator (%u ranks)",
                         peer, cfg.nranks);
  }
  if (static_cast<uint32_t>(peer) == cfg.rank) {
    return rd::setErrorf(rdInvalidArgument, "rank %d cannot %s itself", peer,
                         is_send ? "send to" : "receive from");
  }
  if (count > rd::limits::kMaxCount) {
    return rd::setErrorf(rdInvalidArgument, "count %zu is too large", count);
  }
  if (count != 0 && buf == nullptr) {
    return rd::setError(rdInvalidArgument, "NULL buffer with a non-zero count");
  }
  rd::coll::P2PDesc desc;
  desc.buffer = const_cast<void*>(buf);  // only read by a send
  desc.count = count;
  desc.dtype = dtype;
  desc.peer = any ? rd::coll::PointToPoint::kAnySource : peer;
  desc.tag = static_cast<uint32_t>(tag);
  std::shared_ptr<rd::coll::Request> request;
  RD_CHECK(comm->impl->postPointToPoint(is_send, desc, &request));
  *out = new rdRequest{std::move(request), is_send ? nullptr : comm->impl.get()};
  return rdSuccess;
}

}  // namespace

extern "C" {

rdResult_t rdGetUniqueId(rdUniqueId* id) {
  return rdGetUniqueIdToward(nullptr, id);
}

rdResult_t rdGetUniqueIdToward(const char* peer_host, rdUniqueId* id) {
  rd::clearLastError();
  std::string secret;
  RD_CHECK(rd::auth::secretFromSettings(&secret));
  std::string reducers = rd::settings::rawValue(rd::settings::Id::kReducers);
  return rd::coll::makeUniqueId(reducers, secret, &rd::server::startRendezvous, id,
                                peer_host != nullptr ? peer_host : "");
}

rdResult_t rdGetUniqueIdFor(const char* reducers, const char* secret, rdUniqueId* id) {
  rd::clearLastError();
  return rd::coll::makeUniqueId(reducers ? reducers : "", secret ? secret : "",
                                &rd::server::startRendezvous, id);
}

rdResult_t rdUniqueIdStripSecret(rdUniqueId* id) {
  rd::clearLastError();
  return rd::coll::stripSecret(id);
}

rdResult_t rdCommInitRankConfig(rdComm_t* comm, int nranks, rdUniqueId id, int rank,
                                const rdCommConfig_t* config) {
  rd::clearLastError();
  if (comm == nullptr) return rd::setError(rdInvalidArgument, "comm is NULL");
  *comm = nullptr;
  if (nranks < 1 || static_cast<uint32_t>(nranks) > rd::limits::kMaxRanks || rank < 0 ||
      rank >= nranks) {
    return rd::setErrorf(rdInvalidArgument, "rank %d of %d ranks is not valid", rank, nranks);
  }
  rd::coll::CommConfig cfg;
  RD_CHECK(rd::coll::configFromSettings(&cfg));
  RD_CHECK(rd::coll::readUniqueId(id, &cfg));
  RD_CHECK(rd::coll::applyConfig(config, &cfg));
  cfg.rank = static_cast<uint32_t>(rank);
  cfg.nranks = static_cast<uint32_t>(nranks);
  std::unique_ptr<rd::coll::Communicator> impl;
  RD_CHECK(rd::coll::Communicator::create(cfg, &impl));
  *comm = new rdComm{std::move(impl)};
  return rdSuccess;
}

rdResult_t rdCommInitRank(rdComm_t* comm, int nranks, rdUniqueId id, int rank) {
  return rdCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

rdResult_t rdCommInitFromEnv(rdComm_t* comm) {
  rd::clearLastError();
  if (comm == nullptr) return rd::setError(rdInvalidArgument, "comm is NULL");
  *comm = nullptr;
  rd::coll::CommConfig cfg;
  RD_CHECK(rd::coll::configFromSettings(&cfg));
  RD_CHECK(rd::coll::configFromLauncherEnv(&rd::server::startRendezvous, &cfg));
  if (!cfg.id_rendezvous.empty()) RD_CHECK(rd::coll::drawCommId(&cfg));
  std::unique_ptr<rd::coll::Communicator> impl;
  RD_CHECK(rd::coll::Communicator::create(cfg, &impl));
  *comm = new rdComm{std::move(impl)};
  return rdSuccess;
}

rdResult_t rdCommAbort(rdComm_t comm) {
  rd::clearLastError();
  RD_CHECK(checkComm(comm));
  comm->impl->abort();
  return rdSuccess;
}

rdResult_t rdCommDestroy(rdComm_t comm) {
  rd::clearLastError();
  if (comm == nullptr) return rdSuccess;
  delete comm;
  return rdSuccess;
}

rdResult_t rdCommCount(rdComm_t comm, int* count) {
  RD_CHECK(checkComm(comm));
  if (count == nullptr) return rd::setError(rdInvalidArgument, "count is NULL");
  *count = static_cast<int>(comm->impl->config().nranks);
  return rdSuccess;
}

rdResult_t rdCommGetReducerTransports(rdComm_t comm, int reducer, char* text, size_t len) {
  RD_CHECK(checkComm(comm));
  if (text == nullptr || len == 0) return rd::setError(rdInvalidArgument, "no room for the text");
  if (reducer < 0) return rd::setError(rdInvalidArgument, "reducer is negative");
  std::string transports;
  RD_CHECK(comm->impl->reducerTransports(static_cast<uint32_t>(reducer), &transports));
  std::snprintf(text, len, "%s", transports.c_str());
  return rdSuccess;
}

rdResult_t rdCommUserRank(rdComm_t comm, int* rank) {
  RD_CHECK(checkComm(comm));
  if (rank == nullptr) return rd::setError(rdInvalidArgument, "rank is NULL");
  *rank = static_cast<int>(comm->impl->config().rank);
  return rdSuccess;
}

rdResult_t rdCommGetAsyncError(rdComm_t comm, rdResult_t* error) {
  RD_CHECK(checkComm(comm));
  if (error == nullptr) return rd::setError(rdInvalidArgument, "error is NULL");
  *error = comm->impl->asyncError();
  return rdSuccess;
}

rdResult_t rdAllReduceAsync(const void* sendbuf, void* recvbuf, size_t count, rdDataType_t dtype,
                            rdRedOp_t op, rdComm_t comm, rdRequest_t* request) {
  return postOp(comm, makeDesc(Collective::kAllReduce, sendbuf, recvbuf, count, dtype, op, 0),
                request);
}

rdResult_t rdReduceScatterAsync(const void* sendbuf, void* recvbuf, size_t recvcount,
                                rdDataType_t dtype, rdRedOp_t op, rdComm_t comm,
                                rdRequest_t* request) {
  return postOp(comm,
                makeDesc(Collective::kReduceScatter, sendbuf, recvbuf, recvcount, dtype, op, 0),
                request);
}

rdResult_t rdAllGatherAsync(const void* sendbuf, void* recvbuf, size_t sendcount,
                            rdDataType_t dtype, rdComm_t comm, rdRequest_t* request) {
  return postOp(comm,
                makeDesc(Collective::kAllGather, sendbuf, recvbuf, sendcount, dtype, rdSum, 0),
                request);
}

rdResult_t rdBroadcastAsync(const void* sendbuf, void* recvbuf, size_t count, rdDataType_t dtype,
                            int root, rdComm_t comm, rdRequest_t* request) {
  return postOp(comm, makeDesc(Collective::kBroadcast, sendbuf, recvbuf, count, dtype, rdSum, root),
                request);
}

rdResult_t rdBarrierAsync(rdComm_t comm, rdRequest_t* request) {
  // Through the reducers an empty all-reduce: one chunk that every rank must send (without
  // reducers, one byte around the ring).
  return postOp(comm, makeDesc(Collective::kBarrier, nullptr, nullptr, 0, rdUint8, rdSum, 0),
                request);
}

rdResult_t rdAllReduce(const void* sendbuf, void* recvbuf, size_t count, rdDataType_t dtype,
                       rdRedOp_t op, rdComm_t comm) {
  return runOp(comm, makeDesc(Collective::kAllReduce, sendbuf, recvbuf, count, dtype, op, 0));
}

rdResult_t rdReduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount, rdDataType_t dtype,
                           rdRedOp_t op, rdComm_t comm) {
  return runOp(comm,
               makeDesc(Collective::kReduceScatter, sendbuf, recvbuf, recvcount, dtype, op, 0));
}

rdResult_t rdAllGather(const void* sendbuf, void* recvbuf, size_t sendcount, rdDataType_t dtype,
                       rdComm_t comm) {
  return runOp(comm,
               makeDesc(Collective::kAllGather, sendbuf, recvbuf, sendcount, dtype, rdSum, 0));
}

rdResult_t rdBroadcast(const void* sendbuf, void* recvbuf, size_t count, rdDataType_t dtype,
                       int root, rdComm_t comm) {
  return runOp(comm, makeDesc(Collective::kBroadcast, sendbuf, recvbuf, count, dtype, rdSum, root));
}

rdResult_t rdBarrier(rdComm_t comm) {
  rdRequest_t request = nullptr;
  rdResult_t posted = rdBarrierAsync(comm, &request);
  return waitAndFree(posted, request);
}

rdResult_t rdSendAsync(const void* buf, size_t count, rdDataType_t dtype, int peer, int tag,
                       rdComm_t comm, rdRequest_t* request) {
  return postPointToPoint(true, buf, count, dtype, peer, tag, comm, request);
}

rdResult_t rdRecvAsync(void* buf, size_t count, rdDataType_t dtype, int peer, int tag,
                       rdComm_t comm, rdRequest_t* request) {
  return postPointToPoint(false, buf, count, dtype, peer, tag, comm, request);
}

rdResult_t rdSend(const void* buf, size_t count, rdDataType_t dtype, int peer, int tag,
                  rdComm_t comm) {
  rdRequest_t request = nullptr;
  rdResult_t posted = rdSendAsync(buf, count, dtype, peer, tag, comm, &request);
  return waitAndFree(posted, request);
}

rdResult_t rdRecv(void* buf, size_t count, rdDataType_t dtype, int peer, int tag, rdComm_t comm,
                  int* source) {
  rdRequest_t request = nullptr;
  rdResult_t posted = rdRecvAsync(buf, count, dtype, peer, tag, comm, &request);
  if (posted != rdSuccess) return posted;
  rdResult_t status = request->request->wait(-1);
  if (source != nullptr) *source = request->request->source();
  delete request;
  return status;
}

rdResult_t rdRequestSource(rdRequest_t request, int* source) {
  if (request == nullptr || source == nullptr) {
    return rd::setError(rdInvalidArgument, "request or source is NULL");
  }
  *source = request->request->source();
  return rdSuccess;
}

rdResult_t rdRequestCancel(rdRequest_t request) {
  rd::clearLastError();
  if (request == nullptr) return rd::setError(rdInvalidArgument, "request is NULL");
  if (request->comm == nullptr || !request->comm->cancelReceive(request->request)) {
    return rd::setError(rdInProgress,
                        "only a receive that no message matched yet can be cancelled");
  }
  return rdSuccess;
}

rdResult_t rdRequestSetCallback(rdRequest_t request, void (*callback)(void* arg), void* arg) {
  if (request == nullptr || callback == nullptr) {
    return rd::setError(rdInvalidArgument, "request or callback is NULL");
  }
  request->request->onComplete([callback, arg] { callback(arg); });
  return rdSuccess;
}

rdResult_t rdRequestTest(rdRequest_t request) {
  if (request == nullptr) return rd::setError(rdInvalidArgument, "request is NULL");
  return request->request->test();
}

rdResult_t rdRequestWait(rdRequest_t request, int timeout_ms) {
  if (request == nullptr) return rd::setError(rdInvalidArgument, "request is NULL");
  return request->request->wait(timeout_ms);
}

rdResult_t rdRequestFree(rdRequest_t request) {
  delete request;
  return rdSuccess;
}

}  // extern "C"
