// SPDX-License-Identifier: BSD-3-Clause
// Another program run to its end with its output collected (Slurm's and Kubernetes' command-line
// tools), within a time limit so that a server that does not answer becomes an error, not a hang.
#pragma once

#include <string>
#include <vector>

namespace rd::orch {

/**
 * Runs @p argv (looked up in PATH), collecting its standard output and error; returns its exit
 * code, 124 when it ran past @p timeout_s (then killed), -1 with @p err set when it could not be
 * started. The signals the caller blocks are unblocked in the program.
 */
int runCommand(const std::vector<std::string>& argv, std::string* out, std::string* err,
               int timeout_s);

/** @p text as one word for /bin/sh: single-quoted, embedded quotes closed and reopened. */
std::string shellQuoted(const std::string& text);

/** @p text without leading and trailing white space (a command's message, for quoting). */
std::string trimSpace(const std::string& text);

}  // namespace rd::orch
