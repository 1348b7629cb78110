// SPDX-License-Identifier: BSD-3-Clause
// A Prometheus scrape endpoint: a listener of its own that answers `GET /metrics` with what a
// render callback returns, and nothing else. It is one more port anyone who reaches it can talk
// to, so it reads at most one bounded request per connection within a deadline, holds a bounded
// number of connections (the oldest goes first), and answers whatever else with an HTTP error
// or a close. One thread, blocked in poll while idle.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "libreduce/reduce.h"

namespace rd::metrics {

class Endpoint {
 public:
  /** The exposition text, made on the endpoint's thread at each scrape. */
  using Render = std::function<std::string()>;

  /**
   * Listens on @p host : @p port (0: any free port) and serves until destroyed; @p out's
   * address() is valid on return.
   */
  static rdResult_t start(const std::string& host, uint16_t port, Render render,
                          std::unique_ptr<Endpoint>* out);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  /** "host:port" it listens on. */
  const std::string& address() const { return address_; }
  /** Scrapes answered with the metrics, and requests answered with an error or closed. */
  uint64_t scrapes() const { return scrapes_; }
  uint64_t refused() const { return refused_; }

  /** Bounds on what one client may cost. */
  static constexpr size_t kMaxRequestBytes = 8192;
  static constexpr int kMaxClients = 32;
  static constexpr int kDeadlineMs = 2000;

 private:
  Endpoint() = default;
  void serve();
  // The whole HTTP response to one request.
  std::string answer(const std::string& request);

  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: the destructor's stop signal
  std::string address_;
  Render render_;
  std::thread thread_;
  std::atomic<uint64_t> scrapes_{0};
  std::atomic<uint64_t> refused_{0};
};

/** "host:port", or a bare "port" (loopback): where a metrics endpoint is asked to listen. */
rdResult_t parseListenAddress(const std::string& text, std::string* host, uint16_t* port);

}  // namespace rd::metrics
