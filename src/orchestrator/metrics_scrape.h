// SPDX-License-Identifier: BSD-3-Clause
// Reading a reducer's Prometheus endpoint (reduce-server --metrics) from reducectl: its
// samples by series, for `reducectl status` and `reducectl doctor`; the same read of a
// textfile the workers write (LIBREDUCE_METRICS=DIR).
#pragma once

#include <map>
#include <string>

namespace rd::orch {

/**
 * GETs http://@p address/metrics (host:port) within a few seconds and fills @p samples with its
 * samples, by series as written: "name" or "name{label=\"value\",...}"; @p asked_at gets the wall
 * clock (seconds since the epoch) halfway through the request. False, with @p why, when it cannot
 * be read.
 */
bool scrapeMetrics(const std::string& address, std::map<std::string, double>* samples,
                   double* asked_at, std::string* why);

/** Fills @p samples from Prometheus exposition @p text, by series as scrapeMetrics does. */
void parseMetricsText(const std::string& text, std::map<std::string, double>* samples);

/**
 * The value of @p label in @p series ("name{a=\"x\",b=\"y\"}"), "" if it has none. Values with
 * an escaped quote are not read (ours have none).
 */
std::string labelValue(const std::string& series, const std::string& label);

/** A TCP connection to @p address (host:port) within 3 s: the descriptor, or -1 with @p why. */
int connectWithin(const std::string& address, std::string* why);

}  // namespace rd::orch
