// SPDX-License-Identifier: BSD-3-Clause
// Status helpers shared by every part of libreduce: the per-thread "last error" message that
// rdGetLastError returns, and setError() which records it and logs it in one place.
#pragma once

#include <string>

#include "libreduce/reduce.h"

namespace rd {

/** Records @p message as this thread's last error and returns @p status (for `return`). */
rdResult_t setError(rdResult_t status, const std::string& message);

/** printf-style setError. */
rdResult_t setErrorf(rdResult_t status, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/** This thread's last error message ("" when none; one longer than 4 KiB is cut, marked
 * " [...]"). Valid to call at any point of a thread's or the process's exit. */
std::string lastError();

/** Clears this thread's last error (called at the start of public entry points). */
void clearLastError();

}  // namespace rd
