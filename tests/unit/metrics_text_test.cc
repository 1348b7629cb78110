// SPDX-License-Identifier: BSD-3-Clause
// The Prometheus text writer: families, escaped labels, exact counters, cumulative histograms.
#include "common/metrics_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/metrics_endpoint.h"

namespace rd::metrics {
namespace {

TEST(MetricsText, FamiliesAndSamples) {
  TextWriter w;
  w.family("libreduce_x_bytes_total", "counter", "Bytes.");
  w.sample("libreduce_x_bytes_total", {{"comm", "00ab"}}, 12345678901234.0);
  w.sample("libreduce_x_bytes_total", {}, 0.25);
  EXPECT_EQ(w.text(),
            "# HELP libreduce_x_bytes_total Bytes.\n"
            "# TYPE libreduce_x_bytes_total counter\n"
            "libreduce_x_bytes_total{comm=\"00ab\"} 12345678901234\n"
            "libreduce_x_bytes_total 0.25\n");
}

TEST(MetricsText, LabelValuesAreEscaped) {
  EXPECT_EQ(escapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(MetricsText, HistogramBucketsAreCumulativeWithInf) {
  TextWriter w;
  w.histogram("t_seconds", {{"op", "sum"}}, {0.001, 0.01}, {3, 2, 1}, 0.5);
  EXPECT_EQ(w.text(),
            "t_seconds_bucket{op=\"sum\",le=\"0.001\"} 3\n"
            "t_seconds_bucket{op=\"sum\",le=\"0.01\"} 5\n"
            "t_seconds_bucket{op=\"sum\",le=\"+Inf\"} 6\n"
            "t_seconds_sum{op=\"sum\"} 0.5\n"
            "t_seconds_count{op=\"sum\"} 6\n");
}

TEST(MetricsEndpoint, ListenAddressesParse) {
  std::string host;
  uint16_t port = 1;
  ASSERT_EQ(parseListenAddress("0", &host, &port), rdSuccess);
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 0);
  ASSERT_EQ(parseListenAddress("0.0.0.0:9400", &host, &port), rdSuccess);
  EXPECT_EQ(host, "0.0.0.0");
  EXPECT_EQ(port, 9400);
  ASSERT_EQ(parseListenAddress("[::1]:9400", &host, &port), rdSuccess);
  EXPECT_EQ(host, "::1");
  for (const char* bad : {"", ":9400", "host:", "host:70000", "host:x1", "9400a"}) {
    EXPECT_NE(parseListenAddress(bad, &host, &port), rdSuccess) << bad;
  }
}

}  // namespace
}  // namespace rd::metrics
