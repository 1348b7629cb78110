// SPDX-License-Identifier: BSD-3-Clause
// Reduces N workers' worth of gradient-sized buffers on this machine with the public API, checks
// every element, and prints a table. What a reducer does with each chunk, without the network.
//
//   local_reduce_demo [--contributions N] [--max-bytes BYTES] [--iters K]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "libreduce/reduce.hpp"

namespace {

struct Options {
  int contributions = 4;
  size_t max_bytes = 256u << 20;
  int iters = 5;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--contributions" && v)
      o.contributions = std::atoi(argv[++i]);
    else if (a == "--max-bytes" && v)
      o.max_bytes = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--iters" && v)
      o.iters = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--contributions N] [--max-bytes BYTES] [--iters K]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  if (o.contributions < 1 || o.iters < 1 || o.max_bytes < 4) {
    std::fprintf(stderr, "contributions, iters must be >= 1 and max-bytes >= 4\n");
    std::exit(2);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const size_t max_count = o.max_bytes / sizeof(float);
  // Contribution w holds small integers (w + i) % 7 - 3: every sum is exact, so the check is
  // an equality, element by element.
  std::vector<std::vector<float>> grads(static_cast<size_t>(o.contributions),
                                        std::vector<float>(max_count));
  for (int w = 0; w < o.contributions; ++w) {
    for (size_t i = 0; i < max_count; ++i) grads[w][i] = static_cast<float>((w + i) % 7) - 3.0f;
  }
  std::vector<float> out(max_count);

  std::printf("libreduce %s: local reduction of %d contributions (float32 sum)\n",
              rd::versionString().c_str(), o.contributions);
  std::printf("%12s %12s %12s %14s %8s\n", "size(B)", "count", "time(us)", "moved(GB/s)", "#wrong");
  size_t total_wrong = 0;
  for (size_t bytes = 4096; bytes <= o.max_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    std::vector<std::span<const float>> srcs;
    for (auto& g : grads) srcs.emplace_back(g.data(), count);
    std::span<float> dst(out.data(), count);
    rd::localReduce<float>(srcs, dst, rdSum);  // warm-up
    auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < o.iters; ++it) rd::localReduce<float>(srcs, dst, rdSum);
    double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        o.iters;
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int w = 0; w < o.contributions; ++w) want += static_cast<float>((w + i) % 7) - 3.0f;
      wrong += out[i] != want;
    }
    total_wrong += wrong;
    double gbps = static_cast<double>(bytes) * (o.contributions + 1) / us / 1e3;
    std::printf("%12zu %12zu %12.1f %14.2f %8zu\n", bytes, count, us, gbps, wrong);
  }
  std::printf("%s: %zu wrong elements\n", total_wrong == 0 ? "PASSED" : "FAILED", total_wrong);
  return total_wrong == 0 ? 0 : 1;
}
