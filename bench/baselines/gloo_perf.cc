// SPDX-License-Identifier: BSD-3-Clause
// gloo_perf: Gloo's CPU collectives measured with rd_perf's flags, sweep, verification and
// table, so libreduce's figures have a baseline taken the same way. All-reduce uses Gloo's
// ring (AllreduceOptions with the RING algorithm, what PyTorch's Gloo backend runs on CPU
// tensors); broadcast and all-gather use Gloo's option-style collectives; reduce-scatter uses
// ReduceScatterHalvingDoubling, the only reduce-scatter this Gloo has.
//
// One process per rank: RANK / WORLD_SIZE (or mpirun's / srun's variables) give the ranks,
// GLOO_STORE_DIR a directory shared by all ranks for the rendezvous, GLOO_PREFIX separates
// runs that reuse the directory, GLOO_IFACE or GLOO_HOSTNAME (default 127.0.0.1) the address.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "perf/perf_runner.h"

namespace {

using rd::perf::Coll;

// Calls fn with a value of the C++ type Gloo reduces @p d as; false for types Gloo lacks
// (bfloat16). float16 is gloo::float16: a Gloo built without AVX (Debian's) has no float16
// kernels, so each element goes through float and back (Gloo's cost, so part of the figure).
template <typename Fn>
bool withType(rdDataType_t d, Fn&& fn) {
  switch (d) {
    case rdInt8: fn(int8_t{}); return true;
    case rdUint8: fn(uint8_t{}); return true;
    case rdInt32: fn(int32_t{}); return true;
    case rdUint32: fn(uint32_t{}); return true;
    case rdInt64: fn(int64_t{}); return true;
    case rdUint64: fn(uint64_t{}); return true;
    case rdFloat16: fn(gloo::float16{}); return true;
    case rdFloat32: fn(float{}); return true;
    case rdFloat64: fn(double{}); return true;
    default: return false;
  }
}

// Element-wise reduction for the option-style all-reduce (Gloo has no avg).
template <typename T>
gloo::AllreduceOptions::Func reduceFunc(rdRedOp_t op) {
  using Fn = void (*)(void*, const void*, const void*, size_t);
  switch (op) {
    case rdSum: return static_cast<Fn>(&gloo::sum<T>);
    case rdProd: return static_cast<Fn>(&gloo::product<T>);
    case rdMin: return static_cast<Fn>(&gloo::min<T>);
    case rdMax: return static_cast<Fn>(&gloo::max<T>);
    default: return nullptr;
  }
}

// The same operators for the old-style algorithm classes.
template <typename T>
const gloo::ReductionFunction<T>* reductionFunction(rdRedOp_t op) {
  switch (op) {
    case rdSum: return gloo::ReductionFunction<T>::sum;
    case rdProd: return gloo::ReductionFunction<T>::product;
    case rdMin: return gloo::ReductionFunction<T>::min;
    case rdMax: return gloo::ReductionFunction<T>::max;
    default: return nullptr;
  }
}

bool reducible(rdDataType_t d, rdRedOp_t op) {
  return op != rdAvg && withType(d, [](auto) {});
}

class GlooBackend final : public rd::perf::Backend {
 public:
  explicit GlooBackend(std::shared_ptr<gloo::Context> context) : ctx_(std::move(context)) {}

  int rank() const override { return ctx_->rank; }
  int nranks() const override { return ctx_->size; }
  std::string name() const override { return "gloo ring"; }

  bool supports(Coll coll, rdDataType_t d, rdRedOp_t op) const override {
    // Broadcast and all-gather only move bytes: every dtype works, the op is irrelevant.
    if (coll == Coll::kBroadcast || coll == Coll::kAllGather) return rdDataTypeSize(d) > 0;
    return reducible(d, op);
  }

  bool run(Coll coll, const void* send, void* recv, size_t count, rdDataType_t d, rdRedOp_t op,
           int root, std::string* error) override {
    if (count == 0) return true;  // Gloo rejects empty buffers
    try {
      switch (coll) {
        case Coll::kAllReduce: allReduce(send, recv, count, d, op); break;
        case Coll::kReduceScatter: return reduceScatter(send, recv, count, d, op, error);
        case Coll::kAllGather: allGather(send, recv, count * rdDataTypeSize(d)); break;
        case Coll::kBroadcast: broadcast(send, recv, count * rdDataTypeSize(d), root); break;
      }
    } catch (const std::exception& e) {
      *error = e.what();
      return false;
    }
    return true;
  }

  double combine(double value, int how) override {
    static const rdRedOp_t kOps[] = {rdSum, rdMin, rdMax};
    try {
      gloo::AllreduceOptions opts(ctx_);
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      opts.setOutput(&value, 1);
      opts.setReduceFunction(reduceFunc<double>(kOps[how]));
      opts.setTag(nextTag());
      gloo::allreduce(opts);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "# rank %d: combining times failed: %s\n", rank(), e.what());
      std::exit(2);
    }
    return value;
  }

 private:
  // Out-of-place passes the input with setInput: Gloo copies it into the output segment by
  // segment inside the ring, which is how a Gloo user avoids a separate copy.
  void allReduce(const void* send, void* recv, size_t count, rdDataType_t d, rdRedOp_t op) {
    withType(d, [&](auto tag) {
      using T = decltype(tag);
      gloo::AllreduceOptions opts(ctx_);
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      if (send != recv) opts.setInput(mutableCast<T>(send), count);
      opts.setOutput(static_cast<T*>(recv), count);
      opts.setReduceFunction(reduceFunc<T>(op));
      opts.setTag(nextTag());
      gloo::allreduce(opts);
    });
  }

  // In place means send = this rank's share of recv (nccl's convention): Gloo then takes the
  // share from the output buffer instead of copying an input.
  void allGather(const void* send, void* recv, size_t share_bytes) {
    auto* out = static_cast<uint8_t*>(recv);
    gloo::AllgatherOptions opts(ctx_);
    if (send != out + static_cast<size_t>(rank()) * share_bytes) {
      opts.setInput(mutableCast<uint8_t>(send), share_bytes);
    }
    opts.setOutput(out, share_bytes * static_cast<size_t>(nranks()));
    opts.setTag(nextTag());
    gloo::allgather(opts);
  }

  // Non-roots may only name an output; the root copies its input over when out of place.
  void broadcast(const void* send, void* recv, size_t bytes, int root) {
    gloo::BroadcastOptions opts(ctx_);
    if (rank() == root && send != recv) opts.setInput(mutableCast<uint8_t>(send), bytes);
    opts.setOutput(static_cast<uint8_t*>(recv), bytes);
    opts.setRoot(root);
    opts.setTag(nextTag());
    gloo::broadcast(opts);
  }

  // ReduceScatterHalvingDoubling reduces a whole buffer in place (destroying it) and leaves
  // this rank's share at the buffer's start. In place (recv inside send) it works on the
  // caller's buffer and moves the share to recv; out of place it works on a copy of the
  // input, as a caller who must keep the input would. The algorithm object registers its
  // buffers with every peer when built, so it is kept for the next call with the same buffer
  // and size (how Gloo's own benchmark runs it); building it once per call would measure
  // registration, not the collective.
  bool reduceScatter(const void* send, void* recv, size_t share, rdDataType_t d, rdRedOp_t op,
                     std::string* error) {
    const size_t esize = rdDataTypeSize(d);
    const size_t total = share * static_cast<size_t>(nranks());
    if (total * esize > static_cast<size_t>(INT_MAX)) {
      *error = "Gloo's ReduceScatterHalvingDoubling counts bytes in an int (at most 2 GiB)";
      return false;
    }
    const auto* in = static_cast<const uint8_t*>(send);
    auto* out = static_cast<uint8_t*>(recv);
    const bool in_place = out >= in && out < in + total * esize;
    uint8_t* work = mutableCast<uint8_t>(send);
    if (!in_place) {
      if (scratch_.size() < total * esize) {
        rs_.algo.reset();  // it points into the old scratch buffer
        scratch_.assign(total * esize, 0);
      }
      work = scratch_.data();
      std::memcpy(work, in, total * esize);
    }
    if (!rs_.algo || rs_.buf != work || rs_.count != total || rs_.dtype != d || rs_.op != op) {
      rs_.algo.reset();
      withType(d, [&](auto tag) {
        using T = decltype(tag);
        rs_.algo = std::make_unique<gloo::ReduceScatterHalvingDoubling<T>>(
            ctx_, std::vector<T*>{reinterpret_cast<T*>(work)}, static_cast<int>(total),
            std::vector<int>(static_cast<size_t>(nranks()), static_cast<int>(share)),
            reductionFunction<T>(op));
      });
      rs_.buf = work;
      rs_.count = total;
      rs_.dtype = d;
      rs_.op = op;
    }
    rs_.algo->run();
    if (work != out) std::memmove(out, work, share * esize);
    return true;
  }

  // Gloo's buffer setters take non-const pointers even for inputs it only reads.
  template <typename T>
  static T* mutableCast(const void* p) {
    return static_cast<T*>(const_cast<void*>(p));
  }

  // Every rank issues the same sequence of collectives, so a counter gives matching tags.
  uint32_t nextTag() { return tag_++; }

  struct CachedReduceScatter {
    uint8_t* buf = nullptr;
    size_t count = 0;
    rdDataType_t dtype = rdFloat32;
    rdRedOp_t op = rdSum;
    std::unique_ptr<gloo::Algorithm> algo;
  };

  std::shared_ptr<gloo::Context> ctx_;
  uint32_t tag_ = 0;
  std::vector<uint8_t> scratch_;
  CachedReduceScatter rs_;
};

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// Rendezvous through files in a shared directory, then one TCP connection per pair of ranks.
std::shared_ptr<gloo::Context> connect(int rank, int nranks, const std::string& dir) {
  gloo::rendezvous::FileStore file_store(dir);
  gloo::rendezvous::PrefixStore store(envOr("GLOO_PREFIX", "gloo_perf"), file_store);
  gloo::transport::tcp::attr attr;
  if (const char* iface = std::getenv("GLOO_IFACE"); iface != nullptr && *iface != '\0') {
    attr.iface = iface;
  } else {
    attr.hostname = envOr("GLOO_HOSTNAME", "127.0.0.1");
  }
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
  context->connectFullMesh(store, device);
  return context;
}

const char* const kExtraHelp =
    "Environment: GLOO_STORE_DIR (required) a directory every rank can reach, for the\n"
    "rendezvous files; GLOO_PREFIX (default gloo_perf) names the run inside it: use a fresh\n"
    "directory or prefix per run, old keys would mislead the rendezvous; GLOO_IFACE or\n"
    "GLOO_HOSTNAME (default 127.0.0.1) the address this rank listens on.\n";

}  // namespace

int main(int argc, char** argv) {
  rd::perf::Options o;
  if (int rc = rd::perf::parseCommandLine(argc, argv, "gloo_perf", {}, kExtraHelp, true, &o);
      rc >= 0) {
    return rc;
  }
  int rank = 0, nranks = 0;
  if (!rd::perf::rankFromEnvironment(&rank, &nranks)) {
    std::fprintf(stderr, "gloo_perf: set RANK and WORLD_SIZE (or launch with mpirun / srun)\n");
    return 2;
  }
  const char* dir = std::getenv("GLOO_STORE_DIR");
  if (dir == nullptr || *dir == '\0') {
    std::fprintf(stderr, "gloo_perf: set GLOO_STORE_DIR to a directory shared by all ranks\n");
    return 2;
  }
  try {
    GlooBackend backend(connect(rank, nranks, dir));
    int rc = rd::perf::runPerf(backend, o);
    // A last collective so that no rank closes its connections while a peer still reads.
    if (rc != 2) backend.combine(0, 0);
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_perf: rank %d: %s\n", rank, e.what());
    return 2;
  }
}
