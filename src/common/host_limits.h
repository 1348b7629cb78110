// SPDX-License-Identifier: BSD-3-Clause
// The host and process limits that many ranks on one host run into: open files, System V
// shared-memory segments, /dev/shm space, memory maps. An error from a library that only says
// "Out of memory" gets the one that is nearly used up added to it.
#pragma once

#include <string>

namespace rd::limits {

/**
 * The limits at or above @p share (0-1) of their size, each as "what: used of limit (how to
 * raise it)" joined by "; ", or "" when none is.
 */
std::string hostLimitsNear(double share = 0.9);

}  // namespace rd::limits
