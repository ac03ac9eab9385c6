// test_peer_protocol.cpp - encoding, strict decoding and once-only tracking of reports.
#include <gtest/gtest.h>

#include <map>

#include "common/address.h"
#include "cluster/peer_protocol.h"
#include "cluster/peer_tracker.h"
#include "cluster/resend_buffer.h"

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

// --- Adaptive factors section -------------------------------------------------

dt::RuleFactor factor(bool tag, std::string name, uint32_t ppm) {
  dt::RuleFactor f;
  f.tag = tag;
  f.name = std::move(name);
  f.factor_ppm = ppm;
  return f;
}

bool same_factors(const std::vector<dt::RuleFactor> &a, const std::vector<dt::RuleFactor> &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (a[i].tag != b[i].tag || a[i].name != b[i].name || a[i].factor_ppm != b[i].factor_ppm) return false;
  return true;
}

// Offset of the flags byte: magic (4), version (1).
constexpr size_t kFlagsAt = 5;

// One factor's wire bytes, built by hand (kind, varint name length, name, u32 LE).
std::string factor_wire(uint8_t kind, const std::string &name, uint32_t ppm) {
  std::string s(1, static_cast<char>(kind));
  uint64_t n = name.size();
  while (n >= 0x80) s.push_back(static_cast<char>((n & 0x7f) | 0x80)), n >>= 7;
  s.push_back(static_cast<char>(n));
  s += name;
  for (int i = 0; i < 4; i++) s.push_back(static_cast<char>(ppm >> (8 * i)));
  return s;
}

// A one-entry report with the factors flag set and `section` appended after the tags.
std::string with_section(const std::string &section) {
  std::string m = dt::encode_report(header(), 1, body_of({entry("198.18.0.1", 3)}))[0];
  m[kFlagsAt] = static_cast<char>(dt::kFlagFactors);
  return m + section;
}

dt::DecodeError decode_body(const std::string &m, dt::ReportBody *out) {
  dt::ReportHeader h;
  return dt::decode_report(m.data(), m.size(), &h, out);
}

TEST(PeerProtocolFactors, RoundTripPacketAndTagFactors) {
  dt::ReportBody in = body_of({entry("198.18.0.1", 4), entry("2001:2::9", 2)});
  in.tags = {{"user:42", 3}};
  in.factors = {factor(false, "default", 250000), factor(true, "user:", 500000), factor(true, "", 1),
                factor(false, std::string(dt::kMaxRuleNameLen, 'r'), dt::kFactorOne),
                factor(true, std::string(dt::kMaxTagLen, 'p'), 123456)};
  auto msgs = dt::encode_report(header(), 1, in);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0][kFlagsAt], dt::kFlagFactors) << "flags bit 0 marks the factors section";
  dt::ReportBody out;
  ASSERT_EQ(decode_body(msgs[0], &out), dt::DecodeError::None);
  EXPECT_TRUE(same_factors(out.factors, in.factors)) << "factors (kind, name, ppm, order) survive the trip";
  EXPECT_EQ(out.entries.size(), 2u) << "entries still decode alongside factors";
  ASSERT_EQ(out.tags.size(), 1u);
  EXPECT_EQ(out.tags[0].tag, "user:42");

  // Factors alone (a host that served nothing still tells its factors).
  dt::ReportBody only;
  only.factors = {factor(true, "", 700000)};
  auto m = dt::encode_report(header(), 1, only);
  ASSERT_EQ(m.size(), 1u);
  ASSERT_EQ(decode_body(m[0], &out), dt::DecodeError::None);
  EXPECT_TRUE(same_factors(out.factors, only.factors)) << "the catch-all prefix \"\" is a valid tag rule";
}

TEST(PeerProtocolFactors, NoFactorsMeansNoFlagAndUnchangedBytes) {
  // The empty report, byte for byte as before the factors section existed.
  std::string want("DTRP\x01\x00\x06" "edge-1", 13);
  for (uint64_t v : {0x1122334455667788ull, 9ull, 42ull, 1700000000000ull})
    for (int i = 0; i < 8; i++) want.push_back(static_cast<char>(v >> (8 * i)));
  want += std::string("\x00\x00\x01\x00", 4);  // part 0 of 1
  want += std::string("\x00\x00", 2);          // no groups, no tags
  EXPECT_EQ(dt::encode_report(header(), 9, dt::ReportBody{})[0], want) << "the empty report's bytes changed";

  dt::ReportBody plain = body_of({entry("198.18.0.1", 4)});
  plain.tags = {{"user:42", 3}};
  dt::ReportBody invalid = plain;  // every factor here is skipped by the encoder
  invalid.factors = {factor(false, "default", 0), factor(false, "bad name", 5), factor(true, "a\nb", 5),
                     factor(false, "default", dt::kFactorOne + 1)};
  const auto a = dt::encode_report(header(), 1, plain);
  const auto b = dt::encode_report(header(), 1, invalid);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0][kFlagsAt], 0) << "no factors: flags stay 0";
  EXPECT_EQ(b, a) << "a report whose factors are all invalid is the same bytes as one without factors";
}

TEST(PeerProtocolFactors, EncoderSkipsInvalidFactorsAndCapsTheCount) {
  dt::ReportBody in;
  in.factors = {factor(false, "", 5),          factor(false, "ok", 5),
                factor(true, std::string(1, '\0'), 5), factor(true, std::string(dt::kMaxTagLen + 1, 'x'), 5),
                factor(false, std::string(dt::kMaxRuleNameLen + 1, 'r'), 5), factor(true, "t:", 6)};
  dt::ReportBody out;
  auto m = dt::encode_report(header(), 1, in);
  ASSERT_EQ(decode_body(m[0], &out), dt::DecodeError::None);
  EXPECT_TRUE(same_factors(out.factors, {factor(false, "ok", 5), factor(true, "t:", 6)}))
      << "only the two valid factors are sent";

  in.factors.clear();
  for (size_t i = 0; i < dt::kMaxFactors + 10; i++) in.factors.push_back(factor(false, "r" + std::to_string(i), 1));
  m = dt::encode_report(header(), 1, in);
  ASSERT_EQ(decode_body(m[0], &out), dt::DecodeError::None);
  ASSERT_EQ(out.factors.size(), dt::kMaxFactors) << "at most kMaxFactors per report";
  EXPECT_EQ(out.factors.back().name, "r" + std::to_string(dt::kMaxFactors - 1)) << "the first ones are kept";
}

TEST(PeerProtocolFactors, FactorsOnlyInPartZeroWhenSplit) {
  dt::ReportBody in;
  in.rules = {"default", "second"};
  for (int i = 0; i < 30000; i++) {
    dt::ReportEntry e = entry(("198.18." + std::to_string(i / 250) + "." + std::to_string(i % 250)).c_str(), 1 + i % 3);
    e.key.rule = i % 2;
    in.entries.push_back(e);
  }
  for (int i = 0; i < 2000; i++) in.tags.push_back({"tag:" + std::to_string(i), 1});
  for (int i = 0; i < 40; i++) in.factors.push_back(factor(i % 2, "rule-" + std::to_string(i), 1000 * (i + 1)));
  auto msgs = dt::encode_report(header(), 1, in);
  ASSERT_GT(msgs.size(), 1u);
  uint64_t hits = 0, want = 0;
  for (const auto &e : in.entries) want += e.hits;
  for (size_t i = 0; i < msgs.size(); i++) {
    EXPECT_LE(msgs[i].size(), dt::kMaxMessageBytes) << "part " << i << " over the size limit";
    EXPECT_EQ(msgs[i][kFlagsAt], i == 0 ? dt::kFlagFactors : 0) << "flags of part " << i;
    dt::ReportBody out;
    ASSERT_EQ(decode_body(msgs[i], &out), dt::DecodeError::None) << "part " << i;
    if (i == 0) EXPECT_TRUE(same_factors(out.factors, in.factors)) << "part 0 carries every factor";
    else EXPECT_TRUE(out.factors.empty()) << "part " << i << " repeats factors";
    for (const auto &e : out.entries) hits += e.hits;
  }
  EXPECT_EQ(hits, want) << "every hit is in exactly one part";
}

TEST(PeerProtocolFactors, SplitCountsTheSectionInPartZero) {
  // A small limit makes the section a large share of part 0.
  dt::ReportBody in = body_of({});
  for (int i = 0; i < 60; i++) in.entries.push_back(entry(("198.18.1." + std::to_string(i)).c_str(), 1));
  for (int i = 0; i < 8; i++) in.factors.push_back(factor(false, "rule-" + std::to_string(i), 500000));
  const size_t limit = 200;
  auto msgs = dt::encode_report(header(), 1, in, limit);
  ASSERT_GT(msgs.size(), 2u);
  size_t entries = 0;
  for (size_t i = 0; i < msgs.size(); i++) {
    EXPECT_LE(msgs[i].size(), limit) << "part " << i << " over the limit: the section was not counted";
    dt::ReportBody out;
    ASSERT_EQ(decode_body(msgs[i], &out), dt::DecodeError::None);
    entries += out.entries.size();
  }
  EXPECT_EQ(entries, in.entries.size());

  // Factors that alone exceed the limit: part 0 holds just them, entries go on.
  in.factors.clear();
  for (int i = 0; i < 20; i++) in.factors.push_back(factor(false, "rule-" + std::to_string(i), 500000));
  msgs = dt::encode_report(header(), 1, in, limit);
  ASSERT_GT(msgs.size(), 1u);
  dt::ReportBody out;
  ASSERT_EQ(decode_body(msgs[0], &out), dt::DecodeError::None);
  EXPECT_EQ(out.factors.size(), 20u);
  EXPECT_TRUE(out.entries.empty()) << "an over-full part 0 takes no entries too";
  entries = 0;
  for (size_t i = 1; i < msgs.size(); i++) {
    EXPECT_LE(msgs[i].size(), limit);
    ASSERT_EQ(decode_body(msgs[i], &out), dt::DecodeError::None);
    entries += out.entries.size();
  }
  EXPECT_EQ(entries, in.entries.size());
}

TEST(PeerProtocolFactors, HandBuiltSectionDecodes) {
  dt::ReportBody out;
  const std::string two = std::string(1, 2) + factor_wire(0, "default", 250000) + factor_wire(1, "", 1000000);
  ASSERT_EQ(decode_body(with_section(two), &out), dt::DecodeError::None);
  EXPECT_TRUE(same_factors(out.factors, {factor(false, "default", 250000), factor(true, "", dt::kFactorOne)}));
  EXPECT_EQ(decode_body(with_section(std::string(1, 0)), &out), dt::DecodeError::None) << "zero factors";
  EXPECT_EQ(decode_body(with_section("") + std::string(1, 0), &out), dt::DecodeError::None);

  // The section without the flag is not a section: trailing bytes, as before.
  std::string m = with_section(two);
  m[kFlagsAt] = 0;
  EXPECT_EQ(decode_body(m, &out), dt::DecodeError::TrailingBytes);
  // Unknown flag bits are ignored, with or without the section.
  m[kFlagsAt] = static_cast<char>(0x80 | dt::kFlagFactors);
  EXPECT_EQ(decode_body(m, &out), dt::DecodeError::None);
  EXPECT_EQ(out.factors.size(), 2u);
  m = dt::encode_report(header(), 1, body_of({entry("198.18.0.1", 3)}))[0];
  m[kFlagsAt] = static_cast<char>(0xf8);
  EXPECT_EQ(decode_body(m, &out), dt::DecodeError::None) << "flags other than bits 0, 1 and 2 are ignored";
  EXPECT_TRUE(out.factors.empty());
  // Data after the section is still an error.
  EXPECT_EQ(decode_body(with_section(two) + "x", &out), dt::DecodeError::TrailingBytes);
}

TEST(PeerProtocolFactors, RejectsEachBadFactor) {
  auto one = [](const std::string &f) { return with_section(std::string(1, 1) + f); };
  const struct {
    const char *what;
    std::string wire;
  } cases[] = {
      {"factor 0", factor_wire(0, "default", 0)},
      {"factor above 1000000", factor_wire(0, "default", 1000001)},
      {"factor 0xffffffff", factor_wire(1, "p", 0xffffffffu)},
      {"kind 2", factor_wire(2, "default", 5)},
      {"kind 255", factor_wire(255, "default", 5)},
      {"empty rule name", factor_wire(0, "", 5)},
      {"rule name of 48 chars", factor_wire(0, std::string(dt::kMaxRuleNameLen + 1, 'r'), 5)},
      {"rule name with a space", factor_wire(0, "web syn", 5)},
      {"rule name with '/'", factor_wire(0, "web/syn", 5)},
      {"tag prefix with a newline", factor_wire(1, "user\n", 5)},
      {"tag prefix with NUL", factor_wire(1, std::string("us\0r", 4), 5)},
      {"tag prefix of 1025 bytes", factor_wire(1, std::string(dt::kMaxTagLen + 1, 'p'), 5)},
  };
  for (const auto &c : cases) {
    dt::ReportBody out;
    EXPECT_EQ(decode_body(one(c.wire), &out), dt::DecodeError::BadFactor) << c.what;
    EXPECT_TRUE(out.factors.empty() && out.entries.empty()) << c.what << ": a rejected message yields nothing";
  }
  EXPECT_STREQ(dt::decode_error_name(dt::DecodeError::BadFactor), "bad factor");
  // A bad factor after a good one still rejects the message.
  dt::ReportBody out;
  EXPECT_EQ(decode_body(with_section(std::string(1, 2) + factor_wire(0, "a", 1) + factor_wire(0, "b", 0)), &out),
            dt::DecodeError::BadFactor);
}

TEST(PeerProtocolFactors, RejectsEveryTruncationOfTheSection) {
  dt::ReportBody in = body_of({entry("198.18.0.1", 1000)});
  in.factors = {factor(false, "default", 250000), factor(true, "user:", 1)};
  const auto msg = dt::encode_report(header(), 1, in)[0];
  const auto plain = dt::encode_report(header(), 1, body_of({entry("198.18.0.1", 1000)}))[0];
  ASSERT_GT(msg.size(), plain.size());
  for (size_t n = 0; n < msg.size(); n++) {
    dt::ReportBody out;
    EXPECT_NE(decode_body(msg.substr(0, n), &out), dt::DecodeError::None) << "accepted " << n << " bytes";
    EXPECT_TRUE(out.factors.empty() && out.entries.empty()) << n << " bytes";
  }
  // Cut inside the section: truncated, or (when fewer bytes are left than the count
  // of factors could take) an absurd count.
  for (size_t n = plain.size(); n < msg.size(); n++) {
    dt::ReportBody out;
    const dt::DecodeError e = decode_body(msg.substr(0, n), &out);
    EXPECT_TRUE(e == dt::DecodeError::TooShort || e == dt::DecodeError::AbsurdCount)
        << "cut inside the section at " << n << ": " << dt::decode_error_name(e);
  }
}

TEST(PeerProtocolFactors, RejectsAbsurdFactorCounts) {
  dt::ReportBody out;
  // More than kMaxFactors, with bytes enough for them all.
  std::string many = "\x81\x04";  // varint 513
  for (size_t i = 0; i <= dt::kMaxFactors; i++) many += factor_wire(0, "r", 1);
  EXPECT_EQ(decode_body(with_section(many), &out), dt::DecodeError::AbsurdCount) << "513 factors";
  // Exactly kMaxFactors is fine.
  std::string max = "\x80\x04";  // varint 512
  for (size_t i = 0; i < dt::kMaxFactors; i++) max += factor_wire(0, "r", 1);
  EXPECT_EQ(decode_body(with_section(max), &out), dt::DecodeError::None) << "512 factors";
  EXPECT_EQ(out.factors.size(), dt::kMaxFactors);
  // More than the remaining bytes could hold (a factor takes at least 6 bytes).
  EXPECT_EQ(decode_body(with_section(std::string(1, 2) + factor_wire(1, "", 1) + "12345"), &out),
            dt::DecodeError::AbsurdCount)
      << "2 factors in 11 bytes";
  EXPECT_EQ(decode_body(with_section(std::string("\xff\xff\xff\xff\x0f", 5)), &out), dt::DecodeError::AbsurdCount);
  EXPECT_EQ(decode_body(with_section(std::string(10, '\xff')), &out), dt::DecodeError::BadVarint);
  // A name length far beyond the message is refused before any allocation.
  EXPECT_EQ(decode_body(with_section(std::string("\x01\x01\xff\xff\xff\xff\x0f", 7) + "1234"), &out),
            dt::DecodeError::BadFactor);
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
  const auto &p = t.peers().at("b");
  EXPECT_EQ(p.lost, 2u) << "seq 2 and 3 were never seen in order";
  EXPECT_EQ(p.missing.size(), 2u) << "seq 2 and 3 are remembered, to be asked again";
  h.seq = 3;
  const dt::Arrival late = t.arrive(h, 13);
  EXPECT_EQ(late.verdict, dt::Verdict::Accept) << "a missing seq, late (a resend): accepted once";
  EXPECT_TRUE(late.recovered);
  EXPECT_EQ(t.on_message(h, 14, &up), dt::Verdict::Duplicate) << "the resend again: already applied";
  h.seq = 5;
  EXPECT_EQ(t.on_message(h, 15, &up), dt::Verdict::Accept);
  h.seq = 4;
  EXPECT_EQ(t.on_message(h, 16, &up), dt::Verdict::Duplicate) << "seq 4 was applied in order";
  EXPECT_EQ(p.accepted, 4u);
  EXPECT_EQ(p.duplicates, 3u);
  EXPECT_EQ(p.recovered, 1u);
  EXPECT_EQ(p.last_seq, 5u) << "a resend does not move the sequence back";
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

constexpr uint64_t kMsNs = 1000000;

// A peer whose clock is an hour ahead of ours, reporting every 200 ms with 1-3 ms on
// the wire: every report is fresh (age 0-2 ms); a 20 s partition's backlog, delivered
// in a burst after the heal, is stale, except its last second.
TEST(PeerTrackerAge, SkewDoesNotMatterABacklogIsStale) {
  dt::PeerTracker t(1000 * kMsNs, 1000 * kMsNs);
  dt::ReportHeader h = header("b");
  const uint64_t wall0 = 1700000000000ull + 3600 * 1000;  // an hour ahead
  uint64_t seq = 0;
  auto send_at = [&](uint64_t sent_ms, uint64_t recv_ms) {
    h.seq = ++seq;
    h.sent_unix_ms = wall0 + sent_ms;
    return t.arrive(h, 5000 * kMsNs + recv_ms * kMsNs);
  };
  for (uint64_t ms = 0; ms < 10000; ms += 200) {
    const dt::Arrival a = send_at(ms, ms + 1 + (ms / 200) % 3);
    EXPECT_FALSE(a.stale) << "report sent at " << ms << " ms";
    EXPECT_LE(a.age_ms, 2u);
  }
  // Partition 10-30 s: 100 reports queued, all delivered at 30.005 s.
  size_t stale = 0, fresh = 0;
  for (uint64_t ms = 10000; ms < 30000; ms += 200) {
    const dt::Arrival a = send_at(ms, 30005);
    (a.stale ? stale : fresh)++;
    EXPECT_NEAR(static_cast<double>(a.age_ms), static_cast<double>(30005 - ms - 1), 1)
        << "age of the report sent at " << ms << " ms (1 ms on the wire at best)";
  }
  EXPECT_EQ(stale, 96u) << "all but the last second of the backlog is stale";
  EXPECT_EQ(fresh, 4u) << "sent at 29.2-29.8 s: less than 1 s old at 30.005 s";
  EXPECT_EQ(t.peers().at("b").stale, 96u);
  EXPECT_FALSE(send_at(30000, 30001).stale) << "reports after the heal are fresh";
  EXPECT_EQ(t.peers().at("b").relearned, 0u) << "a backlog is not a clock step";
}

// The same partition, with the peer seen down meanwhile (as the agent checks every
// period): the whole backlog is stale, since it was sent before the peer came back.
// A peer that restarts after a silence is not a backlog: its first report is charged.
TEST(PeerTrackerAge, BacklogAfterASilenceIsStale) {
  dt::PeerTracker t(1000 * kMsNs, 1000 * kMsNs);
  dt::ReportHeader h = header("b");
  uint64_t seq = 0;
  auto send_at = [&](uint64_t sent_ms, uint64_t recv_ms) {
    h.seq = ++seq;
    h.sent_unix_ms = 1700000000000ull + sent_ms;
    return t.arrive(h, recv_ms * kMsNs);
  };
  for (uint64_t ms = 0; ms < 10000; ms += 200) EXPECT_FALSE(send_at(ms, ms + 1).stale);
  EXPECT_EQ(t.check_liveness(12000 * kMsNs).size(), 1u) << "silent: down";
  size_t stale = 0;
  for (uint64_t ms = 10000; ms < 30000; ms += 200) stale += send_at(ms, 30005).stale;
  EXPECT_EQ(stale, 100u) << "the whole backlog was sent before the peer came back";
  EXPECT_FALSE(send_at(30000, 30006).stale) << "sent after it came back: charged";
  EXPECT_FALSE(send_at(30200, 30201).stale);
  // Killed at 31 s, restarted at 40 s: its first report carries what its XDP program
  // admitted meanwhile, fresh.
  t.check_liveness(40000 * kMsNs);
  h.boot_id++;
  seq = 0;
  const dt::Arrival a = send_at(40000, 40003);
  EXPECT_TRUE(a.came_up);
  EXPECT_FALSE(a.stale) << "a restarted peer has no backlog";
}

// The peer's clock runs 500 ppm slow (NTP's limit): the offset follows it.
TEST(PeerTrackerAge, FollowsDrift) {
  dt::PeerTracker t(1000 * kMsNs, 1000 * kMsNs);
  dt::ReportHeader h = header("b");
  for (uint64_t k = 1; k <= 36000; k++) {  // two hours of reports
    const uint64_t recv_ms = k * 200;
    h.seq = k;
    h.sent_unix_ms = 1700000000000ull + recv_ms - recv_ms / 2000;  // 0.5 ms behind per second
    const dt::Arrival a = t.arrive(h, recv_ms * kMsNs);
    ASSERT_FALSE(a.stale) << "report " << k;
    ASSERT_LE(a.age_ms, 1u) << "report " << k;
  }
}

// The peer's clock is stepped back 5 s: its reports look 5 s old, are not charged for
// 10 s, then the offset is learned again. A step forward is taken at once.
TEST(PeerTrackerAge, RelearnsAfterAClockStep) {
  dt::PeerTracker t(1000 * kMsNs, 1000 * kMsNs);
  dt::ReportHeader h = header("b");
  uint64_t seq = 0, stale = 0;
  dt::Arrival a;
  auto report = [&](uint64_t recv_ms, int64_t step_ms) {
    h.seq = ++seq;
    h.sent_unix_ms = static_cast<uint64_t>(1700000000000ll + static_cast<int64_t>(recv_ms) + step_ms);
    a = t.arrive(h, recv_ms * kMsNs);
    stale += a.stale;
  };
  for (uint64_t ms = 200; ms <= 5000; ms += 200) report(ms, 0);
  EXPECT_EQ(stale, 0u);
  uint64_t ms = 5200;
  for (; a.relearned_ms == 0 && ms < 60000; ms += 200) report(ms, -5000);
  EXPECT_NEAR(static_cast<double>(a.relearned_ms), 5000, 20) << "the step back learned (less the 10 s of creep)";
  EXPECT_EQ(stale, 50u) << "10 s of reports not charged (counted)";
  EXPECT_FALSE(a.stale);
  report(ms, -5000);
  EXPECT_FALSE(a.stale) << "fresh again after the relearning";
  report(ms + 200, 0);  // stepped forward again: looks newer, taken at once
  EXPECT_FALSE(a.stale);
  report(ms + 400, 0);
  EXPECT_FALSE(a.stale);
  EXPECT_EQ(t.peers().at("b").relearned, 1u);
}

TEST(PeerTrackerAge, NoMaxAgeChargesAnyAge) {
  dt::PeerTracker t(1000 * kMsNs, 0);
  dt::ReportHeader h = header("b");
  h.seq = 1;
  EXPECT_FALSE(t.arrive(h, 1000 * kMsNs).stale);
  h.seq = 2;
  const dt::Arrival a = t.arrive(h, 100000 * kMsNs);
  EXPECT_FALSE(a.stale);
  EXPECT_EQ(a.age_ms, 99000u);
}

// Missing seqs are asked again while younger than the max age, newest first if capped.
TEST(PeerTrackerResend, AsksForMissingSeqsUntilTheyAreStale) {
  dt::PeerTracker t(1000 * kMsNs, 1000 * kMsNs);
  dt::ReportHeader h = header("b");
  h.seq = 1;
  t.arrive(h, 0);
  h.seq = 5;
  t.arrive(h, 200 * kMsNs);
  auto r = t.resend_requests(300 * kMsNs, 64);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].node_id, "b");
  EXPECT_EQ(r[0].boot_id, h.boot_id);
  EXPECT_EQ(r[0].seqs, (std::vector<uint64_t>{2, 3, 4}));
  EXPECT_EQ(t.resend_requests(300 * kMsNs, 2)[0].seqs, (std::vector<uint64_t>{3, 4})) << "capped: the newest";
  h.seq = 3;
  EXPECT_TRUE(t.arrive(h, 400 * kMsNs).recovered);
  EXPECT_EQ(t.resend_requests(500 * kMsNs, 64)[0].seqs, (std::vector<uint64_t>{2, 4}));
  EXPECT_TRUE(t.resend_requests(1200 * kMsNs, 64).empty()) << "a second after the gap: they would be stale";
  h.seq = 2;
  EXPECT_EQ(t.arrive(h, 1300 * kMsNs).verdict, dt::Verdict::Duplicate) << "forgotten: no longer accepted";
  // A huge jump remembers only the newest kMaxMissing.
  h.seq = 1000000;
  t.arrive(h, 1400 * kMsNs);
  EXPECT_EQ(t.peers().at("b").missing.size(), dt::kMaxMissing);
  EXPECT_EQ(t.peers().at("b").lost, 3u + 999994u);
}

TEST(PeerProtocolResend, RoundTripAndSize) {
  const std::vector<dt::ResendRequest> reqs = {{"h2", 77, {5, 6, 9}}, {"edge-3", 1ull << 60, {1ull << 40}}};
  const std::string m = dt::encode_resend_request(header(), reqs);
  dt::ReportHeader h;
  dt::ReportBody b;
  ASSERT_EQ(dt::decode_report(m.data(), m.size(), &h, &b), dt::DecodeError::None);
  EXPECT_EQ(h.seq, 0u) << "a request is not part of the report sequence";
  EXPECT_TRUE(b.entries.empty() && b.tags.empty() && b.factors.empty());
  ASSERT_EQ(b.resend.size(), 2u);
  EXPECT_EQ(b.resend[0].node_id, "h2");
  EXPECT_EQ(b.resend[0].boot_id, 77u);
  EXPECT_EQ(b.resend[0].seqs, (std::vector<uint64_t>{5, 6, 9}));
  EXPECT_EQ(b.resend[1].seqs, (std::vector<uint64_t>{1ull << 40}));
  // header 53 + 2 empty sections + count, then per peer: id, boot, count, gaps (1 byte each).
  EXPECT_EQ(m.size(), 4 + 3 + 6 + 32 + 4 + 2 + 1 + (1 + 2 + 8 + 1 + 3) + (1 + 6 + 8 + 1 + 6));
}

TEST(PeerProtocolResend, EncoderKeepsOnlyValidRequests) {
  EXPECT_EQ(dt::encode_resend_request(header(), {}), "") << "nothing to ask";
  EXPECT_EQ(dt::encode_resend_request(header(), {{"bad id", 1, {1}}, {"ok", 1, {}}}), "") << "nothing valid";
  std::vector<dt::ResendRequest> many;
  for (int i = 0; i < 100; i++) many.push_back({"p" + std::to_string(i), 1, {3, 2, 3, 0}});
  many[0].seqs.clear();
  for (uint64_t s = 1; s <= 100; s++) many[0].seqs.push_back(s);
  const std::string m = dt::encode_resend_request(header(), many);
  dt::ReportHeader h;
  dt::ReportBody b;
  ASSERT_EQ(dt::decode_report(m.data(), m.size(), &h, &b), dt::DecodeError::None);
  EXPECT_EQ(b.resend.size(), dt::kMaxResendPeers);
  EXPECT_EQ(b.resend[0].seqs.size(), dt::kMaxResendSeqs);
  EXPECT_EQ(b.resend[1].seqs, std::vector<uint64_t>{3}) << "not ascending: the rest skipped";
}

TEST(PeerProtocolResend, RejectsMalformedRequests) {
  const std::string good = dt::encode_resend_request(header(), {{"h2", 7, {4, 5}}});
  dt::ReportHeader h;
  dt::ReportBody b;
  auto decode = [&](const std::string &m) { return dt::decode_report(m.data(), m.size(), &h, &b); };
  ASSERT_EQ(decode(good), dt::DecodeError::None);
  const size_t sections = 4 + 3 + 6 + 32 + 4;  // after the header: groups, tags, resend
  for (size_t cut = 0; cut < good.size(); cut++)
    EXPECT_NE(decode(good.substr(0, cut)), dt::DecodeError::None) << "cut at " << cut;
  std::string m = good;
  m[4 + 3 + 6 + 8] = 1;  // seq 1: a request has no seq
  EXPECT_EQ(decode(m), dt::DecodeError::BadResend);
  m = good;
  m[5] |= dt::kFlagFactors;
  EXPECT_EQ(decode(m), dt::DecodeError::BadResend) << "no factors with a request";
  m = good;
  m[sections + 2] = 0;  // no peers
  EXPECT_EQ(decode(m.substr(0, sections + 3)), dt::DecodeError::BadResend);
  m = good;
  const size_t nseqs_at = sections + 2 + 1 + 1 + 2 + 8;  // count, id length, "h2", boot
  m[nseqs_at] = 0;  // no seqs
  EXPECT_EQ(decode(m.substr(0, nseqs_at + 1)), dt::DecodeError::BadResend);
  m = good;
  m[m.size() - 1] = 0;  // a gap of 0: seqs not ascending
  EXPECT_EQ(decode(m), dt::DecodeError::BadResend);
  m = good;
  m[nseqs_at] = 65;  // more seqs than allowed
  EXPECT_EQ(decode(m), dt::DecodeError::BadResend);
  // Hits in a request message: refused.
  std::string with_hits = dt::encode_report(header(), 1, body_of({entry("198.18.0.1", 3)}))[0];
  with_hits[5] = dt::kFlagResend;
  for (int i = 0; i < 8; i++) with_hits[4 + 3 + 6 + 8 + i] = 0;
  EXPECT_EQ(decode(with_hits), dt::DecodeError::BadResend);
}

// What an agent older than resend requests makes of one: its decoder knew no flag bit
// 1, so it reads no section and finds trailing bytes (rejected, nothing debited).
TEST(PeerProtocolResend, OldDecodersRejectRequestsAsTrailingBytes) {
  std::string m = dt::encode_resend_request(header(), {{"h2", 7, {4}}});
  m[5] = 0;  // what a decoder that ignores bit 1 sees
  dt::ReportHeader h;
  dt::ReportBody b;
  EXPECT_EQ(dt::decode_report(m.data(), m.size(), &h, &b), dt::DecodeError::TrailingBytes);
}

TEST(ResendBuffer, KeepsRecentMessagesAndResendsEachOncePerGap) {
  dt::ResendBuffer buf(1000 * kMsNs, 1000);
  auto msg = [](char c) { return std::make_shared<const std::string>(100, c); };
  for (uint64_t seq = 1; seq <= 5; seq++) buf.keep(seq, msg(static_cast<char>('a' + seq)), seq * 200 * kMsNs);
  const dt::ResendRequest r{"me", 9, {2, 4, 7}};
  auto got = buf.take(r, 9, 1000 * kMsNs, 100 * kMsNs);
  ASSERT_EQ(got.size(), 2u) << "seq 7 was never sent";
  EXPECT_EQ((*got[0])[0], 'c');
  EXPECT_EQ((*got[1])[0], 'e');
  EXPECT_TRUE(buf.take(r, 9, 1050 * kMsNs, 100 * kMsNs).empty()) << "asked again within the gap: once";
  EXPECT_EQ(buf.take(r, 9, 1100 * kMsNs, 100 * kMsNs).size(), 2u) << "after the gap: again";
  EXPECT_TRUE(buf.take(r, 8, 1500 * kMsNs, 100 * kMsNs).empty()) << "another boot's seqs";
  EXPECT_EQ(buf.take(r, 9, 1500 * kMsNs, 100 * kMsNs).size(), 1u) << "seq 2 (sent at 400 ms) expired at 1.5 s";
  for (uint64_t seq = 6; seq <= 30; seq++) buf.keep(seq, msg('z'), 1500 * kMsNs);
  EXPECT_LE(buf.bytes(), 1000u) << "bounded in bytes";
  EXPECT_EQ(buf.size(), 10u);
  buf.keep(1, msg('n'), 1600 * kMsNs);
  EXPECT_EQ(buf.size(), 1u) << "a new sequence (restart of ours) drops the old one";
}

}  // namespace
