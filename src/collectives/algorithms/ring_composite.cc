// SPDX-License-Identifier: BSD-3-Clause
#include "collectives/algorithms/ring_composite.h"

#include <cstring>
#include <memory>
#include <new>

#include "common/dtype.h"
#include "common/status.h"

namespace rd::coll {
namespace {

// Scratch memory for the operation; nullptr (with the error set) when it cannot be had.
std::shared_ptr<char[]> scratchBytes(uint64_t bytes) {
  std::shared_ptr<char[]> p(new (std::nothrow) char[bytes == 0 ? 1 : bytes]);
  if (!p)
    setErrorf(rdOutOfMemory, "cannot allocate %llu bytes of scratch memory",
              static_cast<unsigned long long>(bytes));
  return p;
}

void asByteSum(OpDesc* d, void* buffer, uint64_t bytes) {
  d->coll = Collective::kAllReduce;
  d->send = buffer;
  d->recv = buffer;
  d->count = bytes;
  d->dtype = rdUint8;
  d->op = rdSum;
}

}  // namespace

rdResult_t asRingAllReduce(OpDesc* d, uint32_t rank, uint32_t nranks) {
  size_t esize = dtypeSize(d->dtype);
  uint64_t bytes = d->count * esize;
  switch (d->coll) {
    case Collective::kAllReduce:
      if (d->count != 0) break;
      [[fallthrough]];
    case Collective::kBarrier:
      // One byte around the ring (an empty ring all-reduce waits for nobody).
      d->scratch = scratchBytes(1);
      if (!d->scratch) return rdOutOfMemory;
      static_cast<char*>(d->scratch.get())[0] = 0;
      asByteSum(d, d->scratch.get(), 1);
      break;
    case Collective::kBroadcast: {
      // Every rank but the root contributes zeros.
      if (rank == d->root) {
        if (d->send != d->recv && bytes != 0) std::memmove(d->recv, d->send, bytes);
      } else if (bytes != 0) {
        std::memset(d->recv, 0, bytes);
      }
      asByteSum(d, d->recv, bytes);
      break;
    }
    case Collective::kAllGather: {
      // Each rank contributes its part in its own slot and zeros elsewhere.
      char* out = static_cast<char*>(d->recv);
      char* mine = out + rank * bytes;
      if (bytes != 0) {
        if (d->send != mine) std::memmove(mine, d->send, bytes);
        std::memset(out, 0, rank * bytes);
        std::memset(mine + bytes, 0, (nranks - rank - 1) * bytes);
      }
      asByteSum(d, out, bytes * nranks);
      break;
    }
    case Collective::kReduceScatter: {
      // The whole reduction into scratch; this rank keeps its part.
      auto scratch = scratchBytes(bytes * nranks);
      if (!scratch) return rdOutOfMemory;
      if (bytes != 0) std::memcpy(scratch.get(), d->send, bytes * nranks);
      char* part = scratch.get() + rank * bytes;
      void* recv = d->recv;
      d->on_success = [recv, part, bytes] {
        if (bytes != 0) std::memcpy(recv, part, bytes);
      };
      d->scratch = scratch;
      d->coll = Collective::kAllReduce;
      d->send = scratch.get();
      d->recv = scratch.get();
      d->count *= nranks;
      break;
    }
  }
  return rdSuccess;
}

}  // namespace rd::coll
