// SPDX-License-Identifier: BSD-3-Clause
// reduce-probe: joins one reducer as a communicator of one rank and times verified all-reduces
// through it, each sending the buffer to the reducer and receiving it back. What `reducectl
// doctor` runs against every reducer of a job: it proves the address, the secret and the link.
//
//   reduce-probe --reducer HOST:PORT [--secret-file PATH] [--mib M] [--iters K]
//                [--timeout-ms T]
//
// Prints one line: "PROBE OK reducer=... bytes=... seconds=... gbps=... transports=..." (gbps:
// the bytes of one direction over the time, the link rate the reducer sees each way;
// transports: the UCX transports and devices the link settled on, "tcp/eth1"), or
// "PROBE FAILED reducer=... status=NAME: why", with exit status 1; 2 for bad usage.
#include <libreduce/comm.h>
#include <libreduce/reduce.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string reducer;
  std::string secret_file;
  long mib = 16;
  long iters = 3;
  long timeout_ms = 10000;
};

int usage() {
  std::fputs(
      "usage: reduce-probe --reducer HOST:PORT [--secret-file PATH] [--mib M (16)] "
      "[--iters K (3)] [--timeout-ms T (10000)]\n",
      stderr);
  return 2;
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i];
    const char* value = argv[i + 1];
    if (name == "--reducer") {
      o->reducer = value;
    } else if (name == "--secret-file") {
      o->secret_file = value;
    } else if (name == "--mib") {
      o->mib = std::atol(value);
    } else if (name == "--iters") {
      o->iters = std::atol(value);
    } else if (name == "--timeout-ms") {
      o->timeout_ms = std::atol(value);
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !o->reducer.empty() && o->mib >= 1 && o->mib <= 4096 && o->iters >= 1 &&
         o->iters <= 1000 && o->timeout_ms >= 100;
}

int failed(const Options& o, rdResult_t status, const std::string& what) {
  std::printf("PROBE FAILED reducer=%s status=%s: %s: %s\n", o.reducer.c_str(),
              rdGetErrorString(status), what.c_str(), rdGetLastError());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) return usage();
  std::string secret;
  if (!o.secret_file.empty()) {
    std::ifstream in(o.secret_file);
    std::stringstream text;
    text << in.rdbuf();
    secret = text.str();
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
    if (!in || secret.empty()) {
      std::printf(
          "PROBE FAILED reducer=%s status=invalid argument: cannot read the secret "
          "from %s\n",
          o.reducer.c_str(), o.secret_file.c_str());
      return 1;
    }
  }
  rdUniqueId id;
  rdResult_t st = rdGetUniqueIdFor(o.reducer.c_str(), secret.c_str(), &id);
  if (st != rdSuccess) return failed(o, st, "making a communicator id");
  rdCommConfig_t config = RD_COMM_CONFIG_INITIALIZER;
  config.timeout_ms = static_cast<int>(o.timeout_ms);
  config.algorithm = rdAlgoReductionServer;
  rdComm_t comm = nullptr;
  st = rdCommInitRankConfig(&comm, 1, id, 0, &config);
  if (st != rdSuccess) return failed(o, st, "joining the reducer");
  // One rank: the sum is the buffer itself, so every element is checked against its index.
  const size_t count = static_cast<size_t>(o.mib) << 18;  // float32 elements in M MiB
  std::vector<float> send(count), recv(count);
  for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(i % 65521);
  double seconds = 0;
  for (long it = 0; it <= o.iters; ++it) {  // the first is a warm-up, not timed
    auto start = std::chrono::steady_clock::now();
    st = rdAllReduce(send.data(), recv.data(), count, rdFloat32, rdSum, comm);
    if (st != rdSuccess) {
      rdCommAbort(comm);
      return failed(o, st, "an all-reduce through the reducer");
    }
    if (it > 0) {
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    for (size_t i = 0; i < count; ++i) {
      if (recv[i] != send[i]) {
        rdCommAbort(comm);
        std::printf(
            "PROBE FAILED reducer=%s status=wrong result: element %zu came back as %g, "
            "not %g\n",
            o.reducer.c_str(), i, static_cast<double>(recv[i]), static_cast<double>(send[i]));
        return 1;
      }
    }
  }
  // The link is wired up by now: what it settled on is what the job's ranks would use.
  char transports[256] = {};
  if (rdCommGetReducerTransports(comm, 0, transports, sizeof transports) != rdSuccess ||
      transports[0] == '\0') {
    std::snprintf(transports, sizeof transports, "unknown");
  }
  rdCommDestroy(comm);
  const double bytes = static_cast<double>(count) * sizeof(float) * static_cast<double>(o.iters);
  std::printf("PROBE OK reducer=%s bytes=%.0f seconds=%.6f gbps=%.4f transports=%s\n",
              o.reducer.c_str(), bytes, seconds, bytes * 8 / seconds / 1e9, transports);
  return 0;
}
