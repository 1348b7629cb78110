// SPDX-License-Identifier: BSD-3-Clause
#include "host_buffers.h"

#include <c10/util/Exception.h>

#include "tensor_types.h"

namespace rd::torch_backend {

at::Tensor hostBuffer(const at::Tensor& t) {
  if (t.device().is_cpu() && t.is_contiguous()) return t;
  return t.to(at::kCPU).contiguous();
}

at::Tensor hostCopy(const at::Tensor& t) {
  return t.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous();
}

void copyBack(const at::Tensor& t, const at::Tensor& buffer) {
  if (!buffer.is_same(t)) t.copy_(buffer.view(t.sizes()));
}

at::Tensor flatHostConcat(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const auto& t : tensors) flat.push_back(t.reshape({-1}).to(at::kCPU));
  return at::cat(flat);
}

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

void checkRank(int64_t rank, int size, const char* op, const char* role) {
  TORCH_CHECK_VALUE(rank >= 0 && rank < size, "libreduce: ", op, " ", role, " ", rank,
                    " is not a rank of this group of ", size);
}

}  // namespace rd::torch_backend
