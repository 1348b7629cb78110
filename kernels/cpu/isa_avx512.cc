// SPDX-License-Identifier: BSD-3-Clause
// AVX-512 (F, BW, VL, DQ) kernels (64-byte vectors). Built with -mavx512f -mavx512bw ...; called
// only when the running CPU and OS support them.
#define RD_ISA_NAMESPACE avx512
#define RD_VEC_BYTES 64
#include "cpu/reduce_body.inl"
#include "cpu/wide_sum_body.inl"
