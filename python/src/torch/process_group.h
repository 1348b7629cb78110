// The c10d process group "libreduce": torch.distributed collectives through libreduce.
//
// torch 1.x: a c10d::ProcessGroup. torch 2.x: a c10d::Backend, which torch wraps in a
// ProcessGroup and routes to by device ("cpu:libreduce" or "cuda:libreduce").
#pragma once

#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "libreduce/reduce.h"
#include "work.h"

namespace rd::torch_backend {

#if TORCH_VERSION_MAJOR >= 2
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

/**
 * Every rank of the group joins one libreduce communicator (reducers, or a ring among the
 * ranks when there are none) and runs torch's collectives on it. Tensors may be on the CPU or
 * a CUDA device (staged through host memory) and need not be contiguous. Every collective is
 * asynchronous: the work completes on a completion thread; its future holds the output tensors.
 * Argument errors raise at the call; failures of the operation (a dead rank or reducer, a
 * timeout) raise from wait() and the future.
 */
class ProcessGroupLibreduce : public BackendBase {
 public:
  /**
   * Joins the communicator @p unique_id names; blocks until every rank has joined.
   * @p wire_dtype: "none", "bf16" or "fp16" (wire compression); "" = LIBREDUCE_WIRE_DTYPE.
   */
  ProcessGroupLibreduce(const std::string& unique_id, int rank, int size,
                        std::chrono::milliseconds timeout, const std::string& wire_dtype = "");
  ~ProcessGroupLibreduce() override;

  const std::string getBackendName() const override { return "libreduce"; }

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
  using Post = std::function<rdResult_t(rdRequest_t*)>;
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

  // Every rank's @p input, in rank order, into @p outs (all-gather).
  c10::intrusive_ptr<c10d::Work> gatherParts(c10d::OpType type, const char* name,
                                             const at::Tensor& input, std::vector<at::Tensor> outs);
  // A send (@p is_send) or receive of @p t with @p peer (or RD_ANY_SOURCE) under @p tag.
  c10::intrusive_ptr<c10d::Work> pointToPoint(c10d::OpType type, const char* name, bool is_send,
                                              at::Tensor t, int peer, int tag);

  std::chrono::milliseconds timeout_;    // the group's
  std::vector<uint8_t> barrier_tokens_;  // what the monitored barrier receives into
  rdComm_t comm_ = nullptr;
  // Declared last: destroyed first, so queued works complete before the communicator goes.
  std::unique_ptr<CompletionThreads> completions_;
};

}  // namespace rd::torch_backend
