// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/metrics_scrape.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace rd::orch {

namespace {

constexpr int kTimeoutMs = 3000;
constexpr size_t kMaxReply = 4 << 20;  // a reducer's page is a few KiB

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

int connectWithin(const std::string& address, std::string* why) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    *why = "not an address of the form host:port";
    return -1;
  }
  const std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    *why = std::string("cannot resolve it: ") + gai_strerror(rc);
    return -1;
  }
  int fd = socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int rc = fd < 0 ? -1 : connect(fd, found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);
  if (fd >= 0 && rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = ETIMEDOUT;
    if (poll(&p, 1, kTimeoutMs) == 1) {
      socklen_t len = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
    rc = err == 0 ? 0 : -1;
    errno = err;
  }
  if (rc != 0) {
    *why = std::strerror(errno);
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

bool scrapeMetrics(const std::string& address, std::map<std::string, double>* samples,
                   double* asked_at, std::string* why) {
  const double start = wallSeconds();
  int fd = connectWithin(address, why);
  if (fd < 0) return false;
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: " + address + "\r\n\r\n";
  bool sent = write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size());
  std::string reply;
  char buf[4096];
  while (sent && reply.size() < kMaxReply) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, kTimeoutMs) != 1) break;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  *asked_at = (start + wallSeconds()) / 2;
  if (reply.rfind("HTTP/1.", 0) != 0 || reply.find(" 200 ") == std::string::npos) {
    *why = "no metrics there (" + reply.substr(0, reply.find('\r')) + ")";
    return false;
  }
  parseMetricsText(reply.substr(reply.find("\r\n\r\n") + 4), samples);
  return true;
}

void parseMetricsText(const std::string& text, std::map<std::string, double>* samples) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    // The series ends at the first space after its labels, if it has any (a label's value may
    // hold spaces; our own never hold "} ").
    const size_t labels_end = line.find('{') == std::string::npos ? 0 : line.find("} ");
    if (labels_end == std::string::npos) continue;
    const size_t space = line.find(' ', labels_end);
    if (space == std::string::npos) continue;
    (*samples)[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
}

std::string labelValue(const std::string& series, const std::string& label) {
  size_t at = series.find("{" + label + "=\"");
  if (at == std::string::npos) at = series.find("," + label + "=\"");
  if (at == std::string::npos) return "";
  const size_t from = at + label.size() + 3;
  const size_t end = series.find('"', from);
  return end == std::string::npos ? "" : series.substr(from, end - from);
}

}  // namespace rd::orch
