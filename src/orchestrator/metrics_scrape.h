// SPDX-License-Identifier: BSD-3-Clause
// Reading a reducer's Prometheus endpoint (reduce-server --metrics) from reducectl: its
// unlabelled samples by name, for `reducectl status` and `reducectl doctor`.
#pragma once

#include <map>
#include <string>

namespace rd::orch {

/**
 * GETs http://@p address/metrics (host:port) within a few seconds and fills @p samples with its
 * unlabelled samples (name -> value); @p asked_at gets the wall clock (seconds since the epoch)
 * halfway through the request. False, with @p why, when it cannot be read.
 */
bool scrapeMetrics(const std::string& address, std::map<std::string, double>* samples,
                   double* asked_at, std::string* why);

/** A TCP connection to @p address (host:port) within 3 s: the descriptor, or -1 with @p why. */
int connectWithin(const std::string& address, std::string* why);

}  // namespace rd::orch
