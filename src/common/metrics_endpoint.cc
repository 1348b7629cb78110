// SPDX-License-Identifier: BSD-3-Clause
#include "common/metrics_endpoint.h"

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "common/metrics_text.h"
#include "common/status.h"

namespace rd::metrics {

namespace {

using Clock = std::chrono::steady_clock;

struct Client {
  int fd;
  std::string request;
  Clock::time_point deadline;
};

// Sends all of @p text, waiting at most the endpoint's deadline for a slow reader.
void sendAll(int fd, const std::string& text) {
  size_t sent = 0;
  while (sent < text.size()) {
    ssize_t n = send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) {
        pollfd p{fd, POLLOUT, 0};
        if (poll(&p, 1, Endpoint::kDeadlineMs) > 0) continue;
      }
      return;
    }
    sent += static_cast<size_t>(n);
  }
}

std::string response(int code, const char* reason, const std::string& content_type,
                     const std::string& body, bool head, const char* extra = "") {
  return "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n" +
         extra + "\r\n" + (head ? "" : body);
}

bool requestComplete(const std::string& r) {
  return r.find("\r\n\r\n") != std::string::npos || r.find("\n\n") != std::string::npos;
}

}  // namespace

rdResult_t parseListenAddress(const std::string& text, std::string* host, uint16_t* port) {
  std::string port_text = text;
  *host = "127.0.0.1";
  size_t colon = text.rfind(':');
  if (colon != std::string::npos) {
    *host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
      *host = host->substr(1, host->size() - 2);
    }
  }
  const bool digits = !port_text.empty() && port_text.size() <= 5 &&
                      std::all_of(port_text.begin(), port_text.end(),
                                  [](unsigned char c) { return c >= '0' && c <= '9'; });
  if (host->empty() || !digits || std::stoi(port_text) > 65535) {
    return setErrorf(rdInvalidArgument, "'%s' is not [HOST:]PORT", text.c_str());
  }
  *port = static_cast<uint16_t>(std::stoi(port_text));
  return rdSuccess;
}

rdResult_t Endpoint::start(const std::string& host, uint16_t port, Render render,
                           std::unique_ptr<Endpoint>* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return setErrorf(rdInvalidArgument, "metrics address %s: %s", host.c_str(), gai_strerror(rc));
  }
  std::unique_ptr<Endpoint> e(new Endpoint);
  e->render_ = std::move(render);
  e->listen_fd_ = socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(e->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const bool bound = e->listen_fd_ >= 0 &&
                     bind(e->listen_fd_, found->ai_addr, found->ai_addrlen) == 0 &&
                     ::listen(e->listen_fd_, SOMAXCONN) == 0;
  freeaddrinfo(found);
  if (!bound) {
    return setErrorf(rdSystemError, "cannot listen for metrics on %s:%u: %s", host.c_str(),
                     static_cast<unsigned>(port), std::strerror(errno));
  }
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  getsockname(e->listen_fd_, reinterpret_cast<sockaddr*>(&local), &len);
  char name[NI_MAXHOST], serv[NI_MAXSERV];
  getnameinfo(reinterpret_cast<sockaddr*>(&local), len, name, sizeof name, serv, sizeof serv,
              NI_NUMERICHOST | NI_NUMERICSERV);
  const std::string shown =
      std::strchr(name, ':') != nullptr ? "[" + std::string(name) + "]" : name;
  e->address_ = shown + ":" + serv;
  e->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (e->wake_fd_ < 0) return setErrorf(rdSystemError, "eventfd: %s", std::strerror(errno));
  Endpoint* self = e.get();
  e->thread_ = std::thread([self] { self->serve(); });
  *out = std::move(e);
  return rdSuccess;
}

Endpoint::~Endpoint() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void Endpoint::serve() {
  std::vector<Client> clients;
  auto drop = [&](size_t i) {
    close(clients[i].fd);
    clients.erase(clients.begin() + static_cast<std::ptrdiff_t>(i));
  };
  for (;;) {
    std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int timeout = -1;
    const auto now = Clock::now();
    for (const Client& c : clients) {
      fds.push_back({c.fd, POLLIN, 0});
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - now).count();
      timeout = timeout < 0 ? static_cast<int>(std::max<int64_t>(left, 0))
                            : std::min(timeout, static_cast<int>(std::max<int64_t>(left, 0)));
    }
    if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) return;
    if ((fds[1].revents & POLLIN) != 0) break;
    // Clients first (their indexes match fds), then whoever is new.
    for (size_t i = clients.size(); i-- > 0;) {
      Client& c = clients[i];
      const short ready = fds[i + 2].revents;
      if (ready == 0) {
        if (Clock::now() >= c.deadline) {
          ++refused_;
          drop(i);
        }
        continue;
      }
      char buffer[2048];
      ssize_t n = recv(c.fd, buffer, sizeof buffer, 0);
      if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        ++refused_;
        drop(i);
        continue;
      }
      c.request.append(buffer, static_cast<size_t>(n));
      if (c.request.size() > kMaxRequestBytes) {
        ++refused_;
        sendAll(c.fd, response(431, "Request Header Fields Too Large", "text/plain", "", false));
        drop(i);
      } else if (requestComplete(c.request)) {
        sendAll(c.fd, answer(c.request));
        drop(i);
      }
    }
    if ((fds[0].revents & POLLIN) != 0) {
      for (;;) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (static_cast<int>(clients.size()) >= kMaxClients) {
          ++refused_;
          drop(0);  // the oldest: held-open connections cannot lock out a scraper
        }
        clients.push_back(
            {fd, std::string(), Clock::now() + std::chrono::milliseconds(kDeadlineMs)});
      }
    }
  }
  for (const Client& c : clients) close(c.fd);
}

std::string Endpoint::answer(const std::string& request) {
  const std::string line = request.substr(0, request.find_first_of("\r\n"));
  const size_t a = line.find(' ');
  const size_t b = a == std::string::npos ? a : line.find(' ', a + 1);
  if (b == std::string::npos || line.compare(b + 1, 7, "HTTP/1.") != 0) {
    ++refused_;
    return response(400, "Bad Request", "text/plain", "not an HTTP/1 request\n", false);
  }
  const std::string method = line.substr(0, a);
  const std::string target = line.substr(a + 1, b - a - 1);
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    ++refused_;
    return response(405, "Method Not Allowed", "text/plain", "only GET\n", false,
                    "Allow: GET, HEAD\r\n");
  }
  if (target.substr(0, target.find('?')) != "/metrics") {
    ++refused_;
    return response(404, "Not Found", "text/plain", "libreduce serves /metrics only\n", head);
  }
  ++scrapes_;
  return response(200, "OK", kContentType, render_(), head);
}

}  // namespace rd::metrics
