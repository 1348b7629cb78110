// SPDX-License-Identifier: BSD-3-Clause
// Wire compression: which operations travel narrower than their data, as what, and how a
// frame says so. float32 values of an all-reduce or reduce-scatter (sum, avg) and of an
// all-gather travel as bfloat16 or float16 when the communicator asks (LIBREDUCE_WIRE_DTYPE):
// the worker rounds each value once (to nearest even), the reducer sums in float32 and rounds
// the result once, the worker widens it exactly into its float32 output. Everything else
// travels as it is: integers (they must stay exact), 16-bit floats (already narrow), float64
// (the type of metrics, counters and times, whose sums must stay exact: compressed, the perf
// programs' own float64 all-reduce of their times overflowed float16 to Inf), the other
// operators (products compound the rounding; min / max gain little), and broadcast.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/wire.h"

namespace rd::wire {

/**
 * The communicator's wire type as LIBREDUCE_WIRE_DTYPE spells it: "none" (rdFloat32: values
 * travel as they are), "bf16" (rdBfloat16), "fp16" (rdFloat16). False for other names.
 */
bool wireDtypeFromName(const std::string& name, rdDataType_t* out);

/** "none", "bf16" or "fp16"; "invalid" for other types. */
const char* wireDtypeName(rdDataType_t wire);

/** True for the wire types a communicator may choose (rdFloat32 = none, bf16, fp16). */
bool validWireDtype(int wire);

/**
 * The type the values of an operation travel as, with the communicator's wire type @p wire:
 * @p wire where the operation compresses (see above), else @p dtype itself. A compressed frame
 * carries kFlagWideSum.
 */
rdDataType_t travelType(Coll coll, rdDataType_t dtype, rdRedOp_t op, rdDataType_t wire);

/** Hello flags carrying the communicator's wire type (every rank must join with the same). */
uint16_t helloWireFlags(rdDataType_t wire);

/** The wire type of a communicator joined with hello @p flags (rdFloat32 when none). */
rdDataType_t wireDtypeOfHelloFlags(uint16_t flags);

/**
 * Checks the compression of a kData frame against the communicator's wire type @p wire: a
 * frame with kFlagWideSum must carry exactly what travelType() gives for a float32 operation
 * (Header.dtype the wire type, an operation that compresses); one without it must not be one
 * that compresses. On failure says why.
 */
bool checkCompression(const Header& h, rdDataType_t wire, std::string* why);

}  // namespace rd::wire
