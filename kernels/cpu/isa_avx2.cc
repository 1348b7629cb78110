// SPDX-License-Identifier: BSD-3-Clause
// AVX2 + F16C kernels (32-byte vectors). Built with -mavx2 -mf16c; called only when the
// running CPU reports both.
#define RD_ISA_NAMESPACE avx2
#define RD_VEC_BYTES 32
#include "cpu/reduce_body.inl"
#include "cpu/wide_sum_body.inl"
