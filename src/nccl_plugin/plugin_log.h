// SPDX-License-Identifier: BSD-3-Clause
// Logging through the function NCCL hands to init, and the translation of libreduce statuses
// into NCCL error codes. The plugin never aborts: every failure becomes a code and a message.
#pragma once

#include <string>

#include "libreduce/reduce.h"
#include "nccl_plugin/nccl_net_abi.h"

namespace rd::nccl {

/** Remembers NCCL's logger (the first non-null one wins; NCCL passes the same one each time). */
void setLogger(ncclDebugLogger_t logger);

/** Logs through NCCL's logger, or to stderr at warning level before init. */
void logWarn(const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
void logInfo(unsigned long subsystem, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** The NCCL code for a libreduce status: peers' failures are remote, bad input is invalid. */
ncclResult_t toNccl(rdResult_t status);

/**
 * Warns "@p what: <libreduce's message>" and returns the matching NCCL code. Call right after
 * the failing libreduce call, on the same thread (the message is per thread).
 */
ncclResult_t failWith(const char* file, int line, rdResult_t status, const std::string& what);

}  // namespace rd::nccl

#define RD_NCCL_WARN(...) ::rd::nccl::logWarn(__FILE__, __LINE__, __VA_ARGS__)
#define RD_NCCL_INFO(subsystem, ...) ::rd::nccl::logInfo(subsystem, __FILE__, __LINE__, __VA_ARGS__)
#define RD_NCCL_FAIL(status, what) ::rd::nccl::failWith(__FILE__, __LINE__, status, what)
