// test_peer_protocol.cpp - encoding and strict decoding of reports and resend requests
// (the adaptive factors section: test_peer_protocol_factors.cpp).
#include <gtest/gtest.h>

#include <map>

#include "cluster_core/peer_protocol.h"
#include "report_fixtures.h"

namespace {

using dt::test::body_of;
using dt::test::decode_one;
using dt::test::entry;
using dt::test::header;

// Decodes and returns just the entries (empty on error).
dt::DecodeError decode_entries(const void *data, size_t len, dt::ReportHeader *h, std::vector<dt::ReportEntry> *out) {
  dt::ReportBody b;
  dt::DecodeError e = dt::decode_report(data, len, h, &b);
  *out = b.entries;
  return e;
}

TEST(PeerProtocol, RoundTripIPv4AndIPv6) {
  std::vector<dt::ReportEntry> in = {entry("198.18.0.1", 10), entry("2001:2::1", 300), entry("198.18.7.9", 1)};
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
    e.key.addr[12] = 198;
    e.key.addr[13] = static_cast<uint8_t>(18 + (i >> 16));
    e.key.addr[14] = static_cast<uint8_t>(i >> 8);
    e.key.addr[15] = static_cast<uint8_t>(i);
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
  dt::ReportHeader h;
  dt::ReportBody out;
  ASSERT_NO_FATAL_FAILURE(decode_one(dt::encode_report(header(), 1, in), &h, &out));
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
  dt::ReportBody in = dt::test::split_body();
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
  m[4] = 1;
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

TEST(PeerProtocolResend, RoundTripAndSize) {
  const std::vector<dt::ResendRequest> reqs = {{"h2", 77, {5, 6, 9}}, {"edge-3", 1ull << 60, {1ull << 40}}};
  const std::string m = dt::encode_resend_request(header(), reqs);
  dt::ReportHeader h;
  dt::ReportBody b;
  ASSERT_EQ(dt::decode_report(m.data(), m.size(), &h, &b), dt::DecodeError::None);
  EXPECT_EQ(h.stream, dt::Stream::Resend) << "a request is not part of the report sequence";
  EXPECT_TRUE(b.entries.empty() && b.tags.empty() && b.factors.empty());
  ASSERT_EQ(b.resend.size(), 2u);
  EXPECT_EQ(b.resend[0].node_id, "h2");
  EXPECT_EQ(b.resend[0].boot_id, 77u);
  EXPECT_EQ(b.resend[0].seqs, (std::vector<uint64_t>{5, 6, 9}));
  EXPECT_EQ(b.resend[1].seqs, (std::vector<uint64_t>{1ull << 40}));
  // header 54 + 2 empty sections + count, then per peer: id, boot, count, gaps (1 byte each).
  EXPECT_EQ(m.size(), 4 + 3 + 6 + 1 + 32 + 4 + 2 + 1 + (1 + 2 + 8 + 1 + 3) + (1 + 6 + 8 + 1 + 6));
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
  const size_t sections = 4 + 3 + 6 + 1 + 32 + 4;  // after the header: groups, tags, resend
  for (size_t cut = 0; cut < good.size(); cut++)
    EXPECT_NE(decode(good.substr(0, cut)), dt::DecodeError::None) << "cut at " << cut;
  std::string m = good;
  m[5] |= dt::kFlagFactors;
  EXPECT_EQ(decode(m), dt::DecodeError::BadResend) << "no factors with a request";
  m = good;
  m[sections + 2] = 0;  // no peers
  EXPECT_EQ(decode(m.substr(0, sections + 3)), dt::DecodeError::BadResend);
  m = good;
  const size_t nseqs_at = sections + 2 + 1 + 1 + 2 + 8;  // count, id length, "h2", boot
  m[nseqs_at] = 0;                                       // no seqs
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
  for (int i = 0; i < 8; i++) with_hits[4 + 3 + 6 + 1 + 8 + i] = 0;
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

}  // namespace

// Reporting scheme "owner": relay messages and directed messages (peer_protocol.h).
TEST(PeerProtocolRelay, RelayRoundTripsEveryHostsEntriesInItsOwnMessage) {
  dt::ReportHeader h;
  h.node_id = "owner";
  h.boot_id = 7;
  dt::RelayedReport a{"h1", {"default", "web"}, {}}, b{"h2", {"default"}, {}};
  dt_key k{};
  k.addr[10] = k.addr[11] = 0xff, k.addr[12] = 198, k.addr[13] = 18, k.addr[15] = 9;
  a.entries = {{k, 3}};
  k.rule = 1;
  a.entries.push_back({k, 4});
  k.rule = 0, k.addr[15] = 10;
  b.entries = {{k, 5}};
  dt::ReportHeader got;
  dt::ReportBody body;
  ASSERT_NO_FATAL_FAILURE(decode_one(dt::encode_relay(h, 11, {a, b}), &got, &body));
  EXPECT_EQ(got.seq, 11u) << "a relay message is in the sender's sequence";
  EXPECT_TRUE(body.entries.empty() && body.rules.empty()) << "no hits of the owner's own";
  ASSERT_EQ(body.relayed.size(), 2u);
  EXPECT_EQ(body.relayed[0].node_id, "h1");
  ASSERT_EQ(body.relayed[0].entries.size(), 2u);
  uint64_t hits = 0;
  for (const auto &e : body.relayed[0].entries) hits += e.hits;
  EXPECT_EQ(hits, 7u);
  EXPECT_EQ(body.relayed[1].node_id, "h2");
  EXPECT_EQ(body.relayed[1].entries.at(0).hits, 5u);
}

TEST(PeerProtocolRelay, LargeRelaysSplitAndBadOnesAreRefused) {
  dt::ReportHeader h;
  h.node_id = "owner";
  dt::RelayedReport big{"h1", {"default"}, {}};
  for (uint32_t i = 0; i < dt::kMaxRelayEntries + 10; i++) {
    dt_key k{};
    memcpy(&k.addr[0], &i, 4);  // IPv6 keys, all distinct
    k.addr[4] = 0x20;
    big.entries.push_back({k, 1});
  }
  const auto msgs = dt::encode_relay(h, 1, {big, dt::RelayedReport{"bad id!", {"default"}, big.entries}});
  ASSERT_EQ(msgs.size(), 2u) << "4106 entries: two messages; the host with a bad id is left out";
  size_t total = 0;
  for (const auto &m : msgs) {
    dt::ReportHeader got;
    dt::ReportBody body;
    ASSERT_EQ(dt::decode_report(m.data(), m.size(), &got, &body), dt::DecodeError::None);
    for (const auto &r : body.relayed) total += r.entries.size();
  }
  EXPECT_EQ(total, dt::kMaxRelayEntries + 10);
  std::string bad = msgs[0];
  bad[bad.find("h1") - 1] = 0;  // a zero-length host id
  dt::ReportHeader got;
  dt::ReportBody body;
  EXPECT_EQ(dt::decode_report(bad.data(), bad.size(), &got, &body), dt::DecodeError::BadRelay);
}

TEST(PeerProtocolRelay, DirectedMessagesNameTheirRecipientAndWrapAWholeMessage) {
  const std::string inner = "DTRP-whatever";
  const std::string m = dt::wrap_directed("h12", inner);
  EXPECT_EQ(m.compare(0, 3, "DTO"), 0) << "subscribers filter on the prefix";
  std::string to;
  size_t at = 0;
  ASSERT_TRUE(dt::unwrap_directed(m.data(), m.size(), &to, &at));
  EXPECT_EQ(to, "h12");
  EXPECT_EQ(m.substr(at), inner);
  EXPECT_FALSE(dt::unwrap_directed(inner.data(), inner.size(), &to, &at)) << "a report is not directed";
  EXPECT_FALSE(dt::unwrap_directed("DTO\x09h1", 6, &to, &at)) << "an id longer than the message";
}

namespace {

// v2: the recipient and the stream are in the header, so in what the signature covers.
TEST(PeerProtocolV2, RecipientAndStreamTravelInTheHeader) {
  dt::ReportHeader h = header();
  h.to = "h12";
  const auto msgs = dt::encode_report(h, 7, body_of({entry("198.18.0.1", 3)}));
  dt::ReportHeader got;
  dt::ReportBody body;
  ASSERT_NO_FATAL_FAILURE(decode_one(msgs, &got, &body));
  EXPECT_EQ(static_cast<uint8_t>(msgs[0][4]), 2) << "version 2";
  EXPECT_EQ(got.to, "h12");
  EXPECT_EQ(got.stream, dt::Stream::Reports);
  EXPECT_EQ(got.seq, 7u);
  h.to = "";
  h.seq = 3;
  const std::string req = dt::encode_resend_request(h, {{"h2", 7, {4}}});
  ASSERT_EQ(dt::decode_report(req.data(), req.size(), &got, &body), dt::DecodeError::None);
  EXPECT_EQ(got.to, "") << "to everyone";
  EXPECT_EQ(got.stream, dt::Stream::Resend);
  EXPECT_EQ(got.seq, 3u) << "resend requests have seqs too";
  std::string bad = msgs[0];
  const size_t to_len = 4 + 1 + 1 + 1 + h.node_id.size();
  bad[to_len + 1] = ' ';  // a recipient that is not a node id
  EXPECT_EQ(dt::decode_report(bad.data(), bad.size(), &got, &body), dt::DecodeError::BadRecipient);
  bad = msgs[0];
  bad[to_len] = 65;  // longer than a node id
  EXPECT_EQ(dt::decode_report(bad.data(), bad.size(), &got, &body), dt::DecodeError::BadRecipient);
}

// Mixed versions: a v1 message (the recipient outside the signature) is refused by name.
TEST(PeerProtocolV2, VersionOneIsRefused) {
  std::string m = dt::encode_report(header(), 1, body_of({entry("198.18.0.1", 3)}))[0];
  m[4] = 1;
  dt::ReportHeader got;
  dt::ReportBody body;
  EXPECT_EQ(dt::decode_report(m.data(), m.size(), &got, &body), dt::DecodeError::WrongVersion);
  EXPECT_EQ(dt::peek_version(m.data(), m.size()), 1u);
  EXPECT_STREQ(dt::decode_error_name(dt::DecodeError::WrongVersion), "wrong version");
}

}  // namespace
