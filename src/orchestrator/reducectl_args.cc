// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/reducectl_args.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "orchestrator/job_spec_reader.h"
#include "orchestrator/reducectl_usage.h"

namespace rd::orch::cli {

void die(const std::string& message) {
  std::fprintf(stderr, "reducectl: %s\n", message.c_str());
  std::exit(kExitUsage);
}

Args parseArgs(int argc, char** argv, int first, const std::vector<std::string>& switches) {
  Args args;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      printReducectlUsage(stdout);
      std::exit(0);
    }
    if (a.rfind("--", 0) != 0) {
      args.words.push_back(a);
      continue;
    }
    bool is_switch = false;
    for (const auto& s : switches) is_switch = is_switch || s == a;
    if (is_switch) {
      args.flags.emplace_back(a, "");
    } else if (i + 1 < argc) {
      args.flags.emplace_back(a, argv[++i]);
    } else {
      die(a + " needs a value");
    }
  }
  return args;
}

int intFlag(const std::string& name, const std::string& text, int lo, int hi) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < lo || v > hi) {
    die(name + " must be a whole number in " + std::to_string(lo) + ".." + std::to_string(hi) +
        " (got '" + text + "')");
  }
  return static_cast<int>(v);
}

double gbpsFlag(const std::string& name, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0) {
    die(name + " must be a bandwidth in Gbit/s above 0 (got '" + text + "')");
  }
  return v;
}

JobSpec loadOrDie(const std::string& path) {
  JobSpec spec;
  std::string error;
  if (!loadJobSpec(path, &spec, &error)) die(error);
  return spec;
}

}  // namespace rd::orch::cli
