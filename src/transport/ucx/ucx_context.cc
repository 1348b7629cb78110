// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ucx/ucx_context.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "common/settings.h"
#include "common/status.h"

namespace rd::transport {

namespace {

// Room in a TCP receive segment for the headers in front of an eager payload (UCT's, UCP's
// active-message header and libreduce's frame header, together well under this).
constexpr uint64_t kRxSegHeaderRoom = 4 << 10;
// UCX's own default segment, and the largest this raises it to: UCX keeps one segment per
// endpoint that is mid-message, so the segment is memory per connection.
constexpr uint64_t kUcxDefaultRxSeg = 64 << 10;
constexpr uint64_t kMaxRxSeg = (1 << 20) + kRxSegHeaderRoom;

// UCX over TCP receives a message larger than its receive segment in pieces and assembles them
// into a buffer of its own: a 64 KiB chunk with its headers is just over UCX's default 64 KiB,
// and at 1 Gbit/s on 2 cores such chunks cost the workers twice the CPU per byte of 32 KiB ones
// and halved the all-reduce rate (bench/results/cluster-2026-12-05-1gbit). So every message
// sent eagerly (LIBREDUCE_EAGER_BYTES) fits one segment, up to kMaxRxSeg.
void fitEagerMessagesInOneSegment(ucp_config_t* config) {
  if (std::getenv("UCX_TCP_RX_SEG_SIZE") != nullptr) return;  // the user's choice stands
  uint64_t eager = 0;
  if (settings::readSize(settings::Id::kEagerBytes, &eager) != rdSuccess) return;
  const uint64_t segment = std::clamp(eager + kRxSegHeaderRoom, kUcxDefaultRxSeg, kMaxRxSeg);
  // A transport setting goes in by its name within the transport (UCX applies it to every
  // interface that has one; only TCP's does).
  ucp_config_modify(config, "RX_SEG_SIZE", std::to_string(segment).c_str());
}

// Shared memory between the processes of one host goes through UCX's posix transport, not its
// System V one too: every worker opens an interface of each, and System V segments are a
// host-wide count (kernel.shmmni, 4096 by default) that a few hundred ranks and their reducers
// on one host exhaust (ucp_worker_create then fails "Out of memory" at n=256). posix segments
// are files in /dev/shm, bounded by its size. A user's UCX_TLS stands.
void leaveOutSystemVSharedMemory(ucp_config_t* config) {
  if (std::getenv("UCX_TLS") != nullptr) return;
  ucp_config_modify(config, "TLS", "^sysv");
}

}  // namespace

rdResult_t ucxError(ucs_status_t status, const char* what) {
  return setErrorf(rdConnectionError, "%s: %s", what, ucs_status_string(status));
}

rdResult_t UcxContext::shared(const std::string& net_devices, std::shared_ptr<UcxContext>* out) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<UcxContext>> current;  // by net devices
  std::lock_guard<std::mutex> lock(mu);
  if ((*out = current[net_devices].lock())) return rdSuccess;
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return ucxError(st, "ucp_config_read");
  // UCX's own keepalive declares idle endpoints dead after ~20 s when a process is busy; peers
  // that die are seen by the connection (reset) and frozen ones by libreduce's timeouts.
  if (std::getenv("UCX_KEEPALIVE_INTERVAL") == nullptr) {
    ucp_config_modify(config, "KEEPALIVE_INTERVAL", "inf");
  }
  if (!net_devices.empty()) ucp_config_modify(config, "NET_DEVICES", net_devices.c_str());
  fitEagerMessagesInOneSegment(config);
  leaveOutSystemVSharedMemory(config);
  ucp_params_t params{};
  params.field_mask =
      UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  // Workers of this context are made and progressed on different threads: each communicator
  // makes its own on the caller's thread while the progress threads run the others' (and a
  // reducer's lanes each have a thread).
  params.mt_workers_shared = 1;
  params.name = "libreduce";
  std::shared_ptr<UcxContext> context(new UcxContext);
  st = ucp_init(&params, config, &context->context_);
  ucp_config_release(config);
  if (st != UCS_OK) return ucxError(st, "ucp_init");
  current[net_devices] = context;
  *out = std::move(context);
  return rdSuccess;
}

UcxContext::~UcxContext() {
  if (context_ != nullptr) ucp_cleanup(context_);
}

}  // namespace rd::transport
