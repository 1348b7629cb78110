// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ucx/ucx_worker.h"

#include <poll.h>

#include "common/check.h"
#include "common/host_limits.h"
#include "common/log.h"
#include "transport/ucx/ucx_transport.h"

namespace rd::transport {

rdResult_t UcxWorker::create(ProgressEngine* engine, const std::string& net_devices,
                             std::unique_ptr<UcxWorker>* out) {
  std::unique_ptr<UcxWorker> w(new UcxWorker);
  RD_CHECK(UcxContext::shared(net_devices, &w->context_));
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // One thread at a time: made on the caller's, then touched by the progress thread only.
  params.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucs_status_t st = ucp_worker_create(w->context_->handle(), &params, &w->worker_);
  if (st != UCS_OK) {
    // UCX says "Out of memory" for a host limit too: name the one that is used up.
    const std::string near = limits::hostLimitsNear();
    if (near.empty()) return ucxError(st, "ucp_worker_create");
    return setErrorf(rdConnectionError, "ucp_worker_create: %s; nearly used up: %s",
                     ucs_status_string(st), near.c_str());
  }
  st = ucp_worker_get_efd(w->worker_, &w->efd_);
  if (st != UCS_OK) return ucxError(st, "ucp_worker_get_efd");
  w->ref_ = std::make_shared<WorkerRef>(WorkerRef{w->worker_, w.get(), engine});
  *out = std::move(w);
  return rdSuccess;
}

UcxWorker::~UcxWorker() {
  if (worker_ == nullptr) return;
  forceCloseAll();
  // Forced closes finish within a progress call or two; one that does not is released before
  // the worker goes (ucp_worker_destroy asserts on an unreleased request).
  for (int round = 0; round < 100 && !closing_.empty(); ++round) {
    ucp_worker_progress(worker_);
    advanceClosing(Clock::now());
  }
  for (void* request : closing_) ucp_request_free(request);
  closing_.clear();
  detach();
  ref_->worker = nullptr;  // payloads still held no longer touch it
  ref_->source = nullptr;
  ucp_worker_destroy(worker_);
  // Requests whose callback UCX never ran went with the worker.
  for (RequestContext* ctx : in_flight_) delete ctx;
}

rdResult_t UcxWorker::address(std::string* out) const {
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  ucs_status_t st = ucp_worker_get_address(worker_, &addr, &len);
  if (st != UCS_OK) return ucxError(st, "ucp_worker_get_address");
  out->assign(reinterpret_cast<const char*>(addr), len);
  ucp_worker_release_address(worker_, addr);
  return rdSuccess;
}

RequestContext* UcxWorker::newRequest(std::string header, Completion done) {
  auto* ctx = new RequestContext{this, std::move(header), std::move(done)};
  in_flight_.insert(ctx);
  return ctx;
}

void UcxWorker::completeRequest(RequestContext* ctx, rdResult_t status) {
  ctx->worker->in_flight_.erase(ctx);
  Completion done = std::move(ctx->done);
  bool detached = ctx->detached;
  delete ctx;
  if (done && !detached) done(status);
}

void UcxWorker::closeEndpoint(ucp_ep_h ep, bool failed, Clock::time_point deadline) {
  if (!failed) {
    ucp_request_param_t param{};
    void* request = ucp_ep_flush_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(request)) {
      flushing_.push_back(Flushing{ep, request, deadline});
      return;
    }
  }
  forceClose(ep);
}

void UcxWorker::forceClose(ucp_ep_h ep) {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* request = ucp_ep_close_nbx(ep, &param);
  if (UCS_PTR_IS_PTR(request)) closing_.push_back(request);
}

void UcxWorker::forceCloseAll() {
  for (Flushing& f : flushing_) {
    ucp_request_free(f.request);  // completed by the forced close, released here
    forceClose(f.ep);
  }
  flushing_.clear();
}

void UcxWorker::advanceClosing(Clock::time_point now) {
  for (size_t i = 0; i < flushing_.size();) {
    Flushing& f = flushing_[i];
    bool flushed = ucp_request_check_status(f.request) != UCS_INPROGRESS;
    if (!flushed && now < f.deadline) {
      ++i;
      continue;
    }
    ucp_request_free(f.request);
    forceClose(f.ep);
    flushing_[i] = flushing_.back();
    flushing_.pop_back();
  }
  for (size_t i = 0; i < closing_.size();) {
    if (ucp_request_check_status(closing_[i]) != UCS_INPROGRESS) {
      ucp_request_free(closing_[i]);
      closing_[i] = closing_.back();
      closing_.pop_back();
    } else {
      ++i;
    }
  }
}

void UcxWorker::detach() {
  owner_ = nullptr;
  for (RequestContext* ctx : in_flight_) ctx->detached = true;
}

void UcxWorker::drainRequests(Clock::time_point deadline) {
  while (!in_flight_.empty() && Clock::now() < deadline) {
    if (progress()) continue;
    if (!armForSleep()) continue;
    pollfd fd{efd_, POLLIN, 0};
    ::poll(&fd, 1, 10);
  }
}

bool UcxWorker::progress() {
  bool progressed = ucp_worker_progress(worker_) != 0;
  if (closing()) advanceClosing(Clock::now());
  return progressed;
}

bool UcxWorker::armForSleep() {
  return ucp_worker_arm(worker_) != UCS_ERR_BUSY;
}

void UcxWorker::onTick(Clock::time_point now) {
  if (closing()) advanceClosing(now);  // flush deadlines pass while the engine sleeps
  if (owner_ != nullptr) owner_->onTick();
}

}  // namespace rd::transport
