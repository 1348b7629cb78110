// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ucx/ucx_payload.h"

#include <cstring>

#include "common/log.h"

namespace rd::transport {

namespace {

void onRecvDone(void* request, ucs_status_t status, size_t /*length*/, void* user_data) {
  UcxWorker::completeRequest(static_cast<RequestContext*>(user_data),
                             status == UCS_OK ? rdSuccess : rdConnectionError);
  ucp_request_free(request);
}

// Gives eager bytes or a rendezvous descriptor back to UCX, unless the worker is gone.
void release(const UcxMessage& m) {
  if (m.worker->worker != nullptr) ucp_am_data_release(m.worker->worker, m.data);
}

}  // namespace

UcxPayload::~UcxPayload() {
  discard();
}

const void* UcxPayload::data() const {
  return msg_->rendezvous || msg_->done ? nullptr : msg_->data;
}

bool UcxPayload::keepsData() const {
  // UCX's persistent eager bytes stay put; others are copied when the callback returns.
  return data() != nullptr && (msg_->ucx_owned || msg_->copy);
}

void UcxPayload::receiveInto(void* dst, MemRegion region, Completion done) {
  UcxMessage& m = *msg_;
  if (m.done) {
    if (done) done(rdInternalError);
    return;
  }
  m.done = true;
  if (!m.rendezvous) {
    if (m.len != 0) std::memcpy(dst, m.data, m.len);
    if (m.ucx_owned && !m.in_callback) release(m);
    m.copy.reset();
    if (done) done(rdSuccess);
    return;
  }
  // Rendezvous: start the fetch from the progress loop, never from inside a UCX callback.
  m.fetch_started = true;
  auto msg = msg_;
  if (msg->worker->worker == nullptr) {  // the transport stopped meanwhile
    if (done) done(rdConnectionError);
    return;
  }
  msg->worker->engine->defer([msg, dst, region, done = std::move(done)]() mutable {
    ucp_worker_h worker = msg->worker->worker;
    // A stopped transport starts no transfer into its owner's memory.
    if (worker == nullptr || msg->worker->source->owner() == nullptr) {
      if (done) done(rdConnectionError);
      return;
    }
    RequestContext* ctx = msg->worker->source->newRequest(std::string(), std::move(done));
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv_am = onRecvDone;
    param.user_data = ctx;
    if (region != nullptr) {
      param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
      param.memh = static_cast<ucp_mem_h>(region);
    }
    ucs_status_ptr_t req = ucp_am_recv_data_nbx(worker, msg->data, dst, msg->len, &param);
    if (UCS_PTR_IS_PTR(req)) return;  // onRecvDone runs later
    ucs_status_t status = UCS_PTR_STATUS(req);
    if (status != UCS_OK) RD_LOG_DEBUG("rendezvous receive failed: %s", ucs_status_string(status));
    UcxWorker::completeRequest(ctx, status == UCS_OK ? rdSuccess : rdConnectionError);
  });
}

void UcxPayload::discard() {
  UcxMessage& m = *msg_;
  if (m.done) return;
  m.done = true;
  m.copy.reset();
  if ((m.ucx_owned || m.rendezvous) && !m.in_callback) release(m);
}

ucs_status_t UcxMessage::finishCallback() {
  in_callback = false;
  if (done) return rendezvous && fetch_started ? UCS_INPROGRESS : UCS_OK;
  // The owner kept the payload for later.
  if (rendezvous || ucx_owned) return UCS_INPROGRESS;
  copy.reset(new char[len]);
  std::memcpy(copy.get(), data, len);
  data = copy.get();
  return UCS_OK;
}

}  // namespace rd::transport
