// SPDX-License-Identifier: BSD-3-Clause
// Portable kernels: baseline instruction set only. Runs on any CPU; the fallback when neither
// AVX2 nor AVX-512 is available, and selectable with LIBREDUCE_CPU_ISA=scalar.
#define RD_ISA_NAMESPACE scalar
#define RD_VEC_BYTES 16
#include "cpu/reduce_body.inl"
#include "cpu/wide_sum_body.inl"
