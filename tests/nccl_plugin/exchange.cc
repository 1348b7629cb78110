// SPDX-License-Identifier: BSD-3-Clause
#include <fstream>
#include <sstream>
#include <thread>

#include "harness.h"

namespace rd::test {

bool FileExchange::publish(const std::string& name, const std::string& blob) const {
  std::string path = dir_ + "/" + name + "." + std::to_string(rank_);
  {
    std::ofstream out(path + ".tmp", std::ios::binary);
    out.write(blob.data(), static_cast<std::streamsize>(blob.size()));
    if (!out) return false;
  }
  return std::rename((path + ".tmp").c_str(), path.c_str()) == 0;  // readers never see half
}

bool FileExchange::fetch(const std::string& name, int rank, std::string* blob,
                         std::chrono::milliseconds limit) const {
  std::string path = dir_ + "/" + name + "." + std::to_string(rank);
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::ostringstream text;
      text << in.rdbuf();
      *blob = text.str();
      return true;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "rank %d: no '%s' from rank %d in time\n", rank_, name.c_str(), rank);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool FileExchange::allGather(const std::string& name, const std::string& mine,
                             std::vector<std::string>* all) const {
  if (!publish(name, mine)) return false;
  all->assign(static_cast<size_t>(nranks_), std::string());
  for (int r = 0; r < nranks_; ++r) {
    if (!fetch(name, r, &(*all)[r])) return false;
  }
  return true;
}

bool testUntilDone(const std::function<ncclResult_t(int* done)>& fn, const char* what,
                   ncclResult_t* result, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int done = 0;
    ncclResult_t res = fn(&done);
    if (result != nullptr) *result = res;
    if (res != ncclSuccess) {
      std::fprintf(stderr, "%s: test returned error %d\n", what, static_cast<int>(res));
      return false;
    }
    if (done) return true;
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "%s: not done in time\n", what);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // NCCL's proxy polls; we nap
  }
}

}  // namespace rd::test
