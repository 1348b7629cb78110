// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the wire-protocol parsers: the first sizeof(Header) bytes of an input are
// a received header, the rest its payload. Besides "no crash, no sanitizer report", it checks
// what the parsers promise: an accepted frame is safe to size buffers from, and an accepted
// hello or address list re-encodes to exactly the bytes it was decoded from.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "protocol/chunking.h"
#include "protocol/compression.h"
#include "protocol/wire.h"

namespace {

using namespace rd::wire;

// The communicator frames are checked against. make_seeds.py writes kData seeds for this shape
// so the fuzzer starts past the identity checks.
constexpr CommShape kShape{0x5eed0000c0ffee01ull, 3, 4, 4096};

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "protocol_fuzz: broken invariant: %s\n", what);
    std::abort();
  }
}

// Separate heap copies, so that ASan catches a parser reading past the part it was given
// (an empty part becomes a null pointer, which the parsers must handle too).
std::vector<uint8_t> copyOf(const uint8_t* data, size_t len) {
  return std::vector<uint8_t>(data, data + len);
}

// Field by field: the header has padding, which a byte comparison would include.
bool sameFields(const Header& a, const Header& b) {
  return a.magic == b.magic && a.version == b.version && a.type == b.type && a.coll == b.coll &&
         a.dtype == b.dtype && a.op == b.op && a.flags == b.flags && a.rank == b.rank &&
         a.nranks == b.nranks && a.epoch == b.epoch && a.root == b.root &&
         a.chunk_bytes == b.chunk_bytes && a.comm_id == b.comm_id && a.seq == b.seq &&
         a.count == b.count && a.chunk == b.chunk && a.status == b.status &&
         a.payload_bytes == b.payload_bytes;
}

void checkFrame(const Header& h) {
  Geometry g;
  ChunkSpan span;
  std::string why;
  if (checkDataFrame(h, kShape, h.rank, &g, &span, &why) != rdSuccess) {
    require(!why.empty(), "data frame rejected without a reason");
    return;
  }
  require(h.comm_id == kShape.comm_id && h.epoch == kShape.epoch && h.nranks == kShape.nranks,
          "frame of another communicator accepted");
  require(h.chunk < g.nchunks, "chunk index out of range accepted");
  require(contributes(g, h.chunk, h.rank), "frame from a non-contributor accepted");
  require(span.elems <= g.chunk_elems, "chunk larger than the chunk size");
  uint64_t parts = g.chunks_per_rank != 0 ? g.nranks : 1;
  require(span.offset <= g.count * parts && span.elems <= g.count * parts - span.offset,
          "chunk outside the operation's buffer");
  size_t esize = rdDataTypeSize(static_cast<rdDataType_t>(h.dtype));
  require(h.payload_bytes == span.elems * esize, "payload length differs from the chunk");
  require(h.chunk_bytes <= kShape.max_chunk_bytes, "chunk size over the cap accepted");
  require(h.payload_bytes <= kShape.max_chunk_bytes, "payload over the chunk size");
  // What a reducer does next: size a slot from the validated span.
  std::vector<uint8_t> slot(span.elems * esize);
  require(slot.size() == h.payload_bytes, "slot size");
  // Compression, against a communicator of each wire type: an accepted compressed frame carries
  // float32 rounded to exactly that type, in an operation that compresses.
  for (rdDataType_t wire : {rdFloat32, rdBfloat16, rdFloat16}) {
    std::string problem;
    if (!checkCompression(h, wire, &problem)) {
      require(!problem.empty(), "compression refused without a reason");
      continue;
    }
    const bool wide = (h.flags & kFlagWideSum) != 0;
    require(!wide || (wire != rdFloat32 && h.dtype == wire), "compressed frame of another type");
    const rdDataType_t data = wide ? rdFloat32 : static_cast<rdDataType_t>(h.dtype);
    require(
        travelType(static_cast<Coll>(h.coll), data, static_cast<rdRedOp_t>(h.op), wire) == h.dtype,
        "frame that travels as another type accepted");
  }
}

void checkHello(const std::vector<uint8_t>& payload) {
  HelloBody body;
  std::string address;
  std::string why;
  if (decodeHello(payload.data(), payload.size(), &body, &address, &why) != rdSuccess) {
    require(!why.empty(), "hello rejected without a reason");
    return;
  }
  require(address.size() == body.address_len && address.size() <= kMaxAddressBytes,
          "hello address length");
  require(body.chunk_bytes >= 4096 && body.chunk_bytes <= kMaxPayloadBytes, "hello chunk size");
  std::string again = encodeHello(body, address);
  require(again.size() == payload.size() &&
              std::memcmp(again.data(), payload.data(), again.size()) == 0,
          "hello does not re-encode to its bytes");
}

void checkAddresses(const std::vector<uint8_t>& payload, uint32_t nranks) {
  // Sized once for the largest validated rank count, not per input.
  static std::vector<std::string> addresses(rd::limits::kMaxRanks);
  if (nranks > rd::limits::kMaxRanks) return;
  std::string why;
  if (decodeAddresses(payload.data(), payload.size(), nranks, addresses.data(), &why) !=
      rdSuccess) {
    require(!why.empty(), "address list rejected without a reason");
    return;
  }
  std::string again = encodeAddresses(addresses.data(), nranks);
  require(again.size() == payload.size() &&
              std::memcmp(again.data(), payload.data(), again.size()) == 0,
          "address list does not re-encode to its bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size_t header_len = std::min(size, sizeof(Header));
  std::vector<uint8_t> header = copyOf(data, header_len);
  std::vector<uint8_t> payload = copyOf(data + header_len, size - header_len);

  Header h;
  std::string why;
  bool accepted = parseHeader(header.data(), header.size(), payload.size(), &h, &why) == rdSuccess;
  if (accepted) {
    Header sent;
    std::memcpy(&sent, header.data(), sizeof sent);
    require(sameFields(h, sent), "parsed header differs from its bytes");
    require(h.nranks >= 1 && h.nranks <= rd::limits::kMaxRanks && h.rank < h.nranks, "rank fields");
    require(h.payload_bytes == payload.size(), "payload length");
    require(std::strcmp(typeName(h.type), "invalid") != 0, "unknown type accepted");
    // As in the reducer: checkDataFrame relies on parseHeader for dtype / op / coll, which
    // parseHeader checks only on data-carrying types, so it is called for kData frames only.
    if (h.type == static_cast<uint8_t>(MsgType::kData)) checkFrame(h);
  } else {
    require(!why.empty(), "header rejected without a reason");
  }

  checkHello(payload);
  // A rejected header still gets its payload decoded (as 1..8 addresses, from the input
  // length), so the decoders are exercised without first passing header validation.
  checkAddresses(payload, accepted ? h.nranks : 1 + static_cast<uint32_t>(size % 8));
  return 0;
}
