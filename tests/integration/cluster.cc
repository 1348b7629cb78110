// SPDX-License-Identifier: BSD-3-Clause
#include "cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

extern char** environ;

namespace rd::test {

namespace {
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The lowest port the kernel hands out for outgoing connections.
int ephemeralLow() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768;
  range >> low;
  return low;
}

// A listen address on a random free port below the ephemeral range. A reducer that may be
// replaced at its address needs one: once it dies, a rank that reconnects to its port from an
// ephemeral port can be given that very port as its source (a TCP self-connect), and holds it.
std::string freeListenAddress() {
  static std::mt19937 rng(std::random_device{}());
  const int low = ephemeralLow();
  for (int attempt = 0; attempt < 100; ++attempt) {
    int port = std::uniform_int_distribution<int>(10000, std::max(10001, low - 1))(rng);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    if (free) return "127.0.0.1:" + std::to_string(port);
  }
  return "127.0.0.1:0";
}
}  // namespace

Cluster::Cluster() {
  char tmpl[] = "/tmp/libreduce-test-XXXXXX";
  dir_ = mkdtemp(tmpl);
  next_comm_ = static_cast<int>(std::random_device{}() & 0xffffff);
}

Cluster::~Cluster() {
  for (Process* p : procs_) {
    if (p->status < 0) {
      kill(-p->pid, SIGKILL);  // the whole process group
      kill(p->pid, SIGKILL);
      waitpid(p->pid, nullptr, 0);
    }
    if (p->out_fd >= 0) close(p->out_fd);
    delete p;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

Process* Cluster::spawn(const std::vector<std::string>& argv,
                        const std::map<std::string, std::string>& env) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  auto* p = new Process;
  p->pid = pid;
  p->out_fd = fds[0];
  procs_.push_back(p);
  return p;
}

void Cluster::pump(milliseconds max_wait) {
  std::vector<pollfd> fds;
  for (Process* p : procs_) {
    if (p->out_fd >= 0) fds.push_back({p->out_fd, POLLIN, 0});
  }
  if (!fds.empty()) poll(fds.data(), fds.size(), static_cast<int>(max_wait.count()));
  for (Process* p : procs_) {
    if (p->out_fd < 0) continue;
    char buf[4096];
    ssize_t n;
    while ((n = read(p->out_fd, buf, sizeof buf)) > 0)
      p->output.append(buf, static_cast<size_t>(n));
    if (n == 0) {
      close(p->out_fd);
      p->out_fd = -1;
    }
  }
  for (Process* p : procs_) {
    if (p->status >= 0) continue;
    int st = 0;
    if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
      p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      p->ended = Clock::now();
    }
  }
}

namespace {
// The reducer binary under test: this build's, or RD_TEST_REDUCE_SERVER (another build's, to
// compare: an older one for a before/after table, a sanitizer one).
std::string reduceServerBinary() {
  const char* other = std::getenv("RD_TEST_REDUCE_SERVER");
  return other != nullptr && *other != '\0' ? other : RD_REDUCE_SERVER_BIN;
}
}  // namespace

Reducer Cluster::startReducer(const std::string& listen, const std::vector<std::string>& flags,
                              const std::map<std::string, std::string>& env, bool retry_in_use) {
  std::vector<std::string> argv = {reduceServerBinary(), "--listen", listen};
  argv.insert(argv.end(), flags.begin(), flags.end());
  Process* p = spawn(argv, env);
  bool ready = waitForOutput(p, "LIBREDUCE_REDUCER_READY", milliseconds(20000));
  if (!ready && retry_in_use && p->output.find("Address already in use") != std::string::npos) {
    return {p, ""};  // taken meanwhile (a lane's port, say): the caller tries another
  }
  EXPECT_TRUE(ready) << p->output;
  size_t at = p->output.find("address=");
  std::string address;
  if (at != std::string::npos) {
    std::istringstream in(p->output.substr(at + 8));
    in >> address;
  }
  return {p, address};
}

std::vector<Reducer> Cluster::startReducers(int n, const std::vector<std::string>& flags,
                                            const std::map<std::string, std::string>& env) {
  std::vector<Reducer> out;
  for (int i = 0; i < n; ++i) {
    Reducer r;
    for (int attempt = 0; attempt < 5 && r.address.empty(); ++attempt) {
      r = startReducer(freeListenAddress(), flags, env, attempt < 4);
    }
    out.push_back(r);
  }
  return out;
}

Reducer Cluster::replaceReducer(const Reducer& old) {
  Reducer r = startReducer(old.address, {}, {});
  EXPECT_EQ(r.address, old.address) << r.process->output;
  return r;
}

Process* Cluster::startRaw(const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {reduceServerBinary()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return spawn(argv, {});
}

std::string Cluster::addresses(const std::vector<Reducer>& reducers) {
  std::string s;
  for (const auto& r : reducers) s += (s.empty() ? "" : ",") + r.address;
  return s;
}

std::vector<Process*> Cluster::startWorkers(
    int n, const std::string& reducers, const std::vector<std::string>& args,
    const std::map<std::string, std::string>& env,
    const std::map<int, std::map<std::string, std::string>>& per_rank_env) {
  return startPrograms(RD_WORKER_CHECK_BIN, n, reducers, args, env, per_rank_env);
}

std::vector<Process*> Cluster::startPrograms(
    const std::string& binary, int n, const std::string& reducers,
    const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
    const std::map<int, std::map<std::string, std::string>>& per_rank_env) {
  std::string comm = "test-" + std::to_string(getpid()) + "-" + std::to_string(next_comm_++);
  std::vector<Process*> out;
  for (int r = 0; r < n; ++r) {
    std::map<std::string, std::string> e = {
        {"RANK", std::to_string(r)},      {"WORLD_SIZE", std::to_string(n)},
        {"LIBREDUCE_REDUCERS", reducers}, {"LIBREDUCE_COMM_ID", comm},
        {"MASTER_ADDR", "127.0.0.1"},     {"LIBREDUCE_TIMEOUT_MS", "10000"}};
    // These tests are about the reduction server: with reducers they run rs, unless a test
    // asks for auto (which measures rs against ring on each size's first calls) or ring.
    if (!reducers.empty()) e["LIBREDUCE_ALGO"] = "rs";
    // Below the kernel's ephemeral ports (32768..): one of those may be taken by a connection.
    if (reducers.empty()) {
      e["MASTER_PORT"] = std::to_string(20000 + (getpid() * 16 + next_comm_ * 2) % 12000);
    }
    for (const auto& [k, v] : env) e[k] = v;
    auto it = per_rank_env.find(r);
    if (it != per_rank_env.end()) {
      for (const auto& [k, v] : it->second) e[k] = v;
    }
    std::vector<std::string> argv = {binary};
    argv.insert(argv.end(), args.begin(), args.end());
    out.push_back(spawn(argv, e));
  }
  return out;
}

bool Cluster::wait(const std::vector<Process*>& procs, milliseconds limit) {
  auto deadline = Clock::now() + limit;
  for (;;) {
    bool all = true;
    for (Process* p : procs) all = all && p->status >= 0 && p->out_fd < 0;
    if (all) return true;
    if (Clock::now() >= deadline) return false;
    pump(milliseconds(100));
  }
}

bool Cluster::waitForOutput(Process* p, const std::string& text, milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (p->output.find(text) == std::string::npos) {
    if (p->status >= 0 && p->out_fd < 0) return false;
    if (Clock::now() >= deadline) return false;
    pump(milliseconds(50));
  }
  return true;
}

void Cluster::signal(Process* p, int sig) {
  kill(p->pid, sig);
}

long Cluster::rssKiB(const Process* p, const char* field) {
  std::ifstream in("/proc/" + std::to_string(p->pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field));
  }
  return -1;
}

double Cluster::cpuSeconds(const Process* p) {
  std::ifstream in("/proc/" + std::to_string(p->pid) + "/stat");
  std::string text;
  std::getline(in, text);
  size_t close_paren = text.rfind(')');
  if (close_paren == std::string::npos) return -1;
  std::istringstream fields(text.substr(close_paren + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::atof(f.c_str());
    if (i == 15) stime = std::atof(f.c_str());
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::string joinedOutput(const std::vector<Process*>& procs) {
  std::string s;
  for (Process* p : procs) s += p->output;
  return s;
}

// The reducer's environment for a peak-RSS check. Under AddressSanitizer, freed memory waits in
// a quarantine of 256 MiB by default before reuse; UCX allocates and frees every multi-fragment
// eager message it reassembles, so the quarantine alone would fill past the limit checked here.
#if defined(__SANITIZE_ADDRESS__)
#define RD_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RD_TEST_ASAN 1
#endif
#endif
std::map<std::string, std::string> rssCheckEnvironment() {
#if defined(RD_TEST_ASAN)
  const char* options = std::getenv("ASAN_OPTIONS");
  std::string value = options != nullptr && *options != '\0' ? std::string(options) + ":" : "";
  return {{"ASAN_OPTIONS", value + "quarantine_size_mb=8"}};
#else
  return {};
#endif
}

bool underAddressSanitizer() {
#if defined(RD_TEST_ASAN)
  return true;
#else
  return false;
#endif
}

}  // namespace rd::test
