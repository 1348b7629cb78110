// SPDX-License-Identifier: BSD-3-Clause
// One rank of the GPU check (scripts/gpu_nccl_check.sh): real NCCL all-reduces on a GPU, with
// libnccl-net-libreduce.so loaded by NCCL from the environment. Several ranks share one GPU as
// separate "nodes" (distinct NCCL_HOSTID), so NCCL crosses nodes through the plugin's Net and,
// with NCCL_COLLNET_ENABLE=1, reduces through its CollNet (the reducers).
//
//   RANK=r WORLD_SIZE=n nccl_allreduce_check DIR     DIR: shared, for NCCL's unique id
//
// Exact inputs (small integers) make every result exactly checkable; prints one line per case
// and "NCCL ALLREDUCE CHECK PASSED" when every element of every case was right.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

#define CHECK_CUDA(call)                                                                         \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return false;                                                                              \
    }                                                                                            \
  } while (0)
#define CHECK_NCCL(call)                                                     \
  do {                                                                       \
    ncclResult_t r_ = (call);                                                \
    if (r_ != ncclSuccess) {                                                 \
      std::fprintf(stderr, "%s:%d %s: %s (%s)\n", __FILE__, __LINE__, #call, \
                   ncclGetErrorString(r_), ncclGetLastError(nullptr));       \
      return false;                                                          \
    }                                                                        \
  } while (0)

bool exchangeId(const std::string& dir, int rank, ncclUniqueId* id) {
  std::string path = dir + "/nccl-unique-id";
  if (rank == 0) {
    if (ncclGetUniqueId(id) != ncclSuccess) return false;
    std::ofstream(path + ".tmp", std::ios::binary).write(id->internal, sizeof id->internal);
    return std::rename((path + ".tmp").c_str(), path.c_str()) == 0;
  }
  for (int tries = 0; tries < 6000; ++tries) {  // 60 s
    std::ifstream in(path, std::ios::binary);
    if (in.read(id->internal, sizeof id->internal)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "rank %d: no unique id from rank 0\n", rank);
  return false;
}

// Value of element i on rank r: small integers, exact in every type and every sum.
float input(int rank, size_t i) {
  return static_cast<float>((i % 13) + rank + 1);
}

template <typename T>
T fromFloat(float f) {
  return static_cast<T>(f);
}

// One all-reduce of @p count elements of type T (float or int32), sum, checked exactly.
template <typename T>
bool checkSum(ncclComm_t comm, cudaStream_t stream, int rank, int nranks, size_t count,
              ncclDataType_t dtype, const char* name) {
  std::vector<T> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = fromFloat<T>(input(rank, i));
  T* dev = nullptr;
  CHECK_CUDA(cudaMalloc(&dev, count * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(dev, host.data(), count * sizeof(T), cudaMemcpyHostToDevice));
  auto start = std::chrono::steady_clock::now();
  CHECK_NCCL(ncclAllReduce(dev, dev, count, dtype, ncclSum, comm, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CHECK_CUDA(cudaMemcpy(host.data(), dev, count * sizeof(T), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(dev));
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < nranks; ++r) want += input(r, i);
    if (host[i] != fromFloat<T>(want)) ++wrong;
  }
  std::printf("rank %d: allreduce %-7s %10zu elements  %8.2f ms  %zu wrong\n", rank, name, count,
              ms, wrong);
  return wrong == 0;
}

bool run(const std::string& dir, int rank, int nranks) {
  CHECK_CUDA(cudaSetDevice(0));  // every rank on the one GPU, each its own "node"
  ncclUniqueId id;
  if (!exchangeId(dir, rank, &id)) return false;
  ncclComm_t comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  bool ok = true;
  for (size_t count : {size_t{1}, size_t{1000}, size_t{1} << 18, (size_t{1} << 22) + 5}) {
    ok = checkSum<float>(comm, stream, rank, nranks, count, ncclFloat32, "float32") && ok;
    ok = checkSum<int32_t>(comm, stream, rank, nranks, count, ncclInt32, "int32") && ok;
  }
  for (int iter = 0; iter < 5; ++iter) {  // repeated: the steady state, not only the first call
    ok = checkSum<float>(comm, stream, rank, nranks, size_t{1} << 24, ncclFloat32, "float32") && ok;
  }
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_NCCL(ncclCommDestroy(comm));
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const char* rank_env = std::getenv("RANK");
  const char* size_env = std::getenv("WORLD_SIZE");
  if (argc != 2 || rank_env == nullptr || size_env == nullptr) {
    std::fprintf(stderr, "usage: RANK=r WORLD_SIZE=n %s DIR\n", argv[0]);
    return 2;
  }
  int rank = std::atoi(rank_env), nranks = std::atoi(size_env);
  bool ok = run(argv[1], rank, nranks);
  std::printf("rank %d: NCCL ALLREDUCE CHECK %s\n", rank, ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
