// report_fixtures.h - the reports the peer protocol and peer tracker tests build: an
// entry, a body under the default rule, a body too large for one message, a header, and the millisecond in nanoseconds;
// and a body's hits as a peer decodes them, by group.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cluster_core/peer_protocol.h"
#include "common/address.h"

namespace dt::test {

constexpr uint64_t kMsNs = 1000000;

// Source number i (below 65,536) as a bucket key: 198.18.(i / 256).(i % 256) in dt_key's
// IPv4-mapped form, under `rule`.
inline dt_key v4(uint32_t i, uint32_t rule = 0) {
  dt_key k{};
  k.addr[10] = k.addr[11] = 0xff;
  k.addr[12] = 198, k.addr[13] = 18, k.addr[14] = static_cast<uint8_t>(i >> 8), k.addr[15] = static_cast<uint8_t>(i);
  k.rule = rule;
  return k;
}

inline ReportEntry entry(const char *addr, uint64_t hits) {
  ReportEntry e{};
  EXPECT_TRUE(key_from_string(addr, &e.key)) << addr;
  e.hits = hits;
  return e;
}

inline ReportEntry entry(const char *addr, uint32_t rule, uint64_t hits) {
  ReportEntry e = entry(addr, hits);
  e.key.rule = rule;
  return e;
}

// A report body with every entry under the default rule.
inline ReportBody body_of(std::vector<ReportEntry> entries) {
  ReportBody b;
  b.rules = {"default"};
  b.entries = std::move(entries);
  return b;
}

// A report too large for one message: 30,000 IPv4 entries over two rules ("default" and
// "second", alternating; 1-3 hits each) and 2,000 tags of 1 hit.
inline ReportBody split_body() {
  ReportBody b;
  b.rules = {"default", "second"};
  for (int i = 0; i < 30000; i++) {
    ReportEntry e = entry(("198.18." + std::to_string(i / 250) + "." + std::to_string(i % 250)).c_str(), 1 + i % 3);
    e.key.rule = i % 2;
    b.entries.push_back(e);
  }
  for (int i = 0; i < 2000; i++) b.tags.push_back({"tag:" + std::to_string(i), 1});
  return b;
}

inline ReportHeader header(const char *id = "edge-1") {
  ReportHeader h;
  h.node_id = id;
  h.boot_id = 0x1122334455667788ull;
  h.epoch = 42;
  h.sent_unix_ms = 1700000000000ull;
  return h;
}

// `msgs`, which must be one message, decoded into *h and *body: a fatal failure if there are
// more or it does not decode (call it within ASSERT_NO_FATAL_FAILURE).
inline void decode_one(const std::vector<std::string> &msgs, ReportHeader *h, ReportBody *body) {
  ASSERT_EQ(msgs.size(), 1u);
  ASSERT_EQ(decode_report(msgs[0].data(), msgs[0].size(), h, body), DecodeError::None);
}

// `body` encoded in one message (node h1), decoded as a peer would: hits by "RULE KEY", where
// RULE is the name the message gives the entry's rule (a group's name: "web::p24").
inline std::map<std::string, uint64_t> hits_by_group(const ReportBody &body) {
  ReportHeader h;
  h.node_id = "h1";
  const auto msgs = encode_report(h, 1, body);
  std::map<std::string, uint64_t> by_group;
  EXPECT_EQ(msgs.size(), 1u);
  ReportHeader h2;
  ReportBody got;
  if (msgs.size() != 1 || decode_report(msgs[0].data(), msgs[0].size(), &h2, &got) != DecodeError::None) {
    ADD_FAILURE() << "the report did not travel in one message that decodes";
    return by_group;
  }
  for (const auto &e : got.entries) by_group[got.rules[e.key.rule] + " " + key_to_string(e.key)] += e.hits;
  return by_group;
}

}  // namespace dt::test
