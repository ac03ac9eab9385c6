// test_wire_golden.cpp - the peer report's bytes, fixed: a report encodes to the same bytes
// and those bytes decode to the same report on every architecture the agent builds for.
// The golden bytes below were encoded by the amd64 build; the arm64 build (make test-kernel
// ARCH=arm64 runs the unit suite in an arm64 guest) must produce and accept them unchanged,
// so peers of either architecture share one cluster. Multi-byte fields (u16, u64, varints
// of several bytes, IPv6 addresses) are in it, little-endian on the wire by the format.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster_core/peer_protocol.h"
#include "report_fixtures.h"

namespace {

using dt::test::body_of;
using dt::test::entry;
using dt::test::header;

// Header: node edge-1, boot 0x1122334455667788, seq 7, epoch 42, sent 1700000000000 ms;
// rule "default": 198.18.0.1 x 300 (2-byte varint), 198.18.7.9 x 1, 2001:2::1 x 70000
// (3-byte varint); tag "api" x 5.
constexpr char kGoldenReport[] =
    "44545250"
    "02"
    "00"  // magic "DTRP", version 2, flags
    "06"
    "656467652d31"
    "00"                // node id "edge-1", no recipient
    "8877665544332211"  // boot id, u64 little-endian
    "0700000000000000"
    "2a00000000000000"  // seq 7, epoch 42
    "0068e5cf8b010000"  // sent at 1700000000000 ms
    "0000"
    "0100"  // part 0 of 1, u16 little-endian
    "01"
    "07"
    "64656661756c74"  // one rule group: "default"
    "02"
    "c6120001"
    "ac02"
    "c6120709"
    "01"  // two IPv4 entries: hits 300 (varint ac02), 1
    "01"
    "20010002000000000000000000000001"
    "f0a204"  // one IPv6 entry: hits 70000 (varint)
    "01"
    "03"
    "617069"
    "05";  // one tag: "api" x 5

std::string hex(const std::string &bytes) {
  static const char *digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

std::string unhex(const std::string &text) {
  std::string out;
  for (size_t i = 0; i + 1 < text.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16)));
  return out;
}

dt::ReportBody golden_body() {
  dt::ReportBody body = body_of({entry("198.18.0.1", 300), entry("198.18.7.9", 1), entry("2001:2::1", 70000)});
  body.tags = {{"api", 5}};
  return body;
}

TEST(WireGolden, EncodesTheSameBytesOnEveryArchitecture) {
  auto msgs = dt::encode_report(header(), 7, golden_body());
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(hex(msgs[0]), kGoldenReport) << "the report's bytes changed: a peer of another build would not read them";
}

TEST(WireGolden, DecodesTheGoldenBytes) {
  std::string bytes = unhex(kGoldenReport);
  dt::ReportHeader h;
  dt::ReportBody b;
  ASSERT_EQ(dt::decode_report(bytes.data(), bytes.size(), &h, &b), dt::DecodeError::None);
  EXPECT_EQ(h.node_id, "edge-1");
  EXPECT_EQ(h.boot_id, 0x1122334455667788ull) << "a u64 read in the wrong byte order";
  EXPECT_EQ(h.seq, 7u);
  EXPECT_EQ(h.epoch, 42u);
  EXPECT_EQ(h.sent_unix_ms, 1700000000000ull);
  EXPECT_EQ(h.part, 0);
  EXPECT_EQ(h.parts, 1);
  ASSERT_EQ(b.rules.size(), 1u);
  EXPECT_EQ(b.rules[0], "default");
  ASSERT_EQ(b.entries.size(), 3u);
  EXPECT_EQ(dt::key_to_string(b.entries[0].key), "198.18.0.1");
  EXPECT_EQ(b.entries[0].hits, 300u);
  EXPECT_EQ(dt::key_to_string(b.entries[1].key), "198.18.7.9");
  EXPECT_EQ(b.entries[1].hits, 1u);
  EXPECT_EQ(dt::key_to_string(b.entries[2].key), "2001:2::1");
  EXPECT_EQ(b.entries[2].hits, 70000u) << "a 3-byte varint misread";
  ASSERT_EQ(b.tags.size(), 1u);
  EXPECT_EQ(b.tags[0].tag, "api");
  EXPECT_EQ(b.tags[0].hits, 5u);
}

}  // namespace
