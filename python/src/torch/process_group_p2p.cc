// SPDX-License-Identifier: BSD-3-Clause
// The backend's point-to-point operations, and the collectives that move only what they must
// over them: gather and scatter (one message per rank, to or from the root), all-to-all (one per
// pair, uneven splits) and the monitored barrier. Messages travel as bytes, so every element
// type goes; the receive checks the byte count.
#include "process_group.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>

#include "host_buffers.h"
#include "tensor_types.h"

namespace rd::torch_backend {
namespace {

// Tags of the operations built on point-to-point: below 0, where user tags never are.
constexpr int kGatherTag = -2;
constexpr int kScatterTag = -3;
constexpr int kAllToAllTag = -4;
constexpr int kBarrierArriveTag = -5;
constexpr int kBarrierReleaseTag = -6;

// Split sizes (rows of dim 0 per rank): as given, or equal when none are.
std::vector<int64_t> splitsOf(const std::vector<int64_t>& given, const at::Tensor& t, int size,
                              const char* role) {
  TORCH_CHECK_VALUE(t.dim() >= 1, "libreduce: alltoall_base ", role,
                    " needs at least one dimension");
  const int64_t rows = t.size(0);
  if (given.empty()) {
    TORCH_CHECK_VALUE(rows % size == 0, "libreduce: alltoall_base ", role, " has ", rows,
                      " rows, which do not split evenly over ", size, " ranks");
    return std::vector<int64_t>(size, rows / size);
  }
  TORCH_CHECK_VALUE(static_cast<int>(given.size()) == size, "libreduce: alltoall_base needs ", size,
                    " ", role, " split sizes, got ", given.size());
  for (int64_t s : given) {
    TORCH_CHECK_VALUE(s >= 0, "libreduce: alltoall_base ", role, " split size ", s, " is negative");
  }
  TORCH_CHECK_VALUE(std::accumulate(given.begin(), given.end(), int64_t{0}) == rows,
                    "libreduce: alltoall_base ", role, " split sizes add up to ",
                    std::accumulate(given.begin(), given.end(), int64_t{0}), ", not its ", rows,
                    " rows");
  return given;
}

std::vector<int64_t> offsetsOf(const std::vector<int64_t>& splits) {
  std::vector<int64_t> offsets(splits.size(), 0);
  for (size_t i = 1; i < splits.size(); ++i) offsets[i] = offsets[i - 1] + splits[i - 1];
  return offsets;
}

size_t rowBytes(const at::Tensor& t) {
  return t.size(0) == 0 ? 0 : byteCount(t) / static_cast<size_t>(t.size(0));
}

char* bytesAt(const at::Tensor& t, size_t offset) {
  return static_cast<char*>(t.data_ptr()) + offset;
}

// A request freed when it goes out of scope (the monitored barrier waits on its own).
struct OwnedRequest {
  rdRequest_t request = nullptr;
  OwnedRequest() = default;
  OwnedRequest(const OwnedRequest&) = delete;
  OwnedRequest& operator=(const OwnedRequest&) = delete;
  ~OwnedRequest() {
    if (request != nullptr) rdRequestFree(request);
  }
};

std::string lastErrorText(rdResult_t status) {
  return std::string(rdGetErrorString(status)) + ": " + rdGetLastError();
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::pointToPoint(c10d::OpType type,
                                                                   const char* name, bool is_send,
                                                                   const at::Tensor& t, int peer,
                                                                   int tag) {
  at::Tensor buf = hostBuffer(t);
  const size_t bytes = byteCount(buf);
  Post post = [is_send, buf, bytes, peer, tag](rdComm_t c, rdRequest_t* req) {
    if (is_send) return rdSendAsync(buf.data_ptr(), bytes, rdUint8, peer, tag, c, req);
    return rdRecvAsync(buf.data_ptr(), bytes, rdUint8, peer, tag, c, req);
  };
  std::function<void()> on_success;
  if (!is_send) on_success = [t, buf] { copyBack(t, buf); };
  return launch(type, name, post, {t}, {buf}, std::move(on_success));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::send(std::vector<at::Tensor>& tensors,
                                                           int dst_rank, int tag) {
  checkOne(tensors, "send");
  checkRank(dst_rank, size_, "send", "destination");
  TORCH_CHECK_VALUE(tag >= 0, "libreduce: send tag ", tag, " is negative");
  return pointToPoint(c10d::OpType::SEND, "send", true, tensors[0], dst_rank, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::recv(std::vector<at::Tensor>& tensors,
                                                           int src_rank, int tag) {
  checkOne(tensors, "recv");
  checkRank(src_rank, size_, "recv", "source");
  TORCH_CHECK_VALUE(tag >= 0, "libreduce: recv tag ", tag, " is negative");
  return pointToPoint(c10d::OpType::RECV, "recv", false, tensors[0], src_rank, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::recvAnysource(
    std::vector<at::Tensor>& tensors, int tag) {
  checkOne(tensors, "recv");
  TORCH_CHECK_VALUE(tag >= 0, "libreduce: recv tag ", tag, " is negative");
  return pointToPoint(c10d::OpType::RECVANYSOURCE, "recv", false, tensors[0], RD_ANY_SOURCE, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes, const c10d::AllToAllOptions& /*opts*/) {
  checkTensor(input, "alltoall_base");
  checkSameKind(input, output, "alltoall_base");
  const auto in_splits = splitsOf(input_split_sizes, input, size_, "input");
  const auto out_splits = splitsOf(output_split_sizes, output, size_, "output");
  const auto in_offsets = offsetsOf(in_splits), out_offsets = offsetsOf(out_splits);
  at::Tensor in = hostBuffer(input);
  at::Tensor out = hostBuffer(output);
  const size_t in_row = rowBytes(in), out_row = rowBytes(out);
  TORCH_CHECK_VALUE(in.size(0) == 0 || out.size(0) == 0 || in_row == out_row,
                    "libreduce: alltoall_base input rows of ", in_row, " bytes and output rows of ",
                    out_row, " bytes differ");
  std::memcpy(bytesAt(out, out_offsets[rank_] * out_row), bytesAt(in, in_offsets[rank_] * in_row),
              in_splits[rank_] * in_row);
  std::vector<Post> posts;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    char* dst = bytesAt(out, out_offsets[peer] * out_row);
    size_t recv_bytes = out_splits[peer] * out_row;
    posts.emplace_back([dst, recv_bytes, peer](rdComm_t c, rdRequest_t* req) {
      return rdRecvAsync(dst, recv_bytes, rdUint8, peer, kAllToAllTag, c, req);
    });
  }
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    const char* src = bytesAt(in, in_offsets[peer] * in_row);
    size_t send_bytes = in_splits[peer] * in_row;
    posts.emplace_back([src, send_bytes, peer](rdComm_t c, rdRequest_t* req) {
      return rdSendAsync(src, send_bytes, rdUint8, peer, kAllToAllTag, c, req);
    });
  }
  return launchAll(c10d::OpType::ALLTOALL_BASE, "alltoall_base", posts, {output}, {in, out},
                   [output, out] { copyBack(output, out); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::alltoall(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllToAllOptions& /*opts*/) {
  TORCH_CHECK_VALUE(
      static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
      "libreduce: alltoall needs ", size_, " input and output tensors, got ", inputs.size(),
      " and ", outputs.size());
  for (int r = 0; r < size_; ++r) {
    checkSameKind(inputs[0], inputs[r], "alltoall");
    checkSameKind(inputs[0], outputs[r], "alltoall");
  }
  TORCH_CHECK_VALUE(inputs[rank_].numel() == outputs[rank_].numel(),
                    "libreduce: alltoall sends this rank ", inputs[rank_].numel(),
                    " elements into an output of ", outputs[rank_].numel());
  std::vector<at::Tensor> ins, outs;
  for (int r = 0; r < size_; ++r) {
    ins.push_back(hostBuffer(inputs[r]));
    outs.push_back(hostBuffer(outputs[r]));
  }
  std::vector<Post> posts;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    at::Tensor out = outs[peer];
    posts.emplace_back([out, peer](rdComm_t c, rdRequest_t* req) {
      return rdRecvAsync(out.data_ptr(), byteCount(out), rdUint8, peer, kAllToAllTag, c, req);
    });
  }
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    at::Tensor in = ins[peer];
    posts.emplace_back([in, peer](rdComm_t c, rdRequest_t* req) {
      return rdSendAsync(in.data_ptr(), byteCount(in), rdUint8, peer, kAllToAllTag, c, req);
    });
  }
  std::vector<at::Tensor> keep = ins;
  keep.insert(keep.end(), outs.begin(), outs.end());
  const int me = rank_;
  return launchAll(c10d::OpType::ALLTOALL, "alltoall", posts, outputs, keep,
                   [outputs, outs, ins, me] {
                     outputs[me].copy_(ins[me].view(outputs[me].sizes()));
                     for (size_t r = 0; r < outputs.size(); ++r) {
                       if (static_cast<int>(r) != me) copyBack(outputs[r], outs[r]);
                     }
                   });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  checkOne(inputs, "gather");
  checkRank(opts.rootRank, size_, "gather", "root");
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor in = hostBuffer(inputs[0]);
  if (rank_ != root) {
    TORCH_CHECK_VALUE(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                      "libreduce: gather takes output tensors on the root only");
    Post post = [in, root](rdComm_t c, rdRequest_t* req) {
      return rdSendAsync(in.data_ptr(), byteCount(in), rdUint8, root, kGatherTag, c, req);
    };
    return launch(c10d::OpType::GATHER, "gather", post, {}, {in}, nullptr);
  }
  TORCH_CHECK_VALUE(outputs.size() == 1, "libreduce: gather takes one output list on the root");
  checkParts(outputs[0], inputs[0], size_, "gather");
  std::vector<at::Tensor> outs = outputs[0];
  std::vector<at::Tensor> bufs;
  std::vector<Post> posts;
  for (int peer = 0; peer < size_; ++peer) {
    bufs.push_back(hostBuffer(outs[peer]));
    if (peer == root) continue;
    at::Tensor buf = bufs.back();
    posts.emplace_back([buf, peer](rdComm_t c, rdRequest_t* req) {
      return rdRecvAsync(buf.data_ptr(), byteCount(buf), rdUint8, peer, kGatherTag, c, req);
    });
  }
  std::vector<at::Tensor> keep = bufs;
  keep.push_back(in);
  return launchAll(c10d::OpType::GATHER, "gather", posts, outs, keep, [outs, bufs, in, root] {
    outs[root].copy_(in.view(outs[root].sizes()));
    for (size_t r = 0; r < outs.size(); ++r) {
      if (static_cast<int>(r) != root) copyBack(outs[r], bufs[r]);
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLibreduce::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  checkOne(outputs, "scatter");
  checkRank(opts.rootRank, size_, "scatter", "root");
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor out = outputs[0];
  if (rank_ != root) {
    TORCH_CHECK_VALUE(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                      "libreduce: scatter takes input tensors on the root only");
    return pointToPoint(c10d::OpType::SCATTER, "scatter", false, out, root, kScatterTag);
  }
  TORCH_CHECK_VALUE(inputs.size() == 1, "libreduce: scatter takes one input list on the root");
  checkParts(inputs[0], out, size_, "scatter");
  std::vector<at::Tensor> ins;
  std::vector<Post> posts;
  for (int peer = 0; peer < size_; ++peer) {
    ins.push_back(hostBuffer(inputs[0][peer]));
    if (peer == root) continue;
    at::Tensor in = ins.back();
    posts.emplace_back([in, peer](rdComm_t c, rdRequest_t* req) {
      return rdSendAsync(in.data_ptr(), byteCount(in), rdUint8, peer, kScatterTag, c, req);
    });
  }
  at::Tensor mine = ins[root];
  return launchAll(c10d::OpType::SCATTER, "scatter", posts, outputs, ins,
                   [out, mine]() mutable { out.copy_(mine.view(out.sizes())); });
}

void ProcessGroupLibreduce::monitoredBarrier(const c10d::BarrierOptions& opts,
                                             bool wait_all_ranks) {
  const auto timeout = opts.timeout.count() > 0 ? opts.timeout : options_->timeout;
  rdComm_t c = comm("monitored_barrier");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left_ms = [&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
  };
  // Sends read kToken and receives write barrier_tokens_, both of which outlive any request
  // that is still running when a wait gives up.
  static const uint8_t kToken = 1;
  uint8_t* tokens = barrier_tokens_.data();
  if (rank_ != 0) {
    OwnedRequest arrive, release;
    rdResult_t st = rdSendAsync(&kToken, 1, rdUint8, 0, kBarrierArriveTag, c, &arrive.request);
    if (st == rdSuccess) {
      st = rdRecvAsync(&tokens[0], 1, rdUint8, 0, kBarrierReleaseTag, c, &release.request);
    }
    if (st == rdSuccess) st = rdRequestWait(release.request, left_ms());
    if (st == rdInProgress) rdRequestCancel(release.request);
    TORCH_CHECK(st == rdSuccess, "[Rank ", rank_, "]: libreduce monitored_barrier: rank 0 did not ",
                "release this rank within ", timeout.count(), " ms: ", lastErrorText(st));
    return;
  }
  std::vector<OwnedRequest> arrivals(size_);
  std::vector<int> missing;
  std::string why;
  for (int r = 1; r < size_; ++r) {
    rdResult_t st =
        rdRecvAsync(&tokens[r], 1, rdUint8, r, kBarrierArriveTag, c, &arrivals[r].request);
    if (st == rdSuccess) st = rdRequestWait(arrivals[r].request, left_ms());
    if (st == rdInProgress && rdRequestCancel(arrivals[r].request) != rdSuccess) {
      st = rdRequestWait(arrivals[r].request, -1);  // matched meanwhile: it lands now
    }
    if (st == rdSuccess) continue;
    missing.push_back(r);
    if (why.empty() && st != rdInProgress) why = " (" + lastErrorText(st) + ")";
    if (!wait_all_ranks) break;
  }
  if (!missing.empty()) {
    std::string ranks;
    for (int r : missing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    TORCH_CHECK(false, "[Rank 0]: ", missing.size() == 1 ? "Rank " : "Ranks ", ranks,
                " failed to pass monitoredBarrier in ", timeout.count(), " ms", why);
  }
  std::vector<OwnedRequest> releases(size_);
  for (int r = 1; r < size_; ++r) {
    rdResult_t st =
        rdSendAsync(&kToken, 1, rdUint8, r, kBarrierReleaseTag, c, &releases[r].request);
    if (st == rdSuccess) st = rdRequestWait(releases[r].request, left_ms());
    TORCH_CHECK(st == rdSuccess, "[Rank 0]: libreduce monitored_barrier could not release rank ", r,
                ": ", lastErrorText(st));
  }
}

}  // namespace rd::torch_backend
