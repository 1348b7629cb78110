// SPDX-License-Identifier: BSD-3-Clause
// The UCP context of the process: made once per set of network devices (ucx_devices.h), shared
// by every UCX transport on them (each has its own worker on it), released with the last of them.
// Making a context reads UCX's configuration and opens every network device: far too slow and
// memory-hungry to do per communicator.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <string>

#include "libreduce/reduce.h"

namespace rd::transport {

class UcxContext {
 public:
  /**
   * The process's context for @p net_devices (a UCX_NET_DEVICES value, "" for UCX's own
   * choice), made on first use (active messages and wakeup).
   */
  static rdResult_t shared(const std::string& net_devices, std::shared_ptr<UcxContext>* out);
  ~UcxContext();
  UcxContext(const UcxContext&) = delete;
  UcxContext& operator=(const UcxContext&) = delete;

  ucp_context_h handle() const { return context_; }

 private:
  UcxContext() = default;
  ucp_context_h context_ = nullptr;
};

/** rdConnectionError "@p what: UCX's text for @p status". */
rdResult_t ucxError(ucs_status_t status, const char* what);

}  // namespace rd::transport
