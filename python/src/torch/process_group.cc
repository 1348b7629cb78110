// SPDX-License-Identifier: BSD-3-Clause
#include "process_group.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/limits.h"
#include "host_buffers.h"
#include "tensor_types.h"

namespace rd::torch_backend {

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::launch(c10d::OpType type, const char* name,
                                                             const Post& post,
                                                             std::vector<at::Tensor> outputs,
                                                             std::vector<at::Tensor> keep_alive,
                                                             std::function<void()> on_success) {
  return launchAll(type, name, {post}, std::move(outputs), std::move(keep_alive),
                   std::move(on_success));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::launchAll(c10d::OpType type, const char* name,
                                                                const std::vector<Post>& posts,
                                                                std::vector<at::Tensor> outputs,
                                                                std::vector<at::Tensor> keep_alive,
                                                                std::function<void()> on_success) {
  rdComm_t c = comm(name);
  ++sequence_number_;
  std::vector<rdRequest_t> requests;
  std::string error;
  for (const Post& post : posts) {
    rdRequest_t request = nullptr;
    rdResult_t status = post(c, &request);
    if (status == rdSuccess) {
      requests.push_back(request);
      continue;
    }
    std::string message = std::string(rdGetErrorString(status)) + ": " + rdGetLastError();
    // The caller's mistake raises here (before anything was posted: the library checks the
    // arguments of each call alike); a failed communicator fails the work instead.
    if (requests.empty() && (status == rdInvalidArgument || status == rdUnsupported)) {
      TORCH_CHECK_VALUE(false, "libreduce ", name, ": ", message);
    }
    error = message;
    if (status != rdAborted) failures_->record(status);
    break;
  }
  if (requests.empty() && !error.empty()) {
    return c10::make_intrusive<LibreduceWork>(rank_, type, name, error);
  }
  auto work = c10::make_intrusive<LibreduceWork>(rank_, type, name, std::move(requests),
                                                 std::move(outputs), std::move(keep_alive),
                                                 std::move(on_success), error, failures_);
  completions_->enqueue(work);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::allreduce(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  checkOne(tensors, "allreduce");
  at::Tensor t = tensors[0];
  Reduction r = reductionFor(t.scalar_type(), opts.reduceOp);
  at::Tensor buf = hostBuffer(t);  // t itself where it can: the result overwrites it anyway
  premultiply(buf, r);
  size_t count = static_cast<size_t>(buf.numel()) * r.lanes;
  return launch(
      c10d::OpType::ALLREDUCE, "allreduce",
      [&](rdComm_t c, rdRequest_t* req) {
        return rdAllReduceAsync(buf.data_ptr(), buf.data_ptr(), count, r.dtype, r.op, c, req);
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
  premultiply(flat, r);
  size_t count = static_cast<size_t>(flat.numel()) * r.lanes;
  std::vector<at::Tensor> outs = tensors;
  return launch(
      c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced",
      [&](rdComm_t c, rdRequest_t* req) {
        return rdAllReduceAsync(flat.data_ptr(), flat.data_ptr(), count, r.dtype, r.op, c, req);
      },
      tensors, {flat},
      [outs, flat] {
        int64_t offset = 0;
        for (const auto& t : outs) {
          t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
          offset += t.numel();
        }
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::broadcast(
    std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) {
  checkOne(tensors, "broadcast");
  checkRank(opts.rootRank, size_, "broadcast", "root");
  TORCH_CHECK_VALUE(opts.rootTensor == 0, "libreduce: broadcast takes one tensor (rootTensor 0)");
  at::Tensor t = tensors[0];
  at::Tensor buf = hostBuffer(t);
  int root = static_cast<int>(opts.rootRank);
  return launch(
      c10d::OpType::BROADCAST, "broadcast",
      [&](rdComm_t c, rdRequest_t* req) {
        return rdBroadcastAsync(buf.data_ptr(), buf.data_ptr(), byteCount(buf), rdUint8, root, c,
                                req);
      },
      tensors, {buf}, [t, buf] { copyBack(t, buf); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::reduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::ReduceOptions& opts) {
  checkOne(tensors, "reduce");
  checkRank(opts.rootRank, size_, "reduce", "root");
  at::Tensor t = tensors[0];
  Reduction r = reductionFor(t.scalar_type(), opts.reduceOp);
  // An all-reduce whose result only the root keeps: other ranks' tensors stay as they were.
  bool is_root = opts.rootRank == rank_;
  at::Tensor buf = is_root ? hostBuffer(t) : hostCopy(t);
  premultiply(buf, r);
  size_t count = static_cast<size_t>(buf.numel()) * r.lanes;
  return launch(
      c10d::OpType::REDUCE, "reduce",
      [&](rdComm_t c, rdRequest_t* req) {
        return rdAllReduceAsync(buf.data_ptr(), buf.data_ptr(), count, r.dtype, r.op, c, req);
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
      [&](rdComm_t c, rdRequest_t* req) {
        return rdAllGatherAsync(in.data_ptr(), out.data_ptr(), byteCount(in), rdUint8, c, req);
      },
      {output}, {in, out}, [output, out] { copyBack(output, out); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& /*opts*/) {
  TORCH_CHECK_VALUE(!inputs.empty(), "libreduce: allgather_coalesced needs input tensors");
  TORCH_CHECK_VALUE(static_cast<int>(output_lists.size()) == size_,
                    "libreduce: allgather_coalesced needs ", size_,
                    " output lists (one per rank), got ", output_lists.size());
  for (const auto& list : output_lists) {
    TORCH_CHECK_VALUE(list.size() == inputs.size(), "libreduce: allgather_coalesced needs ",
                      inputs.size(), " tensors in every output list, got ", list.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      checkSameKind(inputs[i], list[i], "allgather_coalesced");
      TORCH_CHECK_VALUE(list[i].numel() == inputs[i].numel(),
                        "libreduce: allgather_coalesced output ", i, " has ", list[i].numel(),
                        " elements, its input ", inputs[i].numel());
    }
  }
  // Every input's bytes, one after the other: one all-gather for the whole list.
  std::vector<at::Tensor> bytes;
  bytes.reserve(inputs.size());
  for (const auto& t : inputs) bytes.push_back(hostBuffer(t).reshape({-1}).view(at::kByte));
  at::Tensor in = at::cat(bytes);
  at::Tensor flat = at::empty({size_ * in.numel()}, in.options());
  std::vector<at::Tensor> outputs;
  for (const auto& list : output_lists) outputs.insert(outputs.end(), list.begin(), list.end());
  return launch(
      c10d::OpType::ALLGATHER_COALESCED, "allgather_coalesced",
      [&](rdComm_t c, rdRequest_t* req) {
        return rdAllGatherAsync(in.data_ptr(), flat.data_ptr(), byteCount(in), rdUint8, c, req);
      },
      outputs, {in, flat},
      [output_lists, flat, stride = in.numel()] {
        for (size_t r = 0; r < output_lists.size(); ++r) {
          int64_t offset = static_cast<int64_t>(r) * stride;
          for (const auto& out : output_lists[r]) {
            int64_t n = static_cast<int64_t>(byteCount(out));
            out.copy_(flat.narrow(0, offset, n).view(out.scalar_type()).view(out.sizes()));
            offset += n;
          }
        }
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::gatherParts(
    c10d::OpType type, const char* name, const at::Tensor& input,
    const std::vector<at::Tensor>& outs) {
  at::Tensor in = hostBuffer(input);
  at::Tensor flat = at::empty({size_ * in.numel()}, in.options());
  return launch(
      type, name,
      [&](rdComm_t c, rdRequest_t* req) {
        return rdAllGatherAsync(in.data_ptr(), flat.data_ptr(), byteCount(in), rdUint8, c, req);
      },
      outs, {in, flat},
      [outs, flat] {
        for (size_t r = 0; r < outs.size(); ++r) {
          const at::Tensor& out = outs[r];
          out.copy_(part(flat, static_cast<int64_t>(r), out));
        }
      });
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
  premultiply(flat, r);
  at::Tensor out = hostBuffer(output);
  size_t count = static_cast<size_t>(out.numel()) * r.lanes;
  return launch(
      c10d::OpType::REDUCE_SCATTER, "reduce_scatter",
      [&](rdComm_t c, rdRequest_t* req) {
        return rdReduceScatterAsync(flat.data_ptr(), out.data_ptr(), count, r.dtype, r.op, c, req);
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
  // The input must stay as it was: scaled in a copy.
  at::Tensor in = r.premultiply ? hostCopy(input) : hostBuffer(input);
  premultiply(in, r);
  at::Tensor out = hostBuffer(output);
  size_t count = static_cast<size_t>(out.numel()) * r.lanes;
  return launch(
      c10d::OpType::_REDUCE_SCATTER_BASE, "_reduce_scatter_base",
      [&](rdComm_t c, rdRequest_t* req) {
        return rdReduceScatterAsync(in.data_ptr(), out.data_ptr(), count, r.dtype, r.op, c, req);
      },
      {output}, {in, out}, [output, out] { copyBack(output, out); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::launchCoalesced(
    const char* name, const std::vector<at::Tensor>& outputs, size_t count,
    const std::function<CoalescedPart(size_t)>& part) {
  std::vector<Post> posts;
  std::vector<at::Tensor> keep_alive;
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;  // (output, its staging buffer)
  for (size_t i = 0; i < count; ++i) {
    CoalescedPart p = part(i);
    posts.push_back(std::move(p.post));
    keep_alive.insert(keep_alive.end(), {p.in, p.out});
    copies.emplace_back(outputs[i], p.out);
  }
  return launchAll(c10d::OpType::COALESCED, name, posts, outputs, keep_alive, [copies] {
    for (const auto& [output, out] : copies) copyBack(output, out);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& /*opts*/) {
  const char* name = "allgather_into_tensor_coalesced";
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "libreduce: ", name,
                    " needs one output per input, got ", outputs.size(), " and ", inputs.size());
  return launchCoalesced(name, outputs, inputs.size(), [&](size_t i) {
    checkTensor(inputs[i], name);
    checkSameKind(inputs[i], outputs[i], name);
    TORCH_CHECK_VALUE(outputs[i].numel() == size_ * inputs[i].numel(), "libreduce: ", name,
                      " output ", i, " needs ", size_, " x ", inputs[i].numel(), " elements, got ",
                      outputs[i].numel());
    at::Tensor in = hostBuffer(inputs[i]);
    at::Tensor out = hostBuffer(outputs[i]);
    Post post = [in, out](rdComm_t c, rdRequest_t* req) {
      return rdAllGatherAsync(in.data_ptr(), out.data_ptr(), byteCount(in), rdUint8, c, req);
    };
    return CoalescedPart{std::move(post), in, out};
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const char* name = "reduce_scatter_tensor_coalesced";
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "libreduce: ", name,
                    " needs one output per input, got ", outputs.size(), " and ", inputs.size());
  return launchCoalesced(name, outputs, inputs.size(), [&](size_t i) {
    checkTensor(outputs[i], name);
    checkSameKind(outputs[i], inputs[i], name);
    TORCH_CHECK_VALUE(inputs[i].numel() == size_ * outputs[i].numel(), "libreduce: ", name,
                      " input ", i, " needs ", size_, " x ", outputs[i].numel(), " elements, got ",
                      inputs[i].numel());
    Reduction r = reductionFor(outputs[i].scalar_type(), opts.reduceOp);
    // The input must stay as it was: scaled in a copy.
    at::Tensor in = r.premultiply ? hostCopy(inputs[i]) : hostBuffer(inputs[i]);
    premultiply(in, r);
    at::Tensor out = hostBuffer(outputs[i]);
    size_t count = static_cast<size_t>(out.numel()) * r.lanes;
    Post post = [in, out, count, r](rdComm_t c, rdRequest_t* req) {
      return rdReduceScatterAsync(in.data_ptr(), out.data_ptr(), count, r.dtype, r.op, c, req);
    };
    return CoalescedPart{std::move(post), in, out};
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::barrier(
    const c10d::BarrierOptions& /*opts*/) {
  return launch(
      c10d::OpType::BARRIER, "barrier",
      [&](rdComm_t c, rdRequest_t* req) { return rdBarrierAsync(c, req); }, {}, {}, nullptr);
}

}  // namespace rd::torch_backend
