// SPDX-License-Identifier: BSD-3-Clause
// reducectl's command-line pieces shared by its subcommands: the words and "--name value"
// flags after a subcommand, numbers and bandwidths checked as they are read, and the exit for
// bad usage (status 2, the message on stderr).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "orchestrator/job_spec.h"

namespace rd::orch::cli {

constexpr int kExitUsage = 2;

/** Prints "reducectl: @p message" on stderr and exits with kExitUsage. */
[[noreturn]] void die(const std::string& message);

/** Flags after the subcommand: "--name value" pairs and bare words, in order. */
struct Args {
  std::vector<std::string> words;
  std::vector<std::pair<std::string, std::string>> flags;
};

/**
 * argv[@p first..]: --help prints the usage and exits 0; a flag of @p switches takes no value;
 * any other flag takes the next argument (dies when there is none).
 */
Args parseArgs(int argc, char** argv, int first, const std::vector<std::string>& switches);

/** @p text as a whole number in [@p lo, @p hi]; dies naming @p name otherwise. */
int intFlag(const std::string& name, const std::string& text, int lo, int hi);

/** @p text as a bandwidth in Gbit/s above 0; dies naming @p name otherwise. */
double gbpsFlag(const std::string& name, const std::string& text);

/** The spec at @p path; dies with the reader's error. */
JobSpec loadOrDie(const std::string& path);

}  // namespace rd::orch::cli
