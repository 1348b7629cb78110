// SPDX-License-Identifier: BSD-3-Clause
/* Uses the installed C API: prints the version and checks one local reduction. */
#include <libreduce/reduce.h>
#include <stdio.h>

int main(void) {
  int version = 0;
  if (rdGetVersion(&version) != rdSuccess) return 1;
  float a[3] = {1, 2, 3}, b[3] = {4, 5, 6}, out[3];
  const void* srcs[2] = {a, b};
  rdResult_t r = rdLocalReduce(srcs, 2, out, 3, rdFloat32, rdSum);
  if (r != rdSuccess) {
    fprintf(stderr, "rdLocalReduce: %s (%s)\n", rdGetErrorString(r), rdGetLastError());
    return 1;
  }
  if (out[0] != 5 || out[1] != 7 || out[2] != 9) return 1;
  printf("downstream C ok: libreduce %d\n", version);
  return 0;
}
