// SPDX-License-Identifier: BSD-3-Clause
// How torch tensors and reduce ops map onto libreduce element types and operators.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <cstddef>
#include <optional>

#include "libreduce/reduce.h"

namespace rd::torch_backend {

/** A reduction as libreduce runs it: element type, operator, libreduce elements per element. */
struct Reduction {
  rdDataType_t dtype;
  rdRedOp_t op;
  size_t lanes;  // 2 for complex tensors, reduced as pairs of reals
  // PREMUL_SUM: every contribution is multiplied by this before the sum (op is rdSum).
  std::optional<double> premultiply;
};

/**
 * The libreduce reduction for @p op on tensors of @p type. bool is reduced as uint8 (sum / max /
 * bor = any, product / min / band = all); complex as pairs of reals for sum and avg; PREMUL_SUM
 * (FSDP's gradient division) as a scaled copy summed, on floating-point and complex tensors.
 * Throws a TypeError for element types without a kernel and NotImplementedError for operators
 * that have none (bitwise ops on integers, PREMUL_SUM on integers), naming what is supported.
 */
Reduction reductionFor(at::ScalarType type, const c10d::ReduceOp& op);

/**
 * Applies @p r's premultiplication to @p buffer in place (nothing without one). @p buffer must be
 * the backend's own (a copy) or a tensor the result overwrites anyway.
 */
void premultiply(at::Tensor& buffer, const Reduction& r);

/** Throws unless @p tensor is dense, of @p type and (CPU or CUDA) usable as a buffer. */
void checkTensor(const at::Tensor& tensor, const char* role);

}  // namespace rd::torch_backend
