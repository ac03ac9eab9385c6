// test_peer_protocol_factors.cpp - the peer protocol's adaptive factors section: round
// trips, what the encoder leaves out, where a split report carries it, bad input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster_core/peer_protocol.h"
#include "report_fixtures.h"

namespace {

using dt::test::body_of;
using dt::test::entry;
using dt::test::header;

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
  // The empty report, byte for byte as before the factors section existed (in v2).
  std::string want(
      "DTRP\x02\x00\x06"
      "edge-1"
      "\x00",
      14);  // v2: no recipient
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
  in.factors = {factor(false, "", 5),
                factor(false, "ok", 5),
                factor(true, std::string(1, '\0'), 5),
                factor(true, std::string(dt::kMaxTagLen + 1, 'x'), 5),
                factor(false, std::string(dt::kMaxRuleNameLen + 1, 'r'), 5),
                factor(true, "t:", 6)};
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
  dt::ReportBody in = dt::test::split_body();
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
  m[kFlagsAt] = static_cast<char>(0xf0 & ~(dt::kFlagRelay | dt::kFlagVerified));
  EXPECT_EQ(decode_body(m, &out), dt::DecodeError::None) << "flags other than bits 0 to 5 are ignored";
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

}  // namespace
