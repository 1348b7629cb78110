// SPDX-License-Identifier: BSD-3-Clause
// The wire protocol's parsers. Every frame comes from the network, so each
// rejection test starts from a valid frame and breaks exactly one field: the reason text is
// checked too, so a frame refused for some other reason does not pass as the intended check.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "protocol/chunking.h"
#include "protocol/compression.h"
#include "protocol/wire.h"

namespace rd::wire {
namespace {

constexpr uint64_t kCommId = 0x0123456789abcdefull;
constexpr uint32_t kEpoch = 7;
constexpr uint32_t kRanks = 4;

constexpr uint8_t u8(MsgType t) {
  return static_cast<uint8_t>(t);
}
constexpr uint8_t u8(Coll c) {
  return static_cast<uint8_t>(c);
}

// A kData header that parseHeader accepts: float32 sum all-reduce, announcing @p payload bytes.
Header dataHeader(uint64_t payload = 0) {
  Header h = makeHeader(MsgType::kData, kCommId, kEpoch, 1, kRanks);
  h.coll = u8(Coll::kAllReduce);
  h.dtype = rdFloat32;
  h.op = rdSum;
  h.count = 1000;
  h.payload_bytes = payload;
  return h;
}

// Field by field: a byte comparison would also compare the struct's padding.
void expectSameHeader(const Header& a, const Header& b) {
  EXPECT_EQ(a.magic, b.magic);
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.coll, b.coll);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.nranks, b.nranks);
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.comm_id, b.comm_id);
  EXPECT_EQ(a.seq, b.seq);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.chunk, b.chunk);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.payload_bytes, b.payload_bytes);
}

// parseHeader(h) with @p payload_len received bytes must fail with rdProtocolError and a reason
// that contains @p reason.
::testing::AssertionResult headerRejected(const Header& h, size_t payload_len,
                                          const std::string& reason) {
  Header out;
  std::string why;
  rdResult_t rc = parseHeader(&h, sizeof h, payload_len, &out, &why);
  if (rc != rdProtocolError) return ::testing::AssertionFailure() << "returned " << rc;
  if (why.find(reason) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "rejected for \"" << why << "\", expected \"" << reason << "\"";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult headerAccepted(const Header& h, size_t payload_len) {
  Header out;
  std::string why;
  rdResult_t rc = parseHeader(&h, sizeof h, payload_len, &out, &why);
  if (rc != rdSuccess) return ::testing::AssertionFailure() << "rejected: " << why;
  return ::testing::AssertionSuccess();
}

// --- parseHeader -------------------------------------------------------------------------

TEST(WireHeader, HasNoPadding) {
  // The header goes on the wire as raw memory: padding would send uninitialized bytes.
  Header h;
  size_t fields = sizeof h.magic + sizeof h.version + sizeof h.type + sizeof h.coll +
                  sizeof h.dtype + sizeof h.op + sizeof h.flags + sizeof h.rank + sizeof h.nranks +
                  sizeof h.epoch + sizeof h.root + sizeof h.chunk_bytes + sizeof h.comm_id +
                  sizeof h.seq + sizeof h.count + sizeof h.chunk + sizeof h.status +
                  sizeof h.payload_bytes;
  EXPECT_EQ(fields, sizeof(Header));
  EXPECT_EQ(sizeof(HelloBody), sizeof(uint64_t) + 6 * sizeof(uint32_t) + kNonceBytes);
}

TEST(WireHeader, MakeHeaderStampsIdentity) {
  Header h = makeHeader(MsgType::kResult, kCommId, kEpoch, 3, kRanks);
  EXPECT_EQ(h.magic, kMagic);
  EXPECT_EQ(h.version, kVersion);
  EXPECT_EQ(h.type, u8(MsgType::kResult));
  EXPECT_EQ(h.comm_id, kCommId);
  EXPECT_EQ(h.epoch, kEpoch);
  EXPECT_EQ(h.rank, 3u);
  EXPECT_EQ(h.nranks, kRanks);
  EXPECT_EQ(h.payload_bytes, 0u);
}

// The release round's carried messages (docs/failover.md): another operation rides in a frame
// as a signed offset from the frame's own, both ways, and one too far away is not carried.
TEST(WireHeader, CarriesAnotherOperationBothWaysAndRefusesOneTooFar) {
  Header h = makeHeader(MsgType::kData, 1, 1, 0, 4);
  h.seq = 1000;
  for (uint64_t other : {uint64_t{998}, uint64_t{1000}, uint64_t{5000}}) {
    Header c = h;
    ASSERT_TRUE(carry(&c, other));
    EXPECT_NE(c.flags & kFlagCarried, 0);
    EXPECT_EQ(carriedSeq(c), other);
    Header plain = withoutCarried(c);
    EXPECT_EQ(plain.flags, h.flags);
    EXPECT_EQ(plain.status, 0);
  }
  Header far = h;
  EXPECT_FALSE(carry(&far, h.seq + (uint64_t{1} << 32)));
  EXPECT_EQ(far.flags, h.flags);
  EXPECT_EQ(far.status, h.status);
}

TEST(WireHeader, AcceptsValidDataHeader) {
  Header h = dataHeader(4000);
  h.coll = u8(Coll::kReduceScatter);
  h.dtype = rdBfloat16;
  h.op = rdAvg;
  h.flags = kFlagDeterministic;
  h.root = 2;
  h.seq = 99;
  h.count = 123456;
  h.chunk = 5;
  Header out;
  std::string why;
  ASSERT_EQ(parseHeader(&h, sizeof h, 4000, &out, &why), rdSuccess) << why;
  expectSameHeader(out, h);
}

TEST(WireHeader, AcceptsEveryMessageType) {
  for (uint8_t t = 1; t <= u8(MsgType::kLast); ++t) {
    Header h = dataHeader();
    h.type = t;
    EXPECT_TRUE(headerAccepted(h, 0)) << typeName(t);
  }
}

TEST(WireHeader, AcceptsUnalignedBuffer) {
  Header h = dataHeader(16);
  std::vector<char> buf(sizeof h + 1);
  std::memcpy(buf.data() + 1, &h, sizeof h);
  Header out;
  std::string why;
  ASSERT_EQ(parseHeader(buf.data() + 1, sizeof h, 16, &out, &why), rdSuccess) << why;
  expectSameHeader(out, h);
}

TEST(WireHeader, RejectsNullBuffer) {
  Header out;
  std::string why;
  EXPECT_EQ(parseHeader(nullptr, sizeof(Header), 0, &out, &why), rdProtocolError);
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
}

TEST(WireHeader, RejectsTruncatedHeader) {
  Header h = dataHeader();
  for (size_t len : {size_t{0}, size_t{1}, sizeof(Header) / 2, sizeof(Header) - 1}) {
    Header out;
    std::string why;
    EXPECT_EQ(parseHeader(&h, len, 0, &out, &why), rdProtocolError) << len;
    EXPECT_NE(why.find("truncated"), std::string::npos) << len << ": " << why;
  }
}

TEST(WireHeader, RejectsHeaderOfWrongSize) {
  Header h = dataHeader();
  std::string buf = std::string(reinterpret_cast<const char*>(&h), sizeof h) + std::string(8, '\0');
  for (size_t len : {sizeof(Header) + 1, buf.size()}) {
    Header out;
    std::string why;
    EXPECT_EQ(parseHeader(buf.data(), len, 0, &out, &why), rdProtocolError) << len;
    EXPECT_NE(why.find("size"), std::string::npos) << len << ": " << why;
  }
}

TEST(WireHeader, RejectsBadMagic) {
  Header h = dataHeader();
  h.magic = 0;
  EXPECT_TRUE(headerRejected(h, 0, "magic"));
  h.magic = kMagic ^ 0x80000000u;
  EXPECT_TRUE(headerRejected(h, 0, "magic"));
  // The magic in the other byte order: a big-endian peer must not be misread.
  h.magic = __builtin_bswap32(kMagic);
  EXPECT_TRUE(headerRejected(h, 0, "magic"));
}

TEST(WireHeader, RejectsWrongVersion) {
  Header h = dataHeader();
  for (uint16_t v : {uint16_t{0}, uint16_t{kVersion + 1}, uint16_t{0xffff}}) {
    h.version = v;
    EXPECT_TRUE(headerRejected(h, 0, "version")) << v;
  }
}

TEST(WireHeader, RejectsUnknownType) {
  Header h = dataHeader();
  for (int t : {0, u8(MsgType::kLast) + 1, 255}) {
    h.type = static_cast<uint8_t>(t);
    EXPECT_TRUE(headerRejected(h, 0, "message type")) << t;
  }
}

TEST(WireHeader, RejectsZeroRanks) {
  Header h = dataHeader();
  h.rank = 0;
  h.nranks = 0;
  EXPECT_TRUE(headerRejected(h, 0, "rank count"));
}

TEST(WireHeader, RejectsTooManyRanks) {
  Header h = dataHeader();
  h.nranks = limits::kMaxRanks + 1;
  EXPECT_TRUE(headerRejected(h, 0, "rank count"));
  h.nranks = std::numeric_limits<uint32_t>::max();
  EXPECT_TRUE(headerRejected(h, 0, "rank count"));
}

TEST(WireHeader, AcceptsMaxRanks) {
  Header h = dataHeader();
  h.nranks = limits::kMaxRanks;
  h.rank = limits::kMaxRanks - 1;
  EXPECT_TRUE(headerAccepted(h, 0));
}

TEST(WireHeader, RejectsRankNotBelowRankCount) {
  Header h = dataHeader();
  h.rank = h.nranks;
  EXPECT_TRUE(headerRejected(h, 0, "rank " + std::to_string(h.rank)));
  h.rank = std::numeric_limits<uint32_t>::max();
  EXPECT_TRUE(headerRejected(h, 0, "rank 4294967295"));
}

TEST(WireHeader, DataTypesTakePayloadsUpToTheDataCap) {
  // The payload length is only a number here: nothing is allocated from it.
  for (MsgType t : {MsgType::kData, MsgType::kResult, MsgType::kAck, MsgType::kRing}) {
    Header h = dataHeader(kMaxPayloadBytes);
    h.type = u8(t);
    EXPECT_TRUE(headerAccepted(h, kMaxPayloadBytes)) << typeName(h.type);
    h.payload_bytes = kMaxPayloadBytes + 1;
    EXPECT_TRUE(headerRejected(h, kMaxPayloadBytes + 1, "over the cap")) << typeName(h.type);
    h.payload_bytes = std::numeric_limits<uint64_t>::max();
    EXPECT_TRUE(headerRejected(h, std::numeric_limits<size_t>::max(), "over the cap"));
  }
}

TEST(WireHeader, ControlTypesTakePayloadsUpToTheControlCap) {
  for (MsgType t : {MsgType::kHello, MsgType::kChallenge, MsgType::kAuth, MsgType::kWelcome,
                    MsgType::kJoined, MsgType::kReject, MsgType::kError, MsgType::kLeave}) {
    Header h = makeHeader(t, kCommId, 0, 0, kRanks);
    h.payload_bytes = kMaxControlBytes;
    EXPECT_TRUE(headerAccepted(h, kMaxControlBytes)) << typeName(h.type);
    h.payload_bytes = kMaxControlBytes + 1;
    EXPECT_TRUE(headerRejected(h, kMaxControlBytes + 1, "over the cap")) << typeName(h.type);
    // A size a data frame may have is still too large for a control message.
    h.payload_bytes = 1 << 20;
    EXPECT_TRUE(headerRejected(h, 1 << 20, "over the cap")) << typeName(h.type);
  }
}

TEST(WireHeader, HeartbeatsCarryNoPayload) {
  Header h = makeHeader(MsgType::kHeartbeat, kCommId, 3, 0, kRanks);
  EXPECT_TRUE(headerAccepted(h, 0));
  h.payload_bytes = 1;
  EXPECT_TRUE(headerRejected(h, 1, "heartbeat with a payload"));
  for (MsgType t : {MsgType::kLanded, MsgType::kReleased, MsgType::kDone, MsgType::kResume}) {
    Header n = makeHeader(t, kCommId, 3, 0, kRanks);
    EXPECT_TRUE(headerAccepted(n, 0));
    n.payload_bytes = 8;
    EXPECT_TRUE(headerRejected(n, 8, "with a payload")) << typeName(n.type);
  }
}

TEST(WireHeader, RejectsPayloadLengthMismatch) {
  Header h = dataHeader(100);
  EXPECT_TRUE(headerAccepted(h, 100));
  EXPECT_TRUE(headerRejected(h, 99, "announces 100"));
  EXPECT_TRUE(headerRejected(h, 101, "announces 100"));
  EXPECT_TRUE(headerRejected(h, 0, "announces 100"));
  h.payload_bytes = 0;
  EXPECT_TRUE(headerRejected(h, 1, "carries 1"));
}

TEST(WireHeader, RejectsUnknownDtypeOnDataTypes) {
  for (MsgType t : {MsgType::kData, MsgType::kResult, MsgType::kAck, MsgType::kRing}) {
    Header h = dataHeader();
    h.type = u8(t);
    h.dtype = rdNumDataTypes - 1;
    EXPECT_TRUE(headerAccepted(h, 0)) << typeName(h.type);
    for (int d : {int{rdNumDataTypes}, 255}) {
      h.dtype = static_cast<uint8_t>(d);
      EXPECT_TRUE(headerRejected(h, 0, "unknown dtype")) << typeName(h.type) << " " << d;
    }
  }
}

TEST(WireHeader, RejectsUnknownOpOnDataTypes) {
  for (MsgType t : {MsgType::kData, MsgType::kResult, MsgType::kAck, MsgType::kRing}) {
    Header h = dataHeader();
    h.type = u8(t);
    h.op = rdNumRedOps - 1;
    EXPECT_TRUE(headerAccepted(h, 0)) << typeName(h.type);
    for (int op : {int{rdNumRedOps}, 255}) {
      h.op = static_cast<uint8_t>(op);
      EXPECT_TRUE(headerRejected(h, 0, "unknown op")) << typeName(h.type) << " " << op;
    }
  }
}

TEST(WireHeader, RejectsUnknownCollectiveOnDataTypes) {
  for (MsgType t : {MsgType::kData, MsgType::kResult, MsgType::kAck, MsgType::kRing}) {
    Header h = dataHeader();
    h.type = u8(t);
    h.coll = u8(Coll::kLast);
    EXPECT_TRUE(headerAccepted(h, 0)) << typeName(h.type);
    for (int c : {u8(Coll::kLast) + 1, 255}) {
      h.coll = static_cast<uint8_t>(c);
      EXPECT_TRUE(headerRejected(h, 0, "unknown collective")) << typeName(h.type) << " " << c;
    }
  }
}

TEST(WireHeader, ControlTypesIgnoreDataFields) {
  // Control messages leave dtype / op / coll unset; nothing reads them.
  Header h = makeHeader(MsgType::kHello, kCommId, 0, 0, kRanks);
  h.dtype = 255;
  h.op = 255;
  h.coll = 255;
  EXPECT_TRUE(headerAccepted(h, 0));
}

TEST(WireHeader, NamesMessageTypes) {
  EXPECT_STREQ(typeName(u8(MsgType::kHello)), "hello");
  EXPECT_STREQ(typeName(u8(MsgType::kData)), "data");
  EXPECT_STREQ(typeName(u8(MsgType::kRing)), "ring");
  EXPECT_STREQ(typeName(u8(MsgType::kHeartbeat)), "heartbeat");
  EXPECT_STREQ(typeName(0), "invalid");
  EXPECT_STREQ(typeName(u8(MsgType::kLast) + 1), "invalid");
  EXPECT_STREQ(typeName(255), "invalid");
}

// --- hello -------------------------------------------------------------------------------

HelloBody helloBody(uint64_t chunk_bytes = 1 << 20) {
  HelloBody b;
  b.chunk_bytes = chunk_bytes;
  b.timeout_ms = 30000;
  b.algorithm = rdAlgoReductionServer;
  for (size_t i = 0; i < kNonceBytes; ++i) b.nonce[i] = static_cast<uint8_t>(0xa0 + i);
  return b;
}

// A hello as raw bytes, with address_len written as given (encodeHello would correct it).
std::string rawHello(const HelloBody& b, const std::string& address) {
  return std::string(reinterpret_cast<const char*>(&b), sizeof b) + address;
}

::testing::AssertionResult helloRejected(const std::string& bytes, const std::string& reason) {
  HelloBody out;
  std::string address;
  std::string why;
  rdResult_t rc = decodeHello(bytes.data(), bytes.size(), &out, &address, &why);
  if (rc != rdProtocolError) return ::testing::AssertionFailure() << "returned " << rc;
  if (why.find(reason) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "rejected for \"" << why << "\", expected \"" << reason << "\"";
  }
  return ::testing::AssertionSuccess();
}

TEST(WireHello, RoundTrips) {
  for (const std::string& address : {std::string("10.1.2.3:43210"), std::string(),
                                     std::string(kMaxAddressBytes, 'x'), std::string("a\0b", 3)}) {
    HelloBody in = helloBody();
    in.address_len = 12345;  // encodeHello writes the real length
    std::string bytes = encodeHello(in, address);
    EXPECT_EQ(bytes.size(), sizeof(HelloBody) + address.size());
    HelloBody out;
    std::string got_address = "stale";
    std::string why;
    ASSERT_EQ(decodeHello(bytes.data(), bytes.size(), &out, &got_address, &why), rdSuccess) << why;
    EXPECT_EQ(out.chunk_bytes, in.chunk_bytes);
    EXPECT_EQ(out.timeout_ms, in.timeout_ms);
    EXPECT_EQ(out.address_len, address.size());
    EXPECT_EQ(std::memcmp(out.nonce, in.nonce, kNonceBytes), 0);
    EXPECT_EQ(got_address, address);
  }
}

TEST(WireHello, RejectsNullBody) {
  HelloBody out;
  std::string address;
  std::string why;
  EXPECT_EQ(decodeHello(nullptr, sizeof(HelloBody), &out, &address, &why), rdProtocolError);
  EXPECT_FALSE(why.empty());
}

TEST(WireHello, RejectsTruncatedBody) {
  std::string bytes = encodeHello(helloBody(), "host:1");
  for (size_t len : {size_t{0}, size_t{8}, sizeof(HelloBody) - 1}) {
    EXPECT_TRUE(helloRejected(bytes.substr(0, len), "truncated")) << len;
  }
  // The fixed part is whole but the address is cut short.
  EXPECT_TRUE(helloRejected(bytes.substr(0, bytes.size() - 1), "does not match"));
  EXPECT_TRUE(helloRejected(bytes.substr(0, sizeof(HelloBody)), "does not match"));
}

TEST(WireHello, RejectsAddressLenOverTheLimit) {
  HelloBody b = helloBody();
  b.address_len = kMaxAddressBytes + 1;
  EXPECT_TRUE(helloRejected(rawHello(b, std::string(kMaxAddressBytes + 1, 'a')), "address"));
  // A huge length must be refused before it is used to size or read anything.
  b.address_len = std::numeric_limits<uint32_t>::max();
  EXPECT_TRUE(helloRejected(rawHello(b, ""), "address"));
}

TEST(WireHello, RejectsAddressLenNotMatchingBody) {
  HelloBody b = helloBody();
  b.address_len = 4;
  EXPECT_TRUE(helloRejected(rawHello(b, "abc"), "address"));
  EXPECT_TRUE(helloRejected(rawHello(b, "abcde"), "address"));
  b.address_len = 0;
  EXPECT_TRUE(helloRejected(rawHello(b, "x"), "address"));
}

TEST(WireHello, RejectsReducerCountOutOfRange) {
  for (uint32_t spread : {0u, limits::kMaxReducers + 1}) {
    HelloBody b = helloBody();
    b.spread = spread;
    EXPECT_TRUE(helloRejected(encodeHello(b, "h:1"), "reducer count")) << spread;
  }
}

TEST(WireHello, RejectsHeartbeatOutOfRangeOrReservedBitsSet) {
  HelloBody b = helloBody();
  b.heartbeat_ms = limits::kMaxTimeoutMs + 1;
  EXPECT_TRUE(helloRejected(encodeHello(b, "h:1"), "heartbeat period"));
  b.heartbeat_ms = 1000;
  b.reserved = 1;
  EXPECT_TRUE(helloRejected(encodeHello(b, "h:1"), "heartbeat period"));
}

TEST(WireHello, RejectsChunkBytesOutOfRange) {
  for (uint64_t bytes :
       {uint64_t{0}, uint64_t{4095}, kMaxPayloadBytes + 1, std::numeric_limits<uint64_t>::max()}) {
    EXPECT_TRUE(helloRejected(encodeHello(helloBody(bytes), "h:1"), "chunk size")) << bytes;
  }
  for (uint64_t bytes : {uint64_t{4096}, kMaxPayloadBytes}) {
    std::string raw_hello = encodeHello(helloBody(bytes), "h:1");
    HelloBody out;
    std::string address;
    std::string why;
    EXPECT_EQ(decodeHello(raw_hello.data(), raw_hello.size(), &out, &address, &why), rdSuccess)
        << bytes << ": " << why;
  }
}

// --- address list ------------------------------------------------------------------------

std::vector<std::string> someAddresses(uint32_t n) {
  std::vector<std::string> a(n);
  for (uint32_t r = 0; r < n; ++r) {
    // Mix empty, ordinary and maximum-length entries.
    if (r % 5 == 3) continue;
    a[r] = r % 7 == 6 ? std::string(kMaxAddressBytes, static_cast<char>('a' + r % 26))
                      : "10.0." + std::to_string(r) + ".1:" + std::to_string(40000 + r);
  }
  return a;
}

::testing::AssertionResult addressesRejected(const std::string& bytes, uint32_t nranks,
                                             const std::string& reason) {
  std::vector<std::string> out(nranks);
  std::string why;
  rdResult_t rc = decodeAddresses(bytes.data(), bytes.size(), nranks, out.data(), &why);
  if (rc != rdProtocolError) return ::testing::AssertionFailure() << "returned " << rc;
  if (why.find(reason) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "rejected for \"" << why << "\", expected \"" << reason << "\"";
  }
  return ::testing::AssertionSuccess();
}

TEST(WireAddresses, RoundTrips) {
  for (uint32_t n : {1u, 3u, 64u}) {
    std::vector<std::string> in = someAddresses(n);
    std::string bytes = encodeAddresses(in.data(), n);
    size_t expect_size = 0;
    for (const auto& a : in) expect_size += 2 + a.size();
    EXPECT_EQ(bytes.size(), expect_size) << n;
    std::vector<std::string> out(n, "stale");
    std::string why;
    ASSERT_EQ(decodeAddresses(bytes.data(), bytes.size(), n, out.data(), &why), rdSuccess)
        << n << ": " << why;
    EXPECT_EQ(out, in) << n;
  }
}

TEST(WireAddresses, ZeroRanksIsAnEmptyList) {
  EXPECT_EQ(encodeAddresses(nullptr, 0), "");
  std::string why;
  EXPECT_EQ(decodeAddresses("", 0, 0, nullptr, &why), rdSuccess) << why;
  EXPECT_TRUE(addressesRejected("x", 0, "trailing"));
}

TEST(WireAddresses, RejectsTruncatedList) {
  for (uint32_t n : {1u, 3u, 64u}) {
    std::vector<std::string> in = someAddresses(n);
    std::string bytes = encodeAddresses(in.data(), n);
    // Every proper prefix is short of the last entry.
    for (size_t len = 0; len < bytes.size(); ++len) {
      ASSERT_TRUE(addressesRejected(bytes.substr(0, len), n, "truncated")) << n << " " << len;
    }
  }
}

TEST(WireAddresses, RejectsTrailingBytes) {
  for (uint32_t n : {1u, 3u, 64u}) {
    std::vector<std::string> in = someAddresses(n);
    std::string bytes = encodeAddresses(in.data(), n);
    EXPECT_TRUE(addressesRejected(bytes + '\0', n, "trailing")) << n;
    // A whole extra entry: the list has more addresses than ranks.
    std::string extra = encodeAddresses(in.data(), 1);
    EXPECT_TRUE(addressesRejected(bytes + extra, n, "trailing")) << n;
  }
}

TEST(WireAddresses, RejectsFewerEntriesThanRanks) {
  std::vector<std::string> in = someAddresses(3);
  EXPECT_TRUE(addressesRejected(encodeAddresses(in.data(), 3), 4, "truncated"));
}

TEST(WireAddresses, RejectsEntryOverTheLimit) {
  std::string too_long(kMaxAddressBytes + 1, 'a');
  EXPECT_TRUE(addressesRejected(encodeAddresses(&too_long, 1), 1, "address list"));
}

// --- checkDataFrame ----------------------------------------------------------------------

constexpr CommShape kShape{kCommId, kEpoch, kRanks, 4096};

// A kData frame for chunk @p chunk of a float32 @p coll from @p rank; payload_bytes set by the
// test (it is what is being checked).
Header frame(Coll coll, uint64_t count, uint32_t rank, uint32_t chunk, uint64_t payload) {
  Header h = makeHeader(MsgType::kData, kCommId, kEpoch, rank, kRanks);
  h.coll = u8(coll);
  h.dtype = rdFloat32;
  h.op = rdSum;
  h.count = count;
  h.chunk = chunk;
  h.chunk_bytes = static_cast<uint32_t>(kShape.max_chunk_bytes);
  h.payload_bytes = payload;
  return h;
}

::testing::AssertionResult frameRejected(const Header& h, uint32_t conn_rank,
                                         const std::string& reason) {
  Geometry g;
  ChunkSpan s;
  std::string why;
  rdResult_t rc = checkDataFrame(h, kShape, conn_rank, &g, &s, &why);
  if (rc != rdProtocolError) return ::testing::AssertionFailure() << "returned " << rc;
  if (why.find(reason) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "rejected for \"" << why << "\", expected \"" << reason << "\"";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult frameAccepted(const Header& h, uint32_t conn_rank) {
  Geometry g;
  ChunkSpan s;
  std::string why;
  rdResult_t rc = checkDataFrame(h, kShape, conn_rank, &g, &s, &why);
  if (rc != rdSuccess) return ::testing::AssertionFailure() << "rejected: " << why;
  return ::testing::AssertionSuccess();
}

TEST(DataFrame, AcceptsCorrectFrame) {
  // 2500 float32 in 1024-element chunks: the last chunk holds 452 elements.
  Header h = frame(Coll::kAllReduce, 2500, 1, 2, 452 * 4);
  Geometry g;
  ChunkSpan s;
  std::string why;
  ASSERT_EQ(checkDataFrame(h, kShape, 1, &g, &s, &why), rdSuccess) << why;
  EXPECT_EQ(g.coll, Coll::kAllReduce);
  EXPECT_EQ(g.count, 2500u);
  EXPECT_EQ(g.nranks, kRanks);
  EXPECT_EQ(g.chunk_elems, 1024u);
  EXPECT_EQ(g.nchunks, 3u);
  EXPECT_EQ(s.offset, 2048u);
  EXPECT_EQ(s.elems, 452u);
}

TEST(DataFrame, AcceptsEachCollective) {
  EXPECT_TRUE(frameAccepted(frame(Coll::kAllReduce, 1000, 3, 0, 4000), 3));
  // Reduce-scatter, 1500 per rank: chunk 3 is rank 1's second chunk, 476 elements.
  EXPECT_TRUE(frameAccepted(frame(Coll::kReduceScatter, 1500, 0, 3, 476 * 4), 0));
  // All-gather: chunk 7 is rank 3's second chunk.
  EXPECT_TRUE(frameAccepted(frame(Coll::kAllGather, 1500, 3, 7, 476 * 4), 3));
  Header b = frame(Coll::kBroadcast, 10, 2, 0, 40);
  b.root = 2;
  EXPECT_TRUE(frameAccepted(b, 2));
  // Zero elements: one empty chunk.
  EXPECT_TRUE(frameAccepted(frame(Coll::kAllReduce, 0, 0, 0, 0), 0));
}

TEST(DataFrame, ChunkSizeComesFromTheFrameWithinTheCap) {
  // 4096 float32 in 1 KiB chunks (the operation's choice, under the 4 KiB cap): chunk 3 of 16.
  Header h = frame(Coll::kAllReduce, 4096, 1, 3, 1024);
  h.chunk_bytes = 1024;
  Geometry g;
  ChunkSpan s;
  std::string why;
  ASSERT_EQ(checkDataFrame(h, kShape, 1, &g, &s, &why), rdSuccess) << why;
  EXPECT_EQ(g.nchunks, 16u);
  EXPECT_EQ(s.offset, 768u);
  // Over the cap the ranks joined with, or under one element: refused before any geometry.
  h.chunk_bytes = 8192;
  EXPECT_TRUE(frameRejected(h, 1, "chunk size 8192 out of range"));
  h.chunk_bytes = 3;
  EXPECT_TRUE(frameRejected(h, 1, "chunk size 3 out of range"));
  h.chunk_bytes = 0;
  EXPECT_TRUE(frameRejected(h, 1, "chunk size 0 out of range"));
}

TEST(DataFrame, RejectsWrongCommunicator) {
  Header h = frame(Coll::kAllReduce, 1000, 1, 0, 4000);
  h.comm_id = kCommId + 1;
  EXPECT_TRUE(frameRejected(h, 1, "another communicator"));
}

TEST(DataFrame, RejectsStaleEpoch) {
  Header h = frame(Coll::kAllReduce, 1000, 1, 0, 4000);
  for (uint32_t epoch : {0u, kEpoch - 1, kEpoch + 1}) {
    h.epoch = epoch;
    EXPECT_TRUE(frameRejected(h, 1, "epoch")) << epoch;
  }
}

TEST(DataFrame, RejectsDifferentRankCount) {
  Header h = frame(Coll::kAllReduce, 1000, 1, 0, 4000);
  for (uint32_t n : {kRanks - 1, kRanks + 1}) {
    h.nranks = n;
    EXPECT_TRUE(frameRejected(h, 1, "rank count")) << n;
  }
}

TEST(DataFrame, RejectsRankOtherThanTheConnections) {
  Header h = frame(Coll::kAllReduce, 1000, 1, 0, 4000);
  EXPECT_TRUE(frameRejected(h, 0, "connection of rank 0"));
  EXPECT_TRUE(frameRejected(h, 2, "connection of rank 2"));
}

TEST(DataFrame, RejectsCountOverTheLimit) {
  // kMaxCount itself is fine: 1024-element chunks, chunk 0 is full.
  EXPECT_TRUE(frameAccepted(frame(Coll::kAllReduce, kMaxCount, 1, 0, 4096), 1));
  EXPECT_TRUE(frameRejected(frame(Coll::kAllReduce, kMaxCount + 1, 1, 0, 4096), 1, "count"));
  EXPECT_TRUE(frameRejected(frame(Coll::kBroadcast, ~0ull, 0, 0, 4096), 0, "count"));
  // Per-rank counts: the whole buffer, count x nranks, must stay within the limit.
  for (Coll c : {Coll::kReduceScatter, Coll::kAllGather}) {
    EXPECT_TRUE(frameAccepted(frame(c, kMaxCount / kRanks, 0, 0, 4096), 0)) << collName(u8(c));
    EXPECT_TRUE(frameRejected(frame(c, kMaxCount / kRanks + 1, 0, 0, 4096), 0, "count"))
        << collName(u8(c));
  }
}

TEST(DataFrame, RejectsBroadcastRootOutOfRange) {
  Header h = frame(Coll::kBroadcast, 10, 0, 0, 40);
  for (uint32_t root : {kRanks, std::numeric_limits<uint32_t>::max()}) {
    h.root = root;
    EXPECT_TRUE(frameRejected(h, 0, "root")) << root;
  }
}

TEST(DataFrame, RejectsChunkOutOfRange) {
  // 2500 elements: chunks 0..2.
  EXPECT_TRUE(frameRejected(frame(Coll::kAllReduce, 2500, 1, 3, 0), 1, "chunk 3 out of range"));
  EXPECT_TRUE(frameRejected(frame(Coll::kAllReduce, 2500, 1, ~0u, 0), 1, "out of range"));
  EXPECT_TRUE(frameRejected(frame(Coll::kAllReduce, 0, 1, 1, 0), 1, "out of range"));
  // Reduce-scatter, 1500 per rank: 2 chunks per rank, 8 in all.
  EXPECT_TRUE(frameRejected(frame(Coll::kReduceScatter, 1500, 1, 8, 0), 1, "out of range"));
}

TEST(DataFrame, RejectsBroadcastFromNonRoot) {
  Header h = frame(Coll::kBroadcast, 10, 1, 0, 40);
  h.root = 2;
  EXPECT_TRUE(frameRejected(h, 1, "does not contribute"));
}

TEST(DataFrame, RejectsAllGatherChunkFromNonOwner) {
  // 1500 per rank: chunks 2 and 3 belong to rank 1.
  EXPECT_TRUE(frameAccepted(frame(Coll::kAllGather, 1500, 1, 2, 4096), 1));
  EXPECT_TRUE(frameRejected(frame(Coll::kAllGather, 1500, 2, 2, 4096), 2, "does not contribute"));
  EXPECT_TRUE(frameRejected(frame(Coll::kAllGather, 1500, 0, 3, 476 * 4), 0, "does not"));
}

TEST(DataFrame, RejectsPayloadOfWrongLength) {
  // Chunk 2 of 2500 float32 holds 452 elements.
  for (uint64_t bytes : {0ull, 452ull * 4 - 1, 452ull * 4 + 1, 451ull * 4, 453ull * 4, 4096ull}) {
    EXPECT_TRUE(frameRejected(frame(Coll::kAllReduce, 2500, 1, 2, bytes), 1, "payload")) << bytes;
  }
  // The element size comes from the dtype: float64 chunks hold 512 elements, so 2500 end in
  // chunk 4 with 452 elements of 8 bytes.
  Header h = frame(Coll::kAllReduce, 2500, 1, 4, 452 * 4);
  h.dtype = rdFloat64;
  EXPECT_TRUE(frameRejected(h, 1, "payload"));
  h.payload_bytes = 452 * 8;
  EXPECT_TRUE(frameAccepted(h, 1));
  // An empty operation carries no bytes.
  EXPECT_TRUE(frameRejected(frame(Coll::kAllReduce, 0, 1, 0, 4), 1, "payload"));
}

// Which operations compress, and what a reducer accepts from a communicator of each wire type.
TEST(Compression, Float32SumsAvgsAndGathersTravelNarrowEverythingElseAsItIs) {
  EXPECT_EQ(travelType(Coll::kAllReduce, rdFloat32, rdSum, rdBfloat16), rdBfloat16);
  EXPECT_EQ(travelType(Coll::kReduceScatter, rdFloat32, rdAvg, rdFloat16), rdFloat16);
  EXPECT_EQ(travelType(Coll::kAllGather, rdFloat32, rdSum, rdBfloat16), rdBfloat16);
  EXPECT_EQ(travelType(Coll::kAllReduce, rdFloat32, rdSum, rdFloat32), rdFloat32);
  EXPECT_EQ(travelType(Coll::kAllReduce, rdFloat32, rdProd, rdBfloat16), rdFloat32);
  EXPECT_EQ(travelType(Coll::kAllReduce, rdFloat32, rdMax, rdBfloat16), rdFloat32);
  EXPECT_EQ(travelType(Coll::kBroadcast, rdFloat32, rdSum, rdBfloat16), rdFloat32);
  EXPECT_EQ(travelType(Coll::kAllReduce, rdFloat64, rdSum, rdBfloat16), rdFloat64);
  EXPECT_EQ(travelType(Coll::kAllReduce, rdInt32, rdSum, rdFloat16), rdInt32);
  EXPECT_EQ(travelType(Coll::kAllReduce, rdBfloat16, rdSum, rdFloat16), rdBfloat16);
  rdDataType_t t = rdInt8;
  EXPECT_TRUE(wireDtypeFromName("bf16", &t));
  EXPECT_EQ(t, rdBfloat16);
  EXPECT_FALSE(wireDtypeFromName("float8", &t));
  EXPECT_STREQ(wireDtypeName(rdFloat16), "fp16");
  EXPECT_EQ(wireDtypeOfHelloFlags(helloWireFlags(rdFloat16) | kFlagDeterministic), rdFloat16);
  EXPECT_EQ(wireDtypeOfHelloFlags(kFlagDeterministic), rdFloat32);
}

TEST(Compression, AReducerAcceptsOnlyWhatItsCommunicatorCompresses) {
  Header h;
  h.type = static_cast<uint8_t>(MsgType::kData);
  h.coll = static_cast<uint8_t>(Coll::kAllReduce);
  h.op = rdSum;
  h.dtype = rdBfloat16;
  h.flags = kFlagWideSum;
  std::string why;
  EXPECT_TRUE(checkCompression(h, rdBfloat16, &why)) << why;
  EXPECT_FALSE(checkCompression(h, rdFloat16, &why));
  EXPECT_NE(why.find("wire type is fp16"), std::string::npos) << why;
  EXPECT_FALSE(checkCompression(h, rdFloat32, &why));
  h.op = rdProd;  // products never compress
  EXPECT_FALSE(checkCompression(h, rdBfloat16, &why));
  // Uncompressed float32 sums on a compressing communicator: a rank that did not compress.
  h.op = rdSum;
  h.flags = 0;
  h.dtype = rdFloat32;
  EXPECT_FALSE(checkCompression(h, rdBfloat16, &why));
  EXPECT_TRUE(checkCompression(h, rdFloat32, &why));
  h.dtype = rdBfloat16;  // the user's own bfloat16 data: travels as it is
  EXPECT_TRUE(checkCompression(h, rdBfloat16, &why));
  h.dtype = rdFloat64;  // float64 never compresses
  EXPECT_TRUE(checkCompression(h, rdBfloat16, &why)) << why;
}

}  // namespace
}  // namespace rd::wire
