// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/job_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>

#include "orchestrator/replica_env.h"

namespace rd::orch {

namespace {

std::string randomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    got += static_cast<size_t>(n);
  }
  std::string hex;
  char two[3];
  for (unsigned char c : raw) {
    std::snprintf(two, sizeof two, "%02x", c);
    hex += two;
  }
  return hex;
}

// Binds 127.0.0.1:PORT (0: any), or *:PORT with @p any_address, and returns the port bound, 0 on
// failure. The socket is closed at once: the port stays free for the replica, which binds it
// moments later.
int bindLocal(int port, bool any_address) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(any_address ? INADDR_ANY : INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof addr;
  int bound = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    bound = ntohs(addr.sin_port);
  }
  close(fd);
  return bound;
}

}  // namespace

std::string makeJobId(const std::string& name) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return name + "-" + stamp + "-" + randomHex(2);
}

bool makeDirectories(const std::string& path, std::string* error) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string part = path.substr(0, pos);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = "cannot create directory '" + part + "': " + std::strerror(errno);
      return false;
    }
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = "'" + path + "' is not a directory";
    return false;
  }
  return true;
}

bool makeSecret(std::string* dir, std::string* secret_file, std::string* error) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") + "/reducectl-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    *error = "cannot create a private directory for the job secret (" + pattern +
             "): " + std::strerror(errno);
    return false;
  }
  *dir = pattern;
  *secret_file = pattern + "/secret";
  return writeSecretFile(*secret_file, error);
}

std::string newSecret() {
  return randomHex(32);
}

bool createPrivateFile(const std::string& path, const std::string& text, const std::string& what,
                       std::string* error) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = "cannot create " + what + path + ": " + std::strerror(errno);
    return false;
  }
  bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (close(fd) != 0 || !written) {
    *error = "cannot write " + what + path;
    return false;
  }
  return true;
}

bool writeSecretFile(const std::string& path, std::string* error) {
  // A fresh file of our own, never one that someone else put there: a stale file of an earlier
  // run is removed (unlink removes a symbolic link itself, not what it points to), and the file
  // is created exclusively, refusing a link or a file that appeared in between.
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    *error = "cannot replace the job secret " + path + ": " + std::strerror(errno);
    return false;
  }
  std::string secret = newSecret();
  if (secret.empty()) {
    *error = "cannot write the job secret to " + path + ": no random bytes";
    return false;
  }
  return createPrivateFile(path, secret + "\n", "the job secret ", error);
}

std::string readyAddress(const std::string& ready_file) {
  return readyField(ready_file, "address");
}

std::string readyField(const std::string& ready_file, const std::string& key) {
  std::ifstream in(ready_file);
  std::string line;
  // Only a whole line counts: a reducer may still be writing it (reduce-server renames its file
  // into place; a custom reducer might not).
  if (!std::getline(in, line) || in.eof()) return {};
  const std::string field = " " + key + "=";
  size_t at = (" " + line).find(field);
  if (at == std::string::npos) return {};
  std::string rest = line.substr(at + field.size() - 1);
  return rest.substr(0, rest.find_first_of(" \t"));
}

namespace {

// A port to try, below the kernel's ephemeral range: a port from that range can be taken
// meanwhile by any outgoing connection, even by a rank's own connect to it before the server
// binds (TCP self-connect). 0 (the kernel picks) when there is no room below the range.
int candidatePort() {
  int ephemeral_low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  constexpr int kLowest = 10000;
  if (ephemeral_low <= kLowest + 2) return 0;
  uint32_t r = 0;
  if (getrandom(&r, sizeof r, 0) != sizeof r) return 0;
  return kLowest + static_cast<int>(r % static_cast<uint32_t>(ephemeral_low - 1 - kLowest));
}

}  // namespace

int reserveLocalPort(bool pair, std::set<int>* given, bool any_address) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    int want = candidatePort();
    int port = bindLocal(want, any_address);
    if (port == 0 && want == 0) return 0;
    if (port == 0) continue;
    if (given->count(port) != 0 || (pair && given->count(port + 1) != 0)) continue;
    if (pair && (port >= 65535 || bindLocal(port + 1, any_address) != port + 1)) continue;
    given->insert(port);
    if (pair) given->insert(port + 1);
    return port;
  }
  return 0;
}

bool writeFileAtomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

std::string absolutePath(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  std::string base = cwd;
  if (path.empty() || path == ".") return base;
  return base + "/" + (path.rfind("./", 0) == 0 ? path.substr(2) : path);
}

std::vector<std::pair<std::string, std::string>> inheritedEnvironment(char** env) {
  std::set<std::string> managed(managedVariables().begin(), managedVariables().end());
  managed.insert("LIBREDUCE_SECRET");
  managed.insert("LIBREDUCE_READY_FILE");
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = env; e != nullptr && *e != nullptr; ++e) {
    std::string entry = *e;
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq);
    if (managed.count(name) == 0) out.emplace_back(name, entry.substr(eq + 1));
  }
  return out;
}

std::vector<std::string> sortedEntries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace rd::orch
