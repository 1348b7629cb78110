// SPDX-License-Identifier: BSD-3-Clause
// The group's life: joining through torch's store, splitting, the timeout, errors, abort and
// shutdown.
//
// Python.h first, as Python requires (the destructor releases the GIL).
#include <Python.h>

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/limits.h"
#include "process_group.h"

namespace rd::torch_backend {
namespace {

// Where rank 0 publishes the communicator's id in the group's store.
constexpr const char* kUniqueIdKey = "libreduce/unique_id";

// The host of the TCP store under @p store ("" for other stores): the other ranks reach it, so
// the rendezvous of a communicator without reducers listens on the address toward it.
std::string storeHost(const c10::intrusive_ptr<c10d::Store>& store) {
  c10::intrusive_ptr<c10d::Store> base = store;
  if (auto* prefixed = dynamic_cast<c10d::PrefixStore*>(store.get())) {
    base = prefixed->getUnderlyingNonPrefixStore();
  }
  auto* tcp = dynamic_cast<c10d::TCPStore*>(base.get());
  return tcp != nullptr ? tcp->getHost() : "";
}

std::string lastError(rdResult_t status) {
  return std::string(rdGetErrorString(status)) + ": " + rdGetLastError();
}

// Rank 0 creates the communicator and publishes its id (without the secret); the others wait
// for it in the store (bounded by the store's timeout).
rdUniqueId exchangeUniqueId(const c10::intrusive_ptr<c10d::Store>& store, int rank) {
  rdUniqueId id{};
  if (rank == 0) {
    rdResult_t status = rdGetUniqueIdToward(storeHost(store).c_str(), &id);
    if (status == rdSuccess) status = rdUniqueIdStripSecret(&id);
    TORCH_CHECK(status == rdSuccess,
                "libreduce: rank 0 could not create the communicator: ", lastError(status));
    const auto* bytes = reinterpret_cast<const uint8_t*>(id.internal);
    store->set(kUniqueIdKey, std::vector<uint8_t>(bytes, bytes + sizeof id.internal));
    return id;
  }
  std::vector<uint8_t> bytes = store->get(kUniqueIdKey);
  TORCH_CHECK_VALUE(bytes.size() <= sizeof id.internal,
                    "libreduce: the unique id in the store has ", bytes.size(),
                    " bytes, more than an id holds");
  std::memcpy(id.internal, bytes.data(), bytes.size());
  return id;
}

}  // namespace

ProcessGroupLibreduce::Options::Options(std::chrono::milliseconds group_timeout)
    : c10d::Backend::Options("libreduce", group_timeout) {}

c10::intrusive_ptr<c10d::Backend::Options> ProcessGroupLibreduce::Options::clone() const {
  return c10::make_intrusive<Options>(*this);
}

ProcessGroupLibreduce::ProcessGroupLibreduce(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                             int size, c10::intrusive_ptr<Options> options)
    : c10d::Backend(rank, size),
      options_(std::move(options)),
      barrier_tokens_(static_cast<size_t>(size)) {
  TORCH_CHECK_VALUE(options_, "libreduce: the group needs its options");
  rdCommConfig_t config = RD_COMM_CONFIG_INITIALIZER;
  // The group's timeout bounds every wait for a peer, as NCCL's watchdog does.
  config.timeout_ms = static_cast<int>(std::clamp<int64_t>(
      options_->timeout.count(), rd::limits::kMinTimeoutMs, rd::limits::kMaxTimeoutMs));
  if (!options_->wire_dtype.empty()) {
    rdDataType_t wire = rdFloat32;
    TORCH_CHECK_VALUE(rdWireDtypeFromName(options_->wire_dtype.c_str(), &wire) == rdSuccess,
                      "libreduce: ", rdGetLastError());
    config.wire_dtype = wire;
  }
  rdUniqueId id = exchangeUniqueId(store, rank);
  rdResult_t status = rdCommInitRankConfig(&comm_, size, id, rank, &config);
  TORCH_CHECK(status == rdSuccess, "libreduce: rank ", rank, " of ", size,
              " could not join its communicator: ", lastError(status));
  completions_ = std::make_unique<CompletionThreads>();
  init();  // torch's logging of the new backend
}

ProcessGroupLibreduce::~ProcessGroupLibreduce() {
  // Python drops the group with the GIL held, while a completion thread may be releasing
  // the last reference to a tensor Python created, which takes the GIL: wait without it.
  PyThreadState* saved = Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr;
  release();
  if (saved != nullptr) PyEval_RestoreThread(saved);
}

rdComm_t ProcessGroupLibreduce::comm(const char* op) const {
  std::lock_guard<std::mutex> lock(comm_mu_);
  TORCH_CHECK(comm_ != nullptr, "libreduce ", op, ": the group was ",
              gone_ != nullptr ? gone_ : "released");
  return comm_;
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupLibreduce::split(
    const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
    const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  auto it = std::find(ranks.begin(), ranks.end(), rank_);
  if (it == ranks.end()) return nullptr;  // not a member: nothing to join
  auto child = c10::make_intrusive<Options>(options_->timeout);
  child->wire_dtype = options_->wire_dtype;
  if (opts) {
    child->timeout = opts->timeout;
    child->group_name = opts->group_name;
    child->global_ranks_in_group = opts->global_ranks_in_group;
    if (auto* ours = dynamic_cast<const Options*>(opts.get())) child->wire_dtype = ours->wire_dtype;
  }
  // The store may be the parent's: the child's keys live under its own name.
  auto child_store =
      c10::make_intrusive<c10d::PrefixStore>("libreduce-split/" + child->group_name, store);
  int child_rank = static_cast<int>(it - ranks.begin());
  return c10::make_intrusive<ProcessGroupLibreduce>(child_store, child_rank,
                                                    static_cast<int>(ranks.size()), child);
}

void ProcessGroupLibreduce::setTimeout(std::chrono::milliseconds timeout) {
  TORCH_CHECK_VALUE(timeout.count() > 0, "libreduce: the timeout must be positive");
  options_->timeout = timeout;
}

c10d::ErrorType ProcessGroupLibreduce::getError() {
  rdResult_t error = rdSuccess;
  {
    std::lock_guard<std::mutex> lock(comm_mu_);
    if (comm_ != nullptr) rdCommGetAsyncError(comm_, &error);
  }
  if (error == rdSuccess) error = failures_->first();
  if (error == rdSuccess) return c10d::ErrorType::SUCCESS;
  return error == rdTimeout ? c10d::ErrorType::TIMEOUT : c10d::ErrorType::COMM_ERROR;
}

void ProcessGroupLibreduce::abort() {
  failures_->runHooks();  // before anything is torn down: what they capture is still there
  std::lock_guard<std::mutex> lock(comm_mu_);
  if (comm_ == nullptr) return;
  // Every operation in flight fails now and the completion threads drain; later calls fail
  // naming the abort. The communicator is freed by shutdown() (or the destructor).
  rdCommAbort(comm_);
  gone_ = "aborted";
}

void ProcessGroupLibreduce::shutdown() {
  release();
}

void ProcessGroupLibreduce::release() {
  rdComm_t comm = nullptr;
  {
    std::lock_guard<std::mutex> lock(comm_mu_);
    std::swap(comm, comm_);  // no new work from here on
    if (gone_ == nullptr) gone_ = "shut down";
  }
  if (comm == nullptr) return;
  // Every posted work completes (or fails) before the communicator goes.
  completions_.reset();
  rdCommDestroy(comm);
}

}  // namespace rd::torch_backend
