// SPDX-License-Identifier: BSD-3-Clause
// reduce-server: the reducer daemon. Thin over ReductionServer: parse flags, start, print one
// ready line, wait for SIGTERM / SIGINT, stop.
//
//   reduce-server --listen HOST:PORT [--threads N] [--lanes N] [--memory-limit SIZE]
//                 [--secret-file PATH | --pool-secret-file PATH] [--insecure]
//                 [--max-communicators N] [--max-ranks N] [--comm-memory-percent P]
//                 [--log-level LEVEL] [--ready-file PATH] [--bind-nic] [--metrics [HOST:]PORT]
//
// Ready line on stdout (one line, then the daemon stays quiet there), one address per lane:
//   LIBREDUCE_REDUCER_READY address=HOST:PORT[,HOST:PORT...] pid=PID [metrics=HOST:PORT]
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "common/auth.h"
#include "common/log.h"
#include "common/metrics_endpoint.h"
#include "common/settings.h"
#include "common/status.h"
#include "common/trace.h"
#include "libreduce/config.h"
#include "reduction_server/binding.h"
#include "reduction_server/lanes.h"
#include "reduction_server/reducer_metrics.h"
#include "transport/transport.h"

namespace {

using rd::settings::Id;

struct Flags {
  std::string listen = "127.0.0.1:0";
  std::string threads;
  std::string lanes;
  std::string max_communicators;
  std::string max_ranks;
  std::string comm_memory_percent;
  std::string metrics;
  std::string memory_limit = "1G";
  std::string secret_file;
  std::string pool_secret_file;
  std::string log_level;
  std::string ready_file;
  bool bind_nic = false;
  bool insecure = false;
};

void usage(FILE* out) {
  std::fprintf(
      out,
      "usage: reduce-server --listen HOST:PORT [options]\n"
      "  --listen HOST:PORT     address to accept workers on (port 0 = any free port)\n"
      "  --threads N            threads for the reductions (LIBREDUCE_REDUCER_THREADS)\n"
      "  --lanes N              network lanes, each a thread, UCX worker and port of its own\n"
      "                         (LIBREDUCE_REDUCER_LANES); PORT 0: any free ports, else\n"
      "                         PORT..PORT+N-1\n"
      "  --memory-limit SIZE    bytes of chunk buffers, e.g. 64M, 2G (default 1G)\n"
      "  --max-communicators N  communicators served at once (default 256)\n"
      "  --max-ranks N          ranks per communicator (default 4096)\n"
      "  --comm-memory-percent P  share of the memory limit one communicator may hold\n"
      "                         (default 50): one job cannot starve another\n"
      "  --secret-file PATH     job secret workers must prove (default: $LIBREDUCE_SECRET_FILE,\n"
      "                         as reducectl gives every replica; else none); it must be\n"
      "                         readable by its owner only\n"
      "  --pool-secret-file PATH  serve a pool shared by jobs: each communicator is admitted\n"
      "                         with its own key, derived from this secret and its id\n"
      "                         (reducectl pool key); instead of --secret-file\n"
      "  --insecure             run without a secret on an address other hosts can reach\n"
      "  --log-level LEVEL      none|error|warn|info|debug|trace\n"
      "  --ready-file PATH      also write the ready line to PATH (default: "
      "$LIBREDUCE_READY_FILE,\n"
      "                         where reducectl asks a custom reducer, or a container, for it)\n"
      "  --bind-nic             bind threads and memory near the listening NIC (hwloc)\n"
      "  --metrics [HOST:]PORT  serve Prometheus metrics at http://HOST:PORT/metrics\n"
      "                         (HOST defaults to 127.0.0.1; port 0: any free port)\n"
      "  --version              print the version and exit\n"
      "Without a secret any process that reaches the address can join, so a reducer listening\n"
      "beyond loopback refuses to start without one unless --insecure (docs/security.md).\n");
}

int fail(const char* fmt, const char* arg) {
  std::fprintf(stderr, "reduce-server: ");
  std::fprintf(stderr, fmt, arg);
  std::fprintf(stderr, "\n");
  return 2;
}

int parse(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    bool ok = true;
    if (a == "--listen")
      ok = value(&f->listen);
    else if (a == "--threads")
      ok = value(&f->threads);
    else if (a == "--lanes")
      ok = value(&f->lanes);
    else if (a == "--memory-limit")
      ok = value(&f->memory_limit);
    else if (a == "--max-communicators")
      ok = value(&f->max_communicators);
    else if (a == "--max-ranks")
      ok = value(&f->max_ranks);
    else if (a == "--comm-memory-percent")
      ok = value(&f->comm_memory_percent);
    else if (a == "--metrics")
      ok = value(&f->metrics);
    else if (a == "--secret-file")
      ok = value(&f->secret_file);
    else if (a == "--pool-secret-file")
      ok = value(&f->pool_secret_file);
    else if (a == "--log-level")
      ok = value(&f->log_level);
    else if (a == "--ready-file")
      ok = value(&f->ready_file);
    else if (a == "--bind-nic")
      f->bind_nic = true;
    else if (a == "--insecure")
      f->insecure = true;
    else if (a == "--help" || a == "-h") {
      usage(stdout);
      return 1;
    } else if (a == "--version") {
      std::printf("reduce-server %s\n", LIBREDUCE_VERSION_STRING);
      return 1;
    } else {
      usage(stderr);
      return fail("unknown option '%s'", a.c_str());
    }
    if (!ok) return fail("option %s needs a value", a.c_str());
  }
  return 0;
}

// Without a secret anyone who reaches the address joins, reads and changes what is reduced:
// fine on loopback (a warning), refused beyond it unless the operator says --insecure, and then
// said first on stderr.
bool secretPolicy(const Flags& f, const std::string& host, const std::string& secret) {
  if (!secret.empty()) return true;
  if (f.insecure) {
    std::fprintf(stderr,
                 "reduce-server: INSECURE: no job secret (--insecure): any process that reaches "
                 "%s can join, read and change what is reduced\n",
                 f.listen.c_str());
    return true;
  }
  if (!rd::transport::isLoopbackHost(host)) {
    std::fprintf(stderr,
                 "reduce-server: refusing to listen on %s without a job secret: any host that "
                 "reaches it could join, read and change what is reduced; give --secret-file "
                 "(or LIBREDUCE_SECRET_FILE), or --insecure to run without one\n",
                 f.listen.c_str());
    return false;
  }
  std::fprintf(stderr,
               "reduce-server: warning: no job secret (--secret-file or LIBREDUCE_SECRET_FILE): "
               "any process that reaches %s can join and read what is reduced; give one "
               "wherever the network is shared\n",
               f.listen.c_str());
  return true;
}

// The job secret or the pool secret, from files readable by their owner only; then the policy
// for running without either. 0, or the exit status.
int loadSecrets(const Flags& f, rd::server::ServerOptions* options) {
  if (!f.pool_secret_file.empty() && !f.secret_file.empty()) {
    return fail("%s",
                "--pool-secret-file and a job secret (--secret-file or "
                "LIBREDUCE_SECRET_FILE) exclude each other: a pool admits each job with "
                "its own key");
  }
  for (auto [path, secret] : {std::pair{&f.secret_file, &options->secret},
                              std::pair{&f.pool_secret_file, &options->pool_secret}}) {
    if (path->empty()) continue;
    std::string error;
    if (!rd::auth::privateFile(*path, &error)) return fail("%s", error.c_str());
    if (rd::auth::readSecretFile(*path, secret) != rdSuccess) {
      return fail("%s", rd::lastError().c_str());
    }
  }
  if (!f.pool_secret_file.empty() && options->pool_secret.empty()) {
    return fail("the pool secret file %s is empty", f.pool_secret_file.c_str());
  }
  return secretPolicy(f, options->host, options->secret + options->pool_secret) ? 0 : 2;
}

// A long-running service takes every fd it is allowed: the default soft limit (often 1024)
// is what a flood of held-open connections to UCX's own listening port would exhaust first.
void raiseFdLimit() {
  rlimit fds{};
  if (getrlimit(RLIMIT_NOFILE, &fds) == 0 && fds.rlim_cur < fds.rlim_max) {
    fds.rlim_cur = fds.rlim_max;
    setrlimit(RLIMIT_NOFILE, &fds);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (int rc = parse(argc, argv, &f); rc != 0) return rc == 1 ? 0 : rc;
  // What reducectl gives a custom reducer (a reduce-server in a container) through the
  // environment, when the command line does not say.
  const char* ready_env = std::getenv("LIBREDUCE_READY_FILE");
  if (f.ready_file.empty() && ready_env != nullptr) f.ready_file = ready_env;
  const char* secret_env = std::getenv("LIBREDUCE_SECRET_FILE");
  if (f.secret_file.empty() && f.pool_secret_file.empty() && secret_env != nullptr) {
    f.secret_file = secret_env;
  }
  if (!f.log_level.empty()) {
    rd::log::Level level = rd::log::Level::kWarn;
    if (!rd::log::parseLevel(f.log_level.c_str(), &level)) {
      return fail("bad --log-level '%s'", f.log_level.c_str());
    }
    rd::log::setLevel(level);
  }
  // The flags are the settings' other spelling: one set of checks and messages for both.
  for (auto [flag, id] :
       {std::pair{&f.threads, Id::kReducerThreads}, std::pair{&f.lanes, Id::kReducerLanes},
        std::pair{&f.max_communicators, Id::kReducerMaxCommunicators},
        std::pair{&f.max_ranks, Id::kReducerMaxRanks},
        std::pair{&f.comm_memory_percent, Id::kReducerCommMemoryPercent}}) {
    if (!flag->empty()) setenv(rd::settings::info(id).env, flag->c_str(), 1);
  }
  int64_t threads = 0, lanes = 1, max_comms = 0, max_ranks = 0, memory_percent = 0;
  if (rd::settings::readInt(Id::kReducerThreads, &threads) != rdSuccess ||
      rd::settings::readInt(Id::kReducerLanes, &lanes) != rdSuccess ||
      rd::settings::readInt(Id::kReducerMaxCommunicators, &max_comms) != rdSuccess ||
      rd::settings::readInt(Id::kReducerMaxRanks, &max_ranks) != rdSuccess ||
      rd::settings::readInt(Id::kReducerCommMemoryPercent, &memory_percent) != rdSuccess) {
    return fail("%s", rd::lastError().c_str());
  }
  if (threads == 0) threads = std::clamp<int64_t>(sysconf(_SC_NPROCESSORS_ONLN), 1, 4);

  rd::server::ServerOptions options;
  options.quota.max_communicators = static_cast<uint32_t>(max_comms);
  options.quota.max_ranks = static_cast<uint32_t>(max_ranks);
  options.quota.memory_percent = static_cast<uint32_t>(memory_percent);
  if (rd::transport::splitAddress(f.listen, &options.host, &options.port) != rdSuccess) {
    return fail("%s", rd::lastError().c_str());
  }
  if (!rd::settings::parseSize(f.memory_limit, &options.memory_limit) ||
      options.memory_limit < (1u << 20)) {
    return fail("bad --memory-limit '%s' (at least 1M)", f.memory_limit.c_str());
  }
  if (int rc = loadSecrets(f, &options); rc != 0) return rc;
  if (f.bind_nic) {
    std::string report;
    rd::server::bindNearInterface(options.host, &report);
    std::fprintf(stderr, "reduce-server: %s\n", report.c_str());
  }

  // Signals are taken synchronously by this thread; every other thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  raiseFdLimit();

  std::unique_ptr<rd::server::ReducerLanes> server;
  if (rd::server::ReducerLanes::start(options, static_cast<int>(lanes), static_cast<int>(threads),
                                      &server) != rdSuccess) {
    return fail("cannot start: %s", rd::lastError().c_str());
  }
  std::unique_ptr<rd::metrics::Endpoint> metrics;
  if (!f.metrics.empty()) {
    std::string host;
    uint16_t port = 0;
    rd::server::ReducerLanes* served = server.get();
    auto render = [served] {
      std::vector<rd::server::ServerStats> stats;
      for (size_t i = 0; i < served->size(); ++i) stats.push_back(served->lane(i).stats());
      return rd::server::renderReducerMetrics(stats);
    };
    if (rd::metrics::parseListenAddress(f.metrics, &host, &port) != rdSuccess ||
        rd::metrics::Endpoint::start(host, port, render, &metrics) != rdSuccess) {
      return fail("--metrics: %s", rd::lastError().c_str());
    }
  }
  std::string ready =
      "LIBREDUCE_REDUCER_READY address=" + server->addresses() + " pid=" + std::to_string(getpid());
  if (metrics) ready += " metrics=" + metrics->address();
  if (rd::trace::Tracer* tracer = rd::trace::Tracer::get()) {
    tracer->setProcessName("reducer " + server->addresses());
    tracer->setTrackLabel("chunk");
  }
  if (!f.ready_file.empty()) {
    std::string tmp = f.ready_file + ".tmp";
    std::ofstream(tmp) << ready << "\n";
    std::rename(tmp.c_str(), f.ready_file.c_str());  // readers never see half a line
  }
  std::printf("%s\n", ready.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "reduce-server %s: %s, shutting down\n", server->addresses().c_str(),
               strsignal(sig));
  // What each lane served (a job given every lane spreads its chunks over them all).
  for (size_t i = 0; i < server->size(); ++i) {
    const rd::server::ServerStats stats = server->lane(i).stats();
    std::fprintf(stderr, "LIBREDUCE_REDUCER_SERVED lane=%zu chunks=%llu operations=%llu\n", i,
                 static_cast<unsigned long long>(stats.chunks_served_total),
                 static_cast<unsigned long long>(stats.totals.ops_served));
  }
  metrics.reset();  // its scrapes read the lanes
  server.reset();
  // What serving cost, from the process's own accounting (benchmarks put it per GB reduced).
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::fprintf(stderr, "LIBREDUCE_REDUCER_CPU user_s=%ld.%06ld sys_s=%ld.%06ld\n",
               static_cast<long>(usage.ru_utime.tv_sec), static_cast<long>(usage.ru_utime.tv_usec),
               static_cast<long>(usage.ru_stime.tv_sec), static_cast<long>(usage.ru_stime.tv_usec));
  std::fprintf(stderr, "LIBREDUCE_REDUCER_MEMORY peak_rss_kib=%ld\n", usage.ru_maxrss);
  return 0;
}
