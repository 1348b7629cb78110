// SPDX-License-Identifier: BSD-3-Clause
// rd_nccl_plugin_harness: one rank of a multi-process run that drives libnccl-net-libreduce.so
// the way NCCL does, with host memory. Rank and size come from RANK / WORLD_SIZE; the ranks
// exchange handles through files in --dir (NCCL's bootstrap in a real job).
//
//   --plugin PATH      the plugin library
//   --version N        struct version to drive (8..12), 0 = the newest exported (NCCL's choice)
//   --dir DIR          shared directory for the handle exchange
//   --scenario S       full (default): Net p2p and CollNet collectives, checked;
//                      connect-error: CollNet connect must fail (no reducers, wrong secret);
//                      peer-killed: the last rank dies after setup, the others must get errors;
//                      reducer-lost: 200 verified all-reduces of 1 MiB, through a reducer the
//                      test kills after the 20th (docs/failover.md);
//                      contexts: two communicators' contexts at once (v11+);
//                      wire-bf16: all-reduces with LIBREDUCE_WIRE_DTYPE=bf16, checked;
//                      net-secret: rank 1 holds another secret: Net must refuse it;
//                      devices: prints the CollNet device count and, with one, tries connect
#include <dlfcn.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "harness.h"

namespace rd::test {
namespace {

using Clock = std::chrono::steady_clock;

long long msSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

struct Args {
  std::string plugin, dir, scenario = "full";
  int version = 0;
};

bool parse(int argc, char** argv, Args* args) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i], value = argv[i + 1];
    if (key == "--plugin")
      args->plugin = value;
    else if (key == "--dir")
      args->dir = value;
    else if (key == "--scenario")
      args->scenario = value;
    else if (key == "--version")
      args->version = std::atoi(value.c_str());
    else
      return false;
  }
  return !args->plugin.empty() && !args->dir.empty();
}

bool runFull(const LoadedPlugin& p, const FileExchange& ex) {
  NetRing ring;
  CollSetup setup;
  ncclResult_t connected = ncclSuccess;
  bool ok = collNetQueries(p.collnet) && netSetUp(p.net, ex, &ring) &&
            netTransfers(p.net, ex, ring) && collNetConnect(p.collnet, ex, &setup, &connected) &&
            collNetCollectives(p.collnet, ex, setup);
  if (!ok) return false;
  return p.collnet.closeColl(setup.comm) == ncclSuccess &&
         p.collnet.closeListen(setup.listen) == ncclSuccess && netTearDown(p.net, ring) &&
         p.collnet.finalize() == ncclSuccess && p.net.finalize() == ncclSuccess;
}

bool runConnectError(const LoadedPlugin& p, const FileExchange& ex) {
  CollSetup setup;
  ncclResult_t result = ncclSuccess;
  auto start = Clock::now();
  if (collNetConnect(p.collnet, ex, &setup, &result)) {
    std::fprintf(stderr, "CollNet connect succeeded where it must fail\n");
    return false;
  }
  std::printf("EXPECTED ERROR connect code=%d in %lld ms\n", static_cast<int>(result),
              msSince(start));
  return result != ncclSuccess && p.collnet.closeListen(setup.listen) == ncclSuccess;
}

bool runReducerLost(const LoadedPlugin& p, const FileExchange& ex) {
  CollSetup setup;
  ncclResult_t result = ncclSuccess;
  return collNetConnect(p.collnet, ex, &setup, &result) &&
         collNetAllReduceLoop(p.collnet, ex, setup, 200, 1 << 18, 20) &&
         p.collnet.closeColl(setup.comm) == ncclSuccess &&
         p.collnet.closeListen(setup.listen) == ncclSuccess;
}

bool runWireBf16(const LoadedPlugin& p, const FileExchange& ex) {
  CollSetup setup;
  ncclResult_t result = ncclSuccess;
  return collNetConnect(p.collnet, ex, &setup, &result) &&
         collNetWireCompressed(p.collnet, ex, setup) &&
         p.collnet.closeColl(setup.comm) == ncclSuccess &&
         p.collnet.closeListen(setup.listen) == ncclSuccess;
}

bool runDevices(const LoadedPlugin& p, const FileExchange& ex) {
  int ndev = -1;
  if (p.collnet.devices(&ndev) != ncclSuccess) return false;
  std::printf("rank %d: CollNet devices %d\n", ex.rank(), ndev);
  if (ndev == 0) return true;
  CollSetup setup;
  ncclResult_t result = ncclSuccess;
  auto start = Clock::now();
  if (collNetConnect(p.collnet, ex, &setup, &result)) {
    std::printf("rank %d: CollNet connected\n", ex.rank());
    return p.collnet.closeColl(setup.comm) == ncclSuccess &&
           p.collnet.closeListen(setup.listen) == ncclSuccess;
  }
  std::printf("EXPECTED ERROR connect code=%d in %lld ms\n", static_cast<int>(result),
              msSince(start));
  return setup.listen != nullptr && p.collnet.closeListen(setup.listen) == ncclSuccess;
}

bool runPeerKilled(const LoadedPlugin& p, const FileExchange& ex) {
  NetRing ring;
  CollSetup setup;
  ncclResult_t result = ncclSuccess;
  if (!netSetUp(p.net, ex, &ring) || !collNetConnect(p.collnet, ex, &setup, &result)) return false;
  std::vector<std::string> ready;
  if (!ex.allGather("ready", "1", &ready)) return false;
  int victim = ex.nranks() - 1;
  if (ex.rank() == victim) {
    std::printf("rank %d: killing itself\n", victim);
    std::fflush(stdout);
    std::raise(SIGKILL);
  }
  auto start = Clock::now();
  std::vector<float> data(1 << 16, 1.0f);
  void* req = nullptr;
  result = p.collnet.iallreduce(setup.comm, data.data(), data.data(), data.size(), 7, 0, nullptr,
                                nullptr, &req);
  if (result == ncclSuccess) {
    testUntilDone([&](int* done) { return p.collnet.test(req, done, nullptr); }, "iallreduce",
                  &result, std::chrono::seconds(90));
  }
  std::printf("EXPECTED ERROR iallreduce code=%d in %lld ms\n", static_cast<int>(result),
              msSince(start));
  if (result == ncclSuccess) return false;
  if (ex.rank() == 0) {  // rank 0 receives from the victim
    std::vector<char> buf(64);
    void* data_ptr = buf.data();
    size_t size = buf.size();
    int tag = 1;
    void* recv = nullptr;
    ncclResult_t net_result = p.net.irecv(ring.recv, 1, &data_ptr, &size, &tag, nullptr, &recv);
    if (net_result == ncclSuccess) {
      testUntilDone([&](int* done) { return p.net.test(recv, done, nullptr); }, "irecv",
                    &net_result, std::chrono::seconds(90));
    }
    std::printf("EXPECTED ERROR irecv code=%d in %lld ms\n", static_cast<int>(net_result),
                msSince(start));
    if (net_result == ncclSuccess) return false;
  }
  auto close_start = Clock::now();
  p.collnet.closeColl(setup.comm);  // must not wait for the dead peer
  std::printf("closed in %lld ms\n", msSince(close_start));
  return true;
}

}  // namespace
}  // namespace rd::test

int main(int argc, char** argv) {
  using namespace rd::test;
  Args args;
  const char* rank_env = std::getenv("RANK");
  const char* size_env = std::getenv("WORLD_SIZE");
  if (!parse(argc, argv, &args) || rank_env == nullptr || size_env == nullptr) {
    std::fprintf(stderr,
                 "usage: RANK=r WORLD_SIZE=n %s --plugin PATH --dir DIR [--version N] "
                 "[--scenario full|connect-error|peer-killed|reducer-lost|contexts|wire-bf16|"
                 "net-secret|devices]\n",
                 argv[0]);
    return 2;
  }
  FileExchange ex(args.dir, std::atoi(rank_env), std::atoi(size_env));
  LoadedPlugin plugin;
  std::string error;
  if (!loadPlugin(args.plugin, args.version, &plugin, &error)) {
    std::fprintf(stderr, "loading the plugin: %s\n", error.c_str());
    return 1;
  }
  std::printf("rank %d: resolved ncclNetPlugin_v%d and ncclCollNetPlugin_v%d\n", ex.rank(),
              plugin.version, plugin.version);
  if (plugin.net.init() != ncclSuccess || plugin.collnet.init() != ncclSuccess) {
    std::fprintf(stderr, "init failed\n");
    return 1;
  }
  bool ok = false;
  if (args.scenario == "full")
    ok = runFull(plugin, ex);
  else if (args.scenario == "connect-error")
    ok = runConnectError(plugin, ex);
  else if (args.scenario == "peer-killed")
    ok = runPeerKilled(plugin, ex);
  else if (args.scenario == "reducer-lost")
    ok = runReducerLost(plugin, ex);
  else if (args.scenario == "contexts")
    ok = collNetTwoContexts(plugin.collnet, ex);
  else if (args.scenario == "wire-bf16")
    ok = runWireBf16(plugin, ex);
  else if (args.scenario == "net-secret")
    ok = netRefusesWrongSecret(plugin.net, ex);
  else if (args.scenario == "devices")
    ok = runDevices(plugin, ex);
  if (ok && args.scenario == "full") {
    // NCCL dlcloses the plugin after its last communicator; the plugin's threads must survive.
    dlclose(plugin.library);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  std::printf("rank %d: HARNESS %s version %d scenario %s\n", ex.rank(), ok ? "PASSED" : "FAILED",
              plugin.version, args.scenario.c_str());
  std::fflush(stdout);
  return ok ? 0 : 1;
}
