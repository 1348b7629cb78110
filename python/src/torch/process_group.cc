// Python.h first, as Python requires (the destructor releases the GIL).
#include <Python.h>

#include "process_group.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/limits.h"
#include "tensor_types.h"

namespace rd::torch_backend {
namespace {

// A contiguous CPU tensor with @p t's data: @p t itself when it already is one, else a copy
// (CUDA tensors and strided views are staged through it).
at::Tensor hostBuffer(const at::Tensor& t) {
  if (t.device().is_cpu() && t.is_contiguous()) return t;
  return t.to(at::kCPU).contiguous();
}

// A private contiguous CPU copy (the input must not change).
at::Tensor hostCopy(const at::Tensor& t) {
  return t.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous();
}

// Writes @p buffer back into @p t unless it is @p t.
void copyBack(at::Tensor t, const at::Tensor& buffer) {
  if (!buffer.is_same(t)) t.copy_(buffer.view(t.sizes()));
}

// All of @p tensors, flattened and concatenated into one CPU tensor.
at::Tensor flatHostConcat(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const auto& t : tensors) flat.push_back(t.reshape({-1}).to(at::kCPU));
  return at::cat(flat);
}

// Element @p index's slice of a flat buffer holding @p numel elements per part, shaped as
// @p like.
at::Tensor part(const at::Tensor& flat, int64_t index, const at::Tensor& like) {
  return flat.narrow(0, index * like.numel(), like.numel()).view(like.sizes());
}

size_t byteCount(const at::Tensor& t) {
  return static_cast<size_t>(t.numel()) * t.element_size();
}

void checkOne(const std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK_VALUE(tensors.size() == 1, "libreduce: ", op,
                    " takes exactly one tensor per process, got ", tensors.size());
  checkTensor(tensors[0], op);
}

void checkSameKind(const at::Tensor& a, const at::Tensor& b, const char* op) {
  checkTensor(b, op);
  TORCH_CHECK_TYPE(a.scalar_type() == b.scalar_type(), "libreduce: ", op, " mixes ",
                   c10::toString(a.scalar_type()), " and ", c10::toString(b.scalar_type()),
                   " tensors");
}

void checkParts(const std::vector<at::Tensor>& parts, const at::Tensor& like, int size,
                const char* op) {
  TORCH_CHECK_VALUE(static_cast<int>(parts.size()) == size, "libreduce: ", op, " needs ", size,
                    " tensors (one per rank), got ", parts.size());
  for (const auto& p : parts) {
    checkSameKind(like, p, op);
    TORCH_CHECK_VALUE(p.numel() == like.numel(), "libreduce: ", op,
                      " needs every tensor of the list to have ", like.numel(),
                      " elements, got one with ", p.numel());
  }
}

void checkRoot(int64_t root, int size, const char* op) {
  TORCH_CHECK_VALUE(root >= 0 && root < size, "libreduce: ", op, " root ", root,
                    " is not a rank of this group of ", size);
}

}  // namespace

ProcessGroupLibreduce::ProcessGroupLibreduce(const std::string& unique_id, int rank, int size,
                                             std::chrono::milliseconds timeout,
                                             const std::string& wire_dtype)
    : BackendBase(rank, size) {
  rdUniqueId id{};
  TORCH_CHECK_VALUE(unique_id.size() <= sizeof id.internal,
                    "libreduce: the unique id is too long (", unique_id.size(), " bytes)");
  std::memcpy(id.internal, unique_id.data(), unique_id.size());
  rdCommConfig_t config = RD_COMM_CONFIG_INITIALIZER;
  // The group's timeout bounds every wait for a peer, as NCCL's watchdog does.
  config.timeout_ms = static_cast<int>(
      std::clamp<int64_t>(timeout.count(), rd::limits::kMinTimeoutMs, rd::limits::kMaxTimeoutMs));
  if (!wire_dtype.empty()) {
    rdDataType_t wire = rdFloat32;
    TORCH_CHECK_VALUE(rdWireDtypeFromName(wire_dtype.c_str(), &wire) == rdSuccess,
                      "libreduce: ", rdGetLastError());
    config.wire_dtype = wire;
  }
  rdResult_t status = rdCommInitRankConfig(&comm_, size, id, rank, &config);
  TORCH_CHECK(status == rdSuccess, "libreduce: rank ", rank, " of ", size,
              " could not join its communicator: ", rdGetErrorString(status), ": ",
              rdGetLastError());
  completions_ = std::make_unique<CompletionThread>();
}

ProcessGroupLibreduce::~ProcessGroupLibreduce() {
  // Python drops the group with the GIL held, while the completion thread may be releasing
  // the last reference to a tensor Python created, which takes the GIL: wait without it.
  PyThreadState* saved = Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr;
  completions_.reset();  // every posted work completes (or fails) before the communicator goes
  if (comm_ != nullptr) rdCommDestroy(comm_);
  if (saved != nullptr) PyEval_RestoreThread(saved);
}

template <typename Post>
c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::launch(c10d::OpType type, const char* name,
                                                             Post post,
                                                             std::vector<at::Tensor> outputs,
                                                             std::vector<at::Tensor> keep_alive,
                                                             std::function<void()> on_success) {
  rdRequest_t request = nullptr;
  rdResult_t status = post(&request);
  if (status != rdSuccess) {
    std::string message = std::string(rdGetErrorString(status)) + ": " + rdGetLastError();
    // The caller's mistake raises here; a failed communicator fails the work instead.
    TORCH_CHECK_VALUE(status != rdInvalidArgument && status != rdUnsupported, "libreduce ", name,
                      ": ", message);
    return c10::make_intrusive<LibreduceWork>(rank_, type, name, message);
  }
  auto work = c10::make_intrusive<LibreduceWork>(rank_, type, name, request, std::move(outputs),
                                                 std::move(keep_alive), std::move(on_success));
  completions_->enqueue(work);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::allreduce(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  checkOne(tensors, "allreduce");
  at::Tensor t = tensors[0];
  Reduction r = reductionFor(t.scalar_type(), opts.reduceOp);
  at::Tensor buf = hostBuffer(t);
  size_t count = static_cast<size_t>(buf.numel()) * r.lanes;
  return launch(
      c10d::OpType::ALLREDUCE, "allreduce",
      [&](rdRequest_t* req) {
        return rdAllReduceAsync(buf.data_ptr(), buf.data_ptr(), count, r.dtype, r.op, comm_, req);
      },
      tensors, {buf}, [t, buf] { copyBack(t, buf); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK_VALUE(!tensors.empty(), "libreduce: allreduce_coalesced needs tensors");
  checkTensor(tensors[0], "allreduce_coalesced");
  for (const auto& t : tensors) checkSameKind(tensors[0], t, "allreduce_coalesced");
  Reduction r = reductionFor(tensors[0].scalar_type(), opts.reduceOp);
  at::Tensor flat = flatHostConcat(tensors);  // one request for the whole list
  size_t count = static_cast<size_t>(flat.numel()) * r.lanes;
  std::vector<at::Tensor> outs = tensors;
  return launch(
      c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced",
      [&](rdRequest_t* req) {
        return rdAllReduceAsync(flat.data_ptr(), flat.data_ptr(), count, r.dtype, r.op, comm_, req);
      },
      tensors, {flat},
      [outs, flat] {
        int64_t offset = 0;
        for (auto t : outs) {
          t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
          offset += t.numel();
        }
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::broadcast(
    std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) {
  checkOne(tensors, "broadcast");
  checkRoot(opts.rootRank, size_, "broadcast");
  TORCH_CHECK_VALUE(opts.rootTensor == 0, "libreduce: broadcast takes one tensor (rootTensor 0)");
  at::Tensor t = tensors[0];
  at::Tensor buf = hostBuffer(t);
  int root = static_cast<int>(opts.rootRank);
  return launch(
      c10d::OpType::BROADCAST, "broadcast",
      [&](rdRequest_t* req) {
        return rdBroadcastAsync(buf.data_ptr(), buf.data_ptr(), byteCount(buf), rdUint8, root,
                                comm_, req);
      },
      tensors, {buf}, [t, buf] { copyBack(t, buf); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::reduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::ReduceOptions& opts) {
  checkOne(tensors, "reduce");
  checkRoot(opts.rootRank, size_, "reduce");
  at::Tensor t = tensors[0];
  Reduction r = reductionFor(t.scalar_type(), opts.reduceOp);
  // An all-reduce whose result only the root keeps: other ranks' tensors stay as they were.
  bool is_root = opts.rootRank == rank_;
  at::Tensor buf = is_root ? hostBuffer(t) : hostCopy(t);
  size_t count = static_cast<size_t>(buf.numel()) * r.lanes;
  return launch(
      c10d::OpType::REDUCE, "reduce",
      [&](rdRequest_t* req) {
        return rdAllReduceAsync(buf.data_ptr(), buf.data_ptr(), count, r.dtype, r.op, comm_, req);
      },
      tensors, {buf},
      [t, buf, is_root] {
        if (is_root) copyBack(t, buf);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& /*opts*/) {
  checkOne(inputs, "allgather");
  TORCH_CHECK_VALUE(outputs.size() == 1, "libreduce: allgather takes one output list, got ",
                    outputs.size());
  checkParts(outputs[0], inputs[0], size_, "allgather");
  return gatherParts(c10d::OpType::ALLGATHER, "allgather", inputs[0], outputs[0]);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& /*opts*/) {
  checkTensor(input, "_allgather_base");
  checkSameKind(input, output, "_allgather_base");
  TORCH_CHECK_VALUE(output.numel() == size_ * input.numel(), "libreduce: _allgather_base needs ",
                    size_, " x ", input.numel(), " output elements, got ", output.numel());
  at::Tensor in = hostBuffer(input);
  at::Tensor out = hostBuffer(output);
  return launch(
      c10d::OpType::_ALLGATHER_BASE, "_allgather_base",
      [&](rdRequest_t* req) {
        return rdAllGatherAsync(in.data_ptr(), out.data_ptr(), byteCount(in), rdUint8, comm_, req);
      },
      {output}, {in, out}, [output, out] { copyBack(output, out); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  checkOne(inputs, "gather");
  checkRoot(opts.rootRank, size_, "gather");
  bool is_root = opts.rootRank == rank_;
  std::vector<at::Tensor> outs;
  if (is_root) {
    TORCH_CHECK_VALUE(outputs.size() == 1, "libreduce: gather takes one output list on the root");
    checkParts(outputs[0], inputs[0], size_, "gather");
    outs = outputs[0];
  } else {
    TORCH_CHECK_VALUE(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                      "libreduce: gather takes output tensors on the root only");
  }
  // Gathered everywhere, kept on the root: there is no rooted gather in the library.
  return gatherParts(c10d::OpType::GATHER, "gather", inputs[0], outs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::gatherParts(c10d::OpType type,
                                                                  const char* name,
                                                                  const at::Tensor& input,
                                                                  std::vector<at::Tensor> outs) {
  at::Tensor in = hostBuffer(input);
  at::Tensor flat = at::empty({size_ * in.numel()}, in.options());
  return launch(
      type, name,
      [&](rdRequest_t* req) {
        return rdAllGatherAsync(in.data_ptr(), flat.data_ptr(), byteCount(in), rdUint8, comm_, req);
      },
      outs, {in, flat},
      [outs, flat] {
        for (size_t r = 0; r < outs.size(); ++r) {
          at::Tensor out = outs[r];
          out.copy_(part(flat, static_cast<int64_t>(r), out));
        }
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  checkOne(outputs, "scatter");
  checkRoot(opts.rootRank, size_, "scatter");
  at::Tensor out = outputs[0];
  bool is_root = opts.rootRank == rank_;
  at::Tensor flat;
  if (is_root) {
    TORCH_CHECK_VALUE(inputs.size() == 1, "libreduce: scatter takes one input list on the root");
    checkParts(inputs[0], out, size_, "scatter");
    flat = flatHostConcat(inputs[0]);
  } else {
    TORCH_CHECK_VALUE(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                      "libreduce: scatter takes input tensors on the root only");
    flat = at::empty({size_ * out.numel()}, out.options().device(at::kCPU));
  }
  // The root's list goes to every rank, each keeps its part.
  int root = static_cast<int>(opts.rootRank);
  int64_t me = rank_;
  return launch(
      c10d::OpType::SCATTER, "scatter",
      [&](rdRequest_t* req) {
        return rdBroadcastAsync(flat.data_ptr(), flat.data_ptr(), byteCount(flat), rdUint8, root,
                                comm_, req);
      },
      outputs, {flat}, [out, flat, me]() mutable { out.copy_(part(flat, me, out)); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  checkOne(outputs, "reduce_scatter");
  TORCH_CHECK_VALUE(inputs.size() == 1, "libreduce: reduce_scatter takes one input list, got ",
                    inputs.size());
  at::Tensor output = outputs[0];
  checkParts(inputs[0], output, size_, "reduce_scatter");
  Reduction r = reductionFor(output.scalar_type(), opts.reduceOp);
  at::Tensor flat = flatHostConcat(inputs[0]);
  at::Tensor out = hostBuffer(output);
  size_t count = static_cast<size_t>(out.numel()) * r.lanes;
  return launch(
      c10d::OpType::REDUCE_SCATTER, "reduce_scatter",
      [&](rdRequest_t* req) {
        return rdReduceScatterAsync(flat.data_ptr(), out.data_ptr(), count, r.dtype, r.op, comm_,
                                    req);
      },
      outputs, {flat, out}, [output, out] { copyBack(output, out); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  checkTensor(output, "_reduce_scatter_base");
  checkSameKind(output, input, "_reduce_scatter_base");
  TORCH_CHECK_VALUE(input.numel() == size_ * output.numel(),
                    "libreduce: _reduce_scatter_base needs ", size_, " x ", output.numel(),
                    " input elements, got ", input.numel());
  Reduction r = reductionFor(output.scalar_type(), opts.reduceOp);
  at::Tensor in = hostBuffer(input);
  at::Tensor out = hostBuffer(output);
  size_t count = static_cast<size_t>(out.numel()) * r.lanes;
  return launch(
      c10d::OpType::_REDUCE_SCATTER_BASE, "_reduce_scatter_base",
      [&](rdRequest_t* req) {
        return rdReduceScatterAsync(in.data_ptr(), out.data_ptr(), count, r.dtype, r.op, comm_,
                                    req);
      },
      {output}, {in, out}, [output, out] { copyBack(output, out); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::barrier(
    const c10d::BarrierOptions& /*opts*/) {
  return launch(
      c10d::OpType::BARRIER, "barrier",
      [&](rdRequest_t* req) { return rdBarrierAsync(comm_, req); }, {}, {}, nullptr);
}

}  // namespace rd::torch_backend
