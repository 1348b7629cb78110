// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/tuning/study.h"

#include <charconv>
#include <cmath>

namespace rd::orch::tune {

std::string formatNumber(double x) {
  // Integral values within double's exact integer range print as integers: the shortest form
  // would write 1000000 as "1e+06", which an integer flag does not parse.
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (std::isfinite(x) && std::nearbyint(x) == x && std::fabs(x) <= kExactIntegers) {
    return std::to_string(static_cast<long long>(x));
  }
  // Shortest text that reads back as the same double.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, x);
  return std::string(buffer, result.ptr);
}

std::string formatValue(const ParameterValue& value) {
  return value.is_text ? value.text : formatNumber(value.number);
}

std::string formatArgument(const ParameterValue& value) {
  return "--" + value.id + "=" + formatValue(value);
}

}  // namespace rd::orch::tune
