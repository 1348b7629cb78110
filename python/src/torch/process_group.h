// SPDX-License-Identifier: BSD-3-Clause
// The c10d backend "libreduce": torch.distributed collectives through libreduce (torch 2.x).
//
// A c10d::Backend, which torch wraps in a ProcessGroup and routes to by device
// ("libreduce", "cpu:libreduce", "cpu:gloo,cuda:libreduce"). Newer torch hooks are used where
// torch's own C10D_BACKEND_HAS_* macros say they exist, so one source builds for a range.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "libreduce/reduce.h"
#include "work.h"

namespace rd::torch_backend {

/**
 * Every rank of the group joins one libreduce communicator (reducers, or a ring among the
 * ranks when there are none) and runs torch's collectives on it. Tensors may be on the CPU or
 * a CUDA device (staged through host memory) and need not be contiguous. Every collective is
 * asynchronous: the work completes on a completion thread; its future holds the output tensors.
 * Argument errors raise at the call; failures of the operation (a dead rank or reducer, a
 * timeout) raise from wait() and the future, and getError() reports them.
 */
class ProcessGroupLibreduce : public c10d::Backend {
 public:
  /** What a group is created with (torch's Options: timeout, group name, global ranks). */
  struct Options : c10d::Backend::Options {
    explicit Options(std::chrono::milliseconds group_timeout = kBackendDefaultTimeout);
    /** "none", "bf16" or "fp16" (wire compression); "" = LIBREDUCE_WIRE_DTYPE. */
    std::string wire_dtype;
    /**
     * An independent copy. Newer torch declares it virtual and calls it when it splits a group
     * (so it overrides there without saying so); older torch has no such method.
     */
    // NOLINTNEXTLINE(modernize-use-override): torch 2.11's Options has no clone() to override.
    c10::intrusive_ptr<c10d::Backend::Options> clone() const;
  };

  /**
   * Joins a new communicator through @p store (the group's store: rank 0 creates the
   * communicator and publishes its id there, without the job secret, which every rank reads
   * from its own LIBREDUCE_SECRET_FILE). Blocks until every rank has joined, or fails naming
   * who did not come.
   */
  ProcessGroupLibreduce(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                        c10::intrusive_ptr<Options> options);
  ~ProcessGroupLibreduce() override;

  const std::string getBackendName() const override { return "libreduce"; }
  c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() override { return options_; }

  // --- the group's life (process_group_lifecycle.cc) ---
  /** A new communicator of the ranks @p ranks (group ranks, sorted) of this one; null here if
   * this rank is not one of them. Every rank of this group calls it. */
  bool supportsSplitting() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> split(
      const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
      const c10::intrusive_ptr<c10d::Backend::Options>& opts) override;
  /**
   * The group's timeout from now on: how long wait() without a timeout of its own waits for a
   * work created later. The library's wait for a silent peer stays what the group was created
   * with (a shorter group timeout only makes wait() raise sooner).
   */
  void setTimeout(std::chrono::milliseconds timeout) override;
  /**
   * TIMEOUT or COMM_ERROR once the communicator has failed or an operation failed for a lost or
   * silent peer; SUCCESS before.
   */
  c10d::ErrorType getError() override;
  /** Fails every operation in flight at once and releases the communicator; never blocks. */
  void abort() override;
  /** Lets the operations in flight finish (each bounded by the timeout), then leaves. */
  void shutdown() override;
  /** Operations this rank has started in this group. */
  uint64_t getSequenceNumberForGroup() override { return sequence_number_.load(); }
#ifdef C10D_BACKEND_HAS_HOOKS
  /**
   * Abort hooks (torch 2.12+): run when an operation fails for a lost or silent peer (on the
   * thread that completes it) and when the group is aborted, before anything is torn down.
   */
  bool supportsAbortHooks() const override {
    return true;
  }
  void registerAbortHook(int64_t hook_id, c10d::AbortHook hook) override {
    failures_->addHook(hook_id, std::move(hook));
  }
  void unregisterAbortHook(int64_t hook_id) override {
    failures_->removeHook(hook_id);
  }
#endif

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  // The functional collectives' (DTensor, torch.compile) and FSDP's: one work for the list.
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // Point-to-point and what is built on it (process_group_p2p.cc): a send and a receive per
  // peer, each operation with a tag of its own below 0, so they never take a user's message.
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  /**
   * Every rank reports to rank 0, which waits for each up to the barrier's timeout and then
   * releases them; rank 0 raises naming the ranks that did not come (the first one, unless
   * @p wait_all_ranks), and the others raise when rank 0 does not release them.
   */
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;

 private:
  // Posts one request on the communicator it is given.
  using Post = std::function<rdResult_t(rdComm_t, rdRequest_t*)>;
  // Posts through @p post and wraps the request in a work; a communicator that has already
  // failed gives a failed work, so the error surfaces in wait() like any other.
  c10::intrusive_ptr<c10d::Work> launch(c10d::OpType type, const char* name, const Post& post,
                                        std::vector<at::Tensor> outputs,
                                        std::vector<at::Tensor> keep_alive,
                                        std::function<void()> on_success);
  // launch() for an operation of several requests: one work that ends when all have.
  c10::intrusive_ptr<c10d::Work> launchAll(c10d::OpType type, const char* name,
                                           const std::vector<Post>& posts,
                                           std::vector<at::Tensor> outputs,
                                           std::vector<at::Tensor> keep_alive,
                                           std::function<void()> on_success);

  // One operation of a coalesced list: its post and the staging buffers it reads and writes.
  struct CoalescedPart {
    Post post;
    at::Tensor in, out;
  };
  // One work for @p count operations, part(i) checking and staging the i-th; each output gets
  // its buffer back when all are done.
  c10::intrusive_ptr<c10d::Work> launchCoalesced(const char* name,
                                                 const std::vector<at::Tensor>& outputs,
                                                 size_t count,
                                                 const std::function<CoalescedPart(size_t)>& part);
  // Every rank's @p input, in rank order, into @p outs (all-gather).
  c10::intrusive_ptr<c10d::Work> gatherParts(c10d::OpType type, const char* name,
                                             const at::Tensor& input,
                                             const std::vector<at::Tensor>& outs);
  // A send (@p is_send) or receive of @p t with @p peer (or RD_ANY_SOURCE) under @p tag.
  c10::intrusive_ptr<c10d::Work> pointToPoint(c10d::OpType type, const char* name, bool is_send,
                                              const at::Tensor& t, int peer, int tag);

  // The communicator, or an error naming why there is none (shut down, aborted).
  rdComm_t comm(const char* op) const;
  // shutdown()'s work, also the destructor's (which must not call a virtual method).
  void release();

  c10::intrusive_ptr<Options> options_;
  std::atomic<uint64_t> sequence_number_{0};
  std::shared_ptr<GroupFailures> failures_ = std::make_shared<GroupFailures>();
  std::vector<uint8_t> barrier_tokens_;  // what the monitored barrier receives into
  // Set at creation; abort() and shutdown() take it (under comm_mu_) and release it once.
  mutable std::mutex comm_mu_;
  rdComm_t comm_ = nullptr;
  const char* gone_ = nullptr;  // "shut down" / "aborted" once comm_ is released
  // Declared last: destroyed first, so queued works complete before the communicator goes.
  std::unique_ptr<CompletionThreads> completions_;
};

}  // namespace rd::torch_backend
