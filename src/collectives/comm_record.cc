// SPDX-License-Identifier: BSD-3-Clause
// What a collective leaves behind once it completes: its figures in the process's metrics
// (LIBREDUCE_METRICS) and its spans in the timeline (LIBREDUCE_TRACE).
#include <mutex>
#include <string>

#include "collectives/communicator.h"
#include "collectives/worker_metrics.h"
#include "common/dtype.h"
#include "common/trace.h"

namespace rd::coll {

namespace {

// The operation and its phases: waiting to go (queued), its chunks out and their results back
// (transfer), and what follows the last result (finish: unpacking, the request's completion).
void traceCollective(trace::Tracer* tracer, trace::Span op, const Request::Timeline& t) {
  tracer->record(op);
  const auto zero = trace::Clock::time_point{};
  const auto sent = t.first_sent == zero ? op.end : t.first_sent;
  const auto landed = t.last_landed == zero || t.last_landed < sent ? sent : t.last_landed;
  trace::Span phase = op;
  phase.category = "phase";
  phase.name = "queued";
  phase.end = sent;
  tracer->record(phase);
  if (t.first_sent == zero) return;  // nothing went out (failed before, or no data)
  phase.name = "transfer";
  phase.begin = sent;
  phase.end = landed;
  tracer->record(phase);
  phase.name = "finish";
  phase.begin = landed;
  phase.end = op.end;
  tracer->record(phase);
}

}  // namespace

void Communicator::recordWhenComplete(const OpDesc& desc, Request* request) const {
  WorkerMetrics* metrics = WorkerMetrics::get();
  trace::Tracer* tracer = trace::Tracer::get();
  if (metrics == nullptr && tracer == nullptr) return;
  static const char* const kNames[] = {"AllReduce", "ReduceScatter", "AllGather", "Broadcast",
                                       "Barrier"};  // NCCL's spelling
  CollectiveRecord r;
  r.comm_id = config_.comm_id;
  r.nranks = config_.nranks;
  r.collective = kNames[static_cast<int>(desc.coll)];
  r.algorithm = desc.algorithm == rdAlgoRing ? "RING" : "RS";
  r.bytes = desc.count * dtypeSize(desc.dtype);
  const auto posted = Clock::now();
  if (tracer != nullptr) {
    // Named once per process: its first communicator's rank.
    static std::once_flag named;
    std::call_once(named, [&] {
      tracer->setProcessName("rank " + std::to_string(config_.rank) + " of " +
                             std::to_string(config_.nranks));
      tracer->setTrackLabel("rank");
    });
  }
  const uint32_t rank = config_.rank;
  // The request runs this while it is alive (inside its complete()).
  request->onComplete([metrics, tracer, r, posted, request, rank]() mutable {
    const auto done = Clock::now();
    r.seconds = std::chrono::duration<double>(done - posted).count();
    r.ok = request->outcome() == rdSuccess;
    if (metrics != nullptr) metrics->record(r);
    if (tracer == nullptr) return;
    const Request::Timeline t = request->timeline();
    trace::Span op;
    op.name = r.collective;
    op.category = r.ok ? "op" : "op failed";
    op.begin = posted;
    op.end = done;
    op.track = rank;
    op.comm = r.comm_id;
    op.op = t.seq;
    op.bytes = r.bytes;
    op.algorithm = r.algorithm;
    traceCollective(tracer, op, t);
  });
}

}  // namespace rd::coll
