// SPDX-License-Identifier: BSD-3-Clause
// One UCP worker as the progress engine drives it: its event fd, its progress, the endpoints
// being closed, and the sends and receives in flight. A transport owns one while it lives; at
// stop it hands the worker to the engine, which finishes the closes (bounded) and then destroys
// it, so destroying a communicator never waits on a dead or frozen peer.
//
// Closing an endpoint: flush it (what was sent reaches a healthy peer), then close it forcibly;
// one that does not flush in time (a frozen peer) is force-closed at its deadline, which purges
// what is still queued for it. UCX (1.13) asserts when a worker is destroyed with a request still
// on one of its endpoints (an unreleased close, an unpurged send): none is left by then.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "transport/progress_engine.h"
#include "transport/transport.h"
#include "transport/ucx/ucx_context.h"

namespace rd::transport {

class UcxTransport;
class UcxWorker;

/** What a payload needs of its worker; `worker` is null once the worker is gone. */
struct WorkerRef {
  ucp_worker_h worker = nullptr;
  UcxWorker* source = nullptr;
  ProgressEngine* engine = nullptr;
};

/** A send or receive in flight: its completion and what UCX reads until it completes. */
struct RequestContext {
  UcxWorker* worker = nullptr;
  std::string header;  // sends: UCX needs the header until the send completes
  // Its captures often own what UCX is reading (a message body): kept until the request ends,
  // but no longer called once the owner detached.
  Completion done;
  bool detached = false;
};

class UcxWorker final : public EventSource {
 public:
  /** Makes a worker on the process's UCP context for @p net_devices, with its event fd. */
  static rdResult_t create(ProgressEngine* engine, const std::string& net_devices,
                           std::unique_ptr<UcxWorker>* out);
  /** Frees the closes still running (UCX asserts on unreleased ones) and the worker. */
  ~UcxWorker() override;
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  ucp_worker_h handle() const { return worker_; }
  const std::shared_ptr<UcxContext>& context() const { return context_; }
  /** The worker's address, for peers to make endpoints to it. */
  rdResult_t address(std::string* out) const;
  const std::shared_ptr<WorkerRef>& ref() const { return ref_; }
  UcxTransport* owner() const { return owner_; }
  void setOwner(UcxTransport* owner) { owner_ = owner; }

  /** A context for a send or receive; completeRequest() runs and frees it. */
  RequestContext* newRequest(std::string header, Completion done);
  /** Runs the context's completion (unless detached) and frees it. */
  static void completeRequest(RequestContext* ctx, rdResult_t status);

  /**
   * Closes @p ep: flushed first unless @p failed, force-closed once flushed or at @p deadline.
   * The endpoint is not used again by its owner.
   */
  void closeEndpoint(ucp_ep_h ep, bool failed, Clock::time_point deadline);

  /** Every endpoint still flushing is force-closed now (its queued requests purged). */
  void forceCloseAll();

  /**
   * The owner lets go: no message, failure or completion reaches it from now on (completions
   * of requests still running are dropped when those end).
   */
  void detach();

  /** Sends or receives still running: they may read or write the owner's memory. */
  bool requestsInFlight() const { return !in_flight_.empty(); }

  /**
   * Progresses this worker alone, sleeping on its fd, until no request is in flight or
   * @p deadline passes. For a stop: after it, nothing may touch the owner's memory.
   */
  void drainRequests(Clock::time_point deadline);

  /** Endpoints still being flushed or closed. */
  bool closing() const { return !flushing_.empty() || !closing_.empty(); }

  int eventFd() const override { return efd_; }
  bool progress() override;
  bool armForSleep() override;
  void onTick(Clock::time_point now) override;
  bool finished() const override { return !closing(); }

 private:
  struct Flushing {
    ucp_ep_h ep;
    void* request;  // ucp_ep_flush_nbx's
    Clock::time_point deadline;
  };
  UcxWorker() = default;
  void forceClose(ucp_ep_h ep);
  void advanceClosing(Clock::time_point now);

  std::shared_ptr<UcxContext> context_;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
  UcxTransport* owner_ = nullptr;
  std::shared_ptr<WorkerRef> ref_;
  std::vector<Flushing> flushing_;                 // endpoints flushed before they close
  std::vector<void*> closing_;                     // forced closes still running
  std::unordered_set<RequestContext*> in_flight_;  // sends and receives not completed
};

}  // namespace rd::transport
