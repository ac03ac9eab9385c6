// test_peer_protocol.cpp - encoding, strict decoding and once-only tracking of reports.
#include <gtest/gtest.h>

#include <map>

#include "map_reader.h"
#include "peer_protocol.h"
#include "peer_tracker.h"

namespace {

dt::ReportEntry entry(const char *addr, uint64_t hits) {
  dt::ReportEntry e{};
  EXPECT_TRUE(dt::key_from_string(addr, &e.key)) << addr;
  e.hits = hits;
  return e;
}

// A report body with every entry under the default rule.
dt::ReportBody body_of(std::vector<dt::ReportEntry> entries) {
  dt::ReportBody b;
  b.rules = {"default"};
  b.entries = std::move(entries);
  return b;
}

// Decodes and returns just the entries (empty on error).
dt::DecodeError decode_entries(const void *data, size_t len, dt::ReportHeader *h, std::vector<dt::ReportEntry> *out) {
  dt::ReportBody b;
  dt::DecodeError e = dt::decode_report(data, len, h, &b);
  *out = b.entries;
  return e;
}

dt::ReportHeader header(const char *id = "edge-1") {
  dt::ReportHeader h;
  h.node_id = id;
  h.boot_id = 0x1122334455667788ull;
  h.epoch = 42;
  h.sent_unix_ms = 1700000000000ull;
  return h;
}

TEST(PeerProtocol, RoundTripIPv4AndIPv6) {
  std::vector<dt::ReportEntry> in = {entry("198.18.0.1", 10), entry("2001:2::1", 300),
                                     entry("198.18.7.9", 1)};
  auto msgs = dt::encode_report(header(), 5, body_of(in));
  ASSERT_EQ(msgs.size(), 1u);
  dt::ReportHeader h;
  std::vector<dt::ReportEntry> out;
  ASSERT_EQ(decode_entries(msgs[0].data(), msgs[0].size(), &h, &out), dt::DecodeError::None);
  EXPECT_EQ(h.node_id, "edge-1");
  EXPECT_EQ(h.seq, 5u);
  EXPECT_EQ(h.epoch, 42u);
  EXPECT_EQ(h.boot_id, 0x1122334455667788ull);
  EXPECT_EQ(h.part, 0);
  EXPECT_EQ(h.parts, 1);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(dt::key_to_string(out[0].key), "198.18.0.1");
  EXPECT_EQ(out[0].hits, 10u);
  EXPECT_EQ(dt::key_to_string(out[1].key), "198.18.7.9");
  EXPECT_EQ(dt::key_to_string(out[2].key), "2001:2::1");
  EXPECT_EQ(out[2].hits, 300u);
}

TEST(PeerProtocol, CompactEntrySizes) {
  auto empty = dt::encode_report(header(), 1, body_of({}));
  std::vector<dt::ReportEntry> v4, v6;
  for (int i = 0; i < 1000; i++) {
    v4.push_back(entry(("198.18." + std::to_string(i / 256) + "." + std::to_string(i % 256)).c_str(), 100));
    v6.push_back(entry(("2001:2::" + std::to_string(i + 1)).c_str(), 100));
  }
  auto m4 = dt::encode_report(header(), 1, body_of(v4));
  auto m6 = dt::encode_report(header(), 1, body_of(v6));
  // + 11 bytes: the rule group's header ("default": 1 + 7, n4 and n6 varints: 3).
  EXPECT_EQ(m4[0].size() - empty[0].size(), 5000u + 11) << "5 bytes per IPv4 entry";
  EXPECT_EQ(m6[0].size() - empty[0].size(), 17000u + 11) << "17 bytes per IPv6 entry";
}

TEST(PeerProtocol, SplitsLargeReportsIntoBoundedParts) {
  std::vector<dt::ReportEntry> in;
  for (int i = 0; i < 100000; i++) {
    dt::ReportEntry e{};
    e.key.addr[10] = e.key.addr[11] = 0xff;
    e.key.addr[12] = 198; e.key.addr[13] = static_cast<uint8_t>(18 + (i >> 16));
    e.key.addr[14] = static_cast<uint8_t>(i >> 8); e.key.addr[15] = static_cast<uint8_t>(i);
    e.hits = 1 + i % 5000;
    in.push_back(e);
  }
  auto msgs = dt::encode_report(header(), 100, body_of(in));
  ASSERT_GT(msgs.size(), 1u);
  uint64_t total = 0, want = 0;
  for (const auto &e : in) want += e.hits;
  for (size_t i = 0; i < msgs.size(); i++) {
    EXPECT_LE(msgs[i].size(), dt::kMaxMessageBytes);
    dt::ReportHeader h;
    std::vector<dt::ReportEntry> out;
    ASSERT_EQ(decode_entries(msgs[i].data(), msgs[i].size(), &h, &out), dt::DecodeError::None);
    EXPECT_EQ(h.seq, 100 + i);
    EXPECT_EQ(h.part, i);
    EXPECT_EQ(h.parts, msgs.size());
    for (const auto &e : out) total += e.hits;
  }
  EXPECT_EQ(total, want) << "every hit is in exactly one part";
}

TEST(PeerProtocol, RuleGroupsAndTagsRoundTrip) {
  dt::ReportBody in;
  in.rules = {"default", "web-syn", "unused"};
  in.entries = {entry("198.18.0.1", 4), entry("198.18.0.2", 9), entry("2001:2::9", 2)};
  in.entries[1].key.rule = 1;
  in.entries[2].key.rule = 1;
  in.tags = {{"user:42", 3}, {"api-token:abc", 1000}};
  auto msgs = dt::encode_report(header(), 1, in);
  ASSERT_EQ(msgs.size(), 1u);
  dt::ReportHeader h;
  dt::ReportBody out;
  ASSERT_EQ(dt::decode_report(msgs[0].data(), msgs[0].size(), &h, &out), dt::DecodeError::None);
  ASSERT_EQ(out.rules.size(), 2u) << "a rule without entries is not sent";
  std::map<std::string, uint64_t> by_rule_source;
  for (const auto &e : out.entries) by_rule_source[out.rules[e.key.rule] + "/" + dt::key_to_string(e.key)] = e.hits;
  EXPECT_EQ(by_rule_source, (std::map<std::string, uint64_t>{
                                {"default/198.18.0.1", 4}, {"web-syn/198.18.0.2", 9}, {"web-syn/2001:2::9", 2}}));
  ASSERT_EQ(out.tags.size(), 2u);
  EXPECT_EQ(out.tags[0].tag, "user:42");
  EXPECT_EQ(out.tags[1].hits, 1000u);
}

TEST(PeerProtocol, SplitGroupsKeepTheirNames) {
  dt::ReportBody in;
  in.rules = {"default", "second"};
  for (int i = 0; i < 30000; i++) {
    dt::ReportEntry e = entry(("198.18." + std::to_string(i / 250) + "." + std::to_string(i % 250)).c_str(), 1 + i % 3);
    e.key.rule = i % 2;
    in.entries.push_back(e);
  }
  for (int i = 0; i < 2000; i++) in.tags.push_back({"tag:" + std::to_string(i), 1});
  auto msgs = dt::encode_report(header(), 1, in);
  ASSERT_GT(msgs.size(), 1u);
  std::map<std::string, uint64_t> per_rule;
  size_t tags = 0;
  for (const auto &m : msgs) {
    EXPECT_LE(m.size(), dt::kMaxMessageBytes);
    dt::ReportHeader h;
    dt::ReportBody out;
    ASSERT_EQ(dt::decode_report(m.data(), m.size(), &h, &out), dt::DecodeError::None);
    for (const auto &e : out.entries) per_rule[out.rules[e.key.rule]] += e.hits;
    tags += out.tags.size();
  }
  uint64_t want0 = 0, want1 = 0;
  for (const auto &e : in.entries) (e.key.rule ? want1 : want0) += e.hits;
  EXPECT_EQ(per_rule["default"], want0);
  EXPECT_EQ(per_rule["second"], want1);
  EXPECT_EQ(tags, 2000u);
}

TEST(PeerProtocol, RejectsBadRuleNamesAndTags) {
  dt::ReportBody in;
  in.rules = {"default"};
  in.tags = {{"good", 1}};
  auto m = dt::encode_report(header(), 1, in)[0];
  dt::ReportHeader h;
  dt::ReportBody out;
  std::string bad = m;
  bad[bad.size() - 2] = '\n';  // a newline inside the tag
  EXPECT_EQ(dt::decode_report(bad.data(), bad.size(), &h, &out), dt::DecodeError::BadTag);
  in.tags.clear();
  in.entries = {entry("198.18.0.1", 1)};
  m = dt::encode_report(header(), 1, in)[0];
  const size_t name_at = m.find("default");
  ASSERT_NE(name_at, std::string::npos);
  m[name_at] = '/';
  EXPECT_EQ(dt::decode_report(m.data(), m.size(), &h, &out), dt::DecodeError::BadRuleName);
  EXPECT_TRUE(out.entries.empty());
}

TEST(PeerProtocol, RejectsEveryTruncation) {
  auto msg = dt::encode_report(header(), 1, body_of({entry("198.18.0.1", 1000), entry("2001:2::5", 7)}))[0];
  for (size_t n = 0; n < msg.size(); n++) {
    dt::ReportHeader h;
    std::vector<dt::ReportEntry> out;
    EXPECT_NE(decode_entries(msg.data(), n, &h, &out), dt::DecodeError::None) << "accepted " << n << " bytes";
    EXPECT_TRUE(out.empty());
  }
}

TEST(PeerProtocol, RejectsBadInputWithTheRightReason) {
  const auto good = dt::encode_report(header(), 1, body_of({entry("198.18.0.1", 3)}))[0];
  dt::ReportHeader h;
  std::vector<dt::ReportEntry> out;
  auto decode = [&](const std::string &m) { return decode_entries(m.data(), m.size(), &h, &out); };

  std::string m = good;
  m[0] = 'X';
  EXPECT_EQ(decode(m), dt::DecodeError::BadMagic);
  m = good;
  m[4] = 2;
  EXPECT_EQ(decode(m), dt::DecodeError::WrongVersion);
  m = good;
  m[7] = ' ';  // first byte of the node id
  EXPECT_EQ(decode(m), dt::DecodeError::BadNodeId);
  EXPECT_EQ(decode(good + "x"), dt::DecodeError::TrailingBytes);
  EXPECT_EQ(decode(std::string(dt::kMaxAcceptedBytes + 1, 'D')), dt::DecodeError::TooLarge);

  // Hits of 0 and above the limit are absurd.
  auto with_hits = [&](uint64_t hits) {
    std::string s = good;
    s.resize(s.size() - 3);  // drop "hits varint (1 byte) + n6 (1 byte) + ntags (1 byte)"
    while (hits >= 0x80) s.push_back(static_cast<char>((hits & 0x7f) | 0x80)), hits >>= 7;
    s.push_back(static_cast<char>(hits));
    s.push_back(0);
    s.push_back(0);
    return s;
  };
  EXPECT_EQ(decode(with_hits(3)), dt::DecodeError::None);
  EXPECT_EQ(decode(with_hits(0)), dt::DecodeError::AbsurdHits);
  EXPECT_EQ(decode(with_hits(dt::kMaxHitsPerEntry + 1)), dt::DecodeError::AbsurdHits);

  // An entry count far larger than the message is rejected before any allocation.
  std::string big = dt::encode_report(header(), 1, body_of({}))[0];
  big.resize(big.size() - 2);
  big += std::string("\xff\xff\xff\xff\x0f", 5);
  big.push_back(0);
  EXPECT_EQ(decode(big), dt::DecodeError::AbsurdCount);

  // Part numbers.
  m = good;
  const size_t parts_off = 7 + 6 + 32 + 2;  // magic..id_len, "edge-1", 4 x u64, part
  m[parts_off] = 0;
  m[parts_off + 1] = 0;
  EXPECT_EQ(decode(m), dt::DecodeError::BadParts);
  EXPECT_TRUE(out.empty());
}

TEST(PeerTracker, AppliesEachReportOnceAndCountsGaps) {
  dt::PeerTracker t(1000);
  dt::ReportHeader h = header("b");
  bool up = false;
  h.seq = 1;
  EXPECT_EQ(t.on_message(h, 10, &up), dt::Verdict::Accept);
  EXPECT_TRUE(up) << "first message brings the peer up";
  EXPECT_EQ(t.on_message(h, 11, &up), dt::Verdict::Duplicate) << "the same seq again";
  h.seq = 4;
  EXPECT_EQ(t.on_message(h, 12, &up), dt::Verdict::Accept);
  EXPECT_FALSE(up);
  h.seq = 3;
  EXPECT_EQ(t.on_message(h, 13, &up), dt::Verdict::Duplicate) << "late/out-of-order: already past it";
  const auto &p = t.peers().at("b");
  EXPECT_EQ(p.accepted, 2u);
  EXPECT_EQ(p.duplicates, 2u);
  EXPECT_EQ(p.lost, 2u) << "seq 2 and 3 were never seen in order";
}

TEST(PeerTracker, RestartIsAcceptedButOldBootIsAReplay) {
  dt::PeerTracker t(1000);
  dt::ReportHeader h = header("b");
  bool up;
  h.seq = 50;
  ASSERT_EQ(t.on_message(h, 1, &up), dt::Verdict::Accept);
  dt::ReportHeader restarted = h;
  restarted.boot_id = 99;
  restarted.seq = 1;
  restarted.sent_unix_ms = h.sent_unix_ms + 10;
  EXPECT_EQ(t.on_message(restarted, 2, &up), dt::Verdict::Accept);
  EXPECT_EQ(t.peers().at("b").restarts, 1u);
  h.seq = 51;  // a message of the previous boot, sent before the restart
  EXPECT_EQ(t.on_message(h, 3, &up), dt::Verdict::Duplicate);
}

TEST(PeerTracker, DownAfterSilenceAndBackWithoutRestart) {
  dt::PeerTracker t(1000);
  dt::ReportHeader h = header("c");
  bool up;
  h.seq = 1;
  t.on_message(h, 100, &up);
  EXPECT_TRUE(t.check_liveness(1100).empty()) << "exactly at the limit: still up";
  auto ch = t.check_liveness(1101);
  ASSERT_EQ(ch.size(), 1u);
  EXPECT_FALSE(ch[0].up);
  EXPECT_EQ(t.up_count(), 0u);
  h.seq = 2;
  t.on_message(h, 2000, &up);
  EXPECT_TRUE(up) << "comes back with its next message";
  EXPECT_EQ(t.up_count(), 1u);
}

}  // namespace
