// SPDX-License-Identifier: BSD-3-Clause
// `reducectl --help`: every command and option in one text, kept beside the code that parses
// them (reducectl_main.cc) and the reference (docs/reducectl.md).
#pragma once

#include <cstdio>

namespace rd::orch {

/** Writes reducectl's usage to @p out. */
void printReducectlUsage(FILE* out);

}  // namespace rd::orch
