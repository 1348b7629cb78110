// SPDX-License-Identifier: BSD-3-Clause
// Uses the installed C++ layer: an error surfaces as rd::Error.
#include <cstdio>
#include <libreduce/reduce.hpp>

int main() {
  std::printf("downstream C++: libreduce %s\n", rd::versionString().c_str());
  try {
    rd::check(rdGetVersion(nullptr));
  } catch (const rd::Error& e) {
    std::printf("downstream C++ ok: %s\n", e.what());
    return 0;
  }
  return 1;
}
