// SPDX-License-Identifier: BSD-3-Clause
// The payload of one UCX active message: eager bytes that UCX keeps for us (persistent data) or
// a rendezvous descriptor that is fetched straight into the caller's buffer.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>

#include "transport/transport.h"
#include "transport/ucx/ucx_worker.h"

namespace rd::transport {

/** Shared between the AM callback and the Payload handed to the owner. */
struct UcxMessage {
  std::shared_ptr<WorkerRef> worker;  // its worker is null once gone: nothing left to release
  void* data = nullptr;               // eager bytes or rendezvous descriptor
  size_t len = 0;
  bool rendezvous = false;
  bool ucx_owned = false;   // eager bytes UCX keeps until ucp_am_data_release
  bool done = false;        // delivered or discarded
  bool in_callback = true;  // inside the AM callback: UCX frees on return, nothing to release
  bool fetch_started = false;
  std::unique_ptr<char[]> copy;  // eager bytes UCX would not keep, copied for a held payload

  /** What the AM callback returns once the owner's handler is done with the message. */
  ucs_status_t finishCallback();
};

class UcxPayload final : public PayloadImpl {
 public:
  explicit UcxPayload(std::shared_ptr<UcxMessage> msg) : msg_(std::move(msg)) {}
  ~UcxPayload() override;
  size_t size() const override { return msg_->len; }
  const void* data() const override;
  bool keepsData() const override;
  void receiveInto(void* dst, MemRegion region, Completion done) override;
  void discard() override;

 private:
  std::shared_ptr<UcxMessage> msg_;
};

}  // namespace rd::transport
