// SPDX-License-Identifier: BSD-3-Clause
#include "protocol/compression.h"

#include <cstring>

#include "common/status.h"
#include "libreduce/comm.h"

namespace rd::wire {

namespace {

struct WireName {
  rdDataType_t type;
  const char* name;
  uint16_t hello_flag;
};
constexpr WireName kWireNames[] = {
    {rdFloat32, "none", 0},
    {rdBfloat16, "bf16", kFlagWireBf16},
    {rdFloat16, "fp16", kFlagWireFp16},
};

bool compresses(Coll coll, rdDataType_t dtype, rdRedOp_t op) {
  if (dtype != rdFloat32) return false;
  switch (coll) {
    case Coll::kAllReduce:
    case Coll::kReduceScatter: return op == rdSum || op == rdAvg;
    case Coll::kAllGather: return true;
    case Coll::kBroadcast: return false;
  }
  return false;
}

}  // namespace

bool wireDtypeFromName(const std::string& name, rdDataType_t* out) {
  for (const WireName& w : kWireNames) {
    if (name == w.name) {
      *out = w.type;
      return true;
    }
  }
  return false;
}

const char* wireDtypeName(rdDataType_t wire) {
  for (const WireName& w : kWireNames) {
    if (wire == w.type) return w.name;
  }
  return "invalid";
}

bool validWireDtype(int wire) {
  for (const WireName& w : kWireNames) {
    if (wire == static_cast<int>(w.type)) return true;
  }
  return false;
}

rdDataType_t travelType(Coll coll, rdDataType_t dtype, rdRedOp_t op, rdDataType_t wire) {
  return wire != rdFloat32 && compresses(coll, dtype, op) ? wire : dtype;
}

uint16_t helloWireFlags(rdDataType_t wire) {
  for (const WireName& w : kWireNames) {
    if (wire == w.type) return w.hello_flag;
  }
  return 0;
}

rdDataType_t wireDtypeOfHelloFlags(uint16_t flags) {
  for (const WireName& w : kWireNames) {
    if (w.hello_flag != 0 && (flags & w.hello_flag) != 0) return w.type;
  }
  return rdFloat32;
}

bool checkCompression(const Header& h, rdDataType_t wire, std::string* why) {
  const auto coll = static_cast<Coll>(h.coll);
  const auto op = static_cast<rdRedOp_t>(h.op);
  if ((h.flags & kFlagWideSum) == 0) {
    if (travelType(coll, static_cast<rdDataType_t>(h.dtype), op, wire) != h.dtype) {
      *why = std::string("uncompressed ") + rdDataTypeName(static_cast<rdDataType_t>(h.dtype)) +
             " " + collName(h.coll) + " on a communicator whose wire type is " +
             wireDtypeName(wire);
      return false;
    }
    return true;
  }
  if (wire == rdFloat32 || h.dtype != wire || travelType(coll, rdFloat32, op, wire) != wire) {
    *why = std::string("compressed ") + collName(h.coll) + " as " +
           rdDataTypeName(static_cast<rdDataType_t>(h.dtype)) +
           " on a communicator whose wire type is " + wireDtypeName(wire);
    return false;
  }
  return true;
}

}  // namespace rd::wire

extern "C" {

rdResult_t rdWireDtypeFromName(const char* name, rdDataType_t* wire_dtype) {
  rd::clearLastError();
  if (name == nullptr || wire_dtype == nullptr) {
    return rd::setError(rdInvalidArgument, "name or wire_dtype is NULL");
  }
  if (!rd::wire::wireDtypeFromName(name, wire_dtype)) {
    return rd::setErrorf(rdInvalidArgument, "no wire type '%s': expected none, bf16 or fp16", name);
  }
  return rdSuccess;
}

const char* rdWireDtypeName(rdDataType_t wire_dtype) {
  return rd::wire::wireDtypeName(wire_dtype);
}

}  // extern "C"
