// SPDX-License-Identifier: BSD-3-Clause
// Tensors as libreduce buffers: contiguous host memory, staged copies, and the argument checks
// every operation of the backend shares.
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <vector>

namespace rd::torch_backend {

/**
 * A contiguous CPU tensor with @p t's data: @p t itself when it already is one, else a copy
 * (CUDA tensors and strided views are staged through it).
 */
at::Tensor hostBuffer(const at::Tensor& t);

/** A private contiguous CPU copy (the input must not change). */
at::Tensor hostCopy(const at::Tensor& t);

/** Writes @p buffer back into @p t unless it is @p t. */
void copyBack(const at::Tensor& t, const at::Tensor& buffer);

/** All of @p tensors, flattened and concatenated into one CPU tensor. */
at::Tensor flatHostConcat(const std::vector<at::Tensor>& tensors);

/** Part @p index of a flat buffer of equal parts, each shaped as @p like. */
at::Tensor part(const at::Tensor& flat, int64_t index, const at::Tensor& like);

size_t byteCount(const at::Tensor& t);

/** Throws unless @p tensors is exactly one usable tensor. */
void checkOne(const std::vector<at::Tensor>& tensors, const char* op);

/** Throws unless @p b is usable and of @p a's element type. */
void checkSameKind(const at::Tensor& a, const at::Tensor& b, const char* op);

/** Throws unless @p parts holds @p size tensors of @p like's type and element count. */
void checkParts(const std::vector<at::Tensor>& parts, const at::Tensor& like, int size,
                const char* op);

/** Throws unless @p rank is a rank of a group of @p size (@p role: "root", "destination" ...). */
void checkRank(int64_t rank, int size, const char* op, const char* role);

}  // namespace rd::torch_backend
