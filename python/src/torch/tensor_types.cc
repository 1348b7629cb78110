// SPDX-License-Identifier: BSD-3-Clause
#include "tensor_types.h"

#include <c10/util/Exception.h>

namespace rd::torch_backend {
namespace {

constexpr const char* kSupportedTypes =
    "float32, float64, float16, bfloat16, int8, uint8, int32, int64, bool, complex64, "
    "complex128";

rdRedOp_t arithmeticOp(const c10d::ReduceOp& op, at::ScalarType type) {
  switch (static_cast<c10d::ReduceOp::RedOpType>(op)) {
    case c10d::ReduceOp::SUM: return rdSum;
    case c10d::ReduceOp::AVG: return rdAvg;
    case c10d::ReduceOp::PRODUCT: return rdProd;
    case c10d::ReduceOp::MIN: return rdMin;
    case c10d::ReduceOp::MAX: return rdMax;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      TORCH_CHECK_NOT_IMPLEMENTED(false,
                                  "libreduce: bitwise reductions are supported on bool "
                                  "tensors only (BAND, BOR), not on ",
                                  c10::toString(type));
    default:
      TORCH_CHECK_NOT_IMPLEMENTED(false, "libreduce: reduce op ", static_cast<int>(op),
                                  " is not supported; use SUM, AVG, PREMUL_SUM, PRODUCT, MIN or "
                                  "MAX");
  }
}

// bool as uint8 0/1: max is logical or, min logical and.
rdRedOp_t boolOp(const c10d::ReduceOp& op) {
  switch (static_cast<c10d::ReduceOp::RedOpType>(op)) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::MAX:
    case c10d::ReduceOp::BOR: return rdMax;
    case c10d::ReduceOp::PRODUCT:
    case c10d::ReduceOp::MIN:
    case c10d::ReduceOp::BAND: return rdMin;
    default:
      TORCH_CHECK_NOT_IMPLEMENTED(false,
                                  "libreduce: bool tensors reduce with SUM, MAX, BOR "
                                  "(any) or PRODUCT, MIN, BAND (all)");
  }
}

// The factor of a PREMUL_SUM (a number, or a one-element tensor).
double premulFactor(const c10d::ReduceOp& op) {
  const auto* factor = dynamic_cast<const c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK_VALUE(factor != nullptr, "libreduce: PREMUL_SUM without its factor");
  if (factor->tensor_factor.defined()) return factor->tensor_factor.item<double>();
  return factor->double_factor;
}

}  // namespace

Reduction reductionFor(at::ScalarType type, const c10d::ReduceOp& op) {
  if (op.op_ == c10d::ReduceOp::PREMUL_SUM) {
    TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(type) || at::isComplexType(type),
                                "libreduce: PREMUL_SUM needs floating-point or complex tensors, "
                                "not ",
                                c10::toString(type));
    Reduction r = reductionFor(type, c10d::ReduceOp(c10d::ReduceOp::SUM));
    r.premultiply = premulFactor(op);
    return r;
  }
  switch (type) {
    case at::kFloat: return {rdFloat32, arithmeticOp(op, type), 1, std::nullopt};
    case at::kDouble: return {rdFloat64, arithmeticOp(op, type), 1, std::nullopt};
    case at::kHalf: return {rdFloat16, arithmeticOp(op, type), 1, std::nullopt};
    case at::kBFloat16: return {rdBfloat16, arithmeticOp(op, type), 1, std::nullopt};
    case at::kChar: return {rdInt8, arithmeticOp(op, type), 1, std::nullopt};
    case at::kByte: return {rdUint8, arithmeticOp(op, type), 1, std::nullopt};
    case at::kInt: return {rdInt32, arithmeticOp(op, type), 1, std::nullopt};
    case at::kLong: return {rdInt64, arithmeticOp(op, type), 1, std::nullopt};
    case at::kBool: return {rdUint8, boolOp(op), 1, std::nullopt};
    case at::kComplexFloat:
    case at::kComplexDouble: {
      rdRedOp_t rop = arithmeticOp(op, type);
      TORCH_CHECK_NOT_IMPLEMENTED(rop == rdSum || rop == rdAvg,
                                  "libreduce: complex tensors reduce with SUM or AVG only");
      return {type == at::kComplexFloat ? rdFloat32 : rdFloat64, rop, 2, std::nullopt};
    }
    default:
      TORCH_CHECK_TYPE(false, "libreduce: cannot reduce ", c10::toString(type),
                       " tensors; supported: ", kSupportedTypes);
  }
}

void premultiply(at::Tensor& buffer, const Reduction& r) {
  if (r.premultiply) buffer.mul_(*r.premultiply);
}

void checkTensor(const at::Tensor& tensor, const char* role) {
  TORCH_CHECK_VALUE(tensor.defined(), "libreduce: ", role, " tensor is undefined");
  TORCH_CHECK_VALUE(tensor.layout() == at::kStrided, "libreduce: ", role,
                    " tensor must be dense (strided), not sparse");
  TORCH_CHECK_VALUE(tensor.device().is_cpu() || tensor.device().is_cuda(), "libreduce: ", role,
                    " tensor is on ", tensor.device().str(),
                    "; CPU and CUDA tensors are supported");
}

}  // namespace rd::torch_backend
