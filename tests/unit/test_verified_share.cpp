// test_verified_share.cpp - sources verified by SYN cookies between peers: the verified
// sources message (cluster_core/peer_protocol.h) and what a host tells and takes
// (cluster_core/verified_share.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster_core/inbound.h"
#include "cluster_core/outbox.h"
#include "cluster_core/peer_protocol.h"
#include "cluster_core/peer_tracker.h"
#include "cluster_core/verified_share.h"
#include "common/address.h"
#include "common/peer_set.h"
#include "report_fixtures.h"

namespace {

using dt::test::decode_one;
using dt::test::header;
constexpr uint64_t kMs = 1'000'000;

dt::VerifiedSource source(const std::string &addr, uint64_t remaining_ms) {
  dt::VerifiedSource v;
  EXPECT_TRUE(dt::key_from_string(addr, &v.key)) << addr;
  v.key.rule = dt::addr_is_v4(v.key.addr) ? DT_VERIFIED_V4 : DT_VERIFIED_V6;
  v.remaining_ms = remaining_ms;
  return v;
}

dt::DecodeError decode(const std::string &msg, dt::ReportHeader *h, dt::ReportBody *body) {
  return dt::decode_report(msg.data(), msg.size(), h, body);
}

dt::DecodeError decode_with(std::string msg, size_t at, uint8_t v) {
  msg[at] = static_cast<char>(v);
  dt::ReportHeader h;
  dt::ReportBody body;
  return decode(msg, &h, &body);
}

TEST(VerifiedMessage, RoundTripsBothFamiliesInAStreamOfItsOwn) {
  const std::vector<dt::VerifiedSource> in = {source("198.18.0.2", 600'000), source("2001:2::9", 1),
                                              source("198.18.7.1", dt::kMaxVerifiedMs)};
  dt::ReportHeader sent = header("h1");
  sent.seq = 7;
  dt::ReportHeader h;
  dt::ReportBody body;
  ASSERT_NO_FATAL_FAILURE(decode_one(dt::encode_verified_messages(sent, in), &h, &body));
  EXPECT_EQ(h.stream, dt::Stream::Verified) << "a stream of its own: a replay is a duplicate";
  EXPECT_EQ(h.seq, 7u);
  EXPECT_TRUE(body.entries.empty() && body.bans.empty());
  ASSERT_EQ(body.verified.size(), in.size());
  for (size_t i = 0; i < in.size(); i++) {
    EXPECT_EQ(dt::key_to_string(body.verified[i].key), dt::key_to_string(in[i].key)) << i;
    EXPECT_EQ(body.verified[i].key.rule, in[i].key.rule) << i;
    EXPECT_EQ(body.verified[i].remaining_ms, in[i].remaining_ms) << i;
  }
  dt::Arrival fresh;
  EXPECT_EQ(dt::plan_inbound(h, body, fresh, false).kind, dt::InboundKind::Verified);
  EXPECT_STREQ(dt::stream_name(h.stream), "verified sources");
}

TEST(VerifiedMessage, EncoderSkipsInvalidSourcesAndSplitsByCountAndBytes) {
  dt::VerifiedSource mapped_as_v4 = source("2001:2::1", 1000);
  mapped_as_v4.key.rule = DT_VERIFIED_V4;  // an IPv6 address said to be IPv4
  dt::VerifiedSource no_family = source("198.18.0.2", 1000);
  no_family.key.rule = 0;
  EXPECT_TRUE(dt::encode_verified_messages(
                  header("h1"),
                  {source("198.18.0.2", 0), source("198.18.0.2", dt::kMaxVerifiedMs + 1), mapped_as_v4, no_family})
                  .empty())
      << "invalid sources went out";
  std::vector<dt::VerifiedSource> in;
  for (int i = 0; i < 2500; i++)
    in.push_back(source("198.18." + std::to_string(i / 256) + "." + std::to_string(i % 256), 5000));
  const auto by_count = dt::encode_verified_messages(header("h1"), in);
  ASSERT_EQ(by_count.size(), 3u) << "2500 sources, " << dt::kMaxVerifiedPerMessage << " a message";
  in.clear();
  for (int i = 0; i < 900; i++) in.push_back(source("2001:2::" + std::to_string(i), 5000));
  dt::ReportHeader sent = header("h1");
  sent.seq = 3;
  const auto by_bytes = dt::encode_verified_messages(sent, in, 4096);
  ASSERT_GE(by_bytes.size(), 4u) << "900 IPv6 sources in messages of about 4 KiB";
  size_t total = 0;
  for (size_t i = 0; i < by_bytes.size(); i++) {
    EXPECT_LE(by_bytes[i].size(), 4096u) << i;
    dt::ReportHeader h;
    dt::ReportBody body;
    ASSERT_EQ(decode(by_bytes[i], &h, &body), dt::DecodeError::None) << i;
    EXPECT_EQ(h.seq, 3 + i) << "each message its seq in the stream";
    total += body.verified.size();
  }
  EXPECT_EQ(total, in.size());
}

TEST(VerifiedMessage, RefusesBadSources) {
  const std::string msg = dt::encode_verified_messages(header("h1"), {source("198.18.0.2", 100)})[0];
  // The source ends the message: family, 4 address bytes, remaining ms (varint: 100 is one byte).
  const size_t src = msg.size() - 6;
  ASSERT_EQ(static_cast<uint8_t>(msg[src]), 4) << "the test's offset is not the family byte";
  EXPECT_EQ(decode_with(msg, src, 5), dt::DecodeError::BadVerified) << "family 5";
  EXPECT_EQ(decode_with(msg, src + 5, 0), dt::DecodeError::BadVerified) << "0 ms left";
  EXPECT_EQ(decode_with(msg, src - 1, 0), dt::DecodeError::BadVerified) << "no sources";
  EXPECT_EQ(decode_with(msg, src - 2, 1), dt::DecodeError::BadVerified) << "a rule group in a verified message";
  EXPECT_EQ(decode_with(msg, dt::kFlagsOffset, dt::kFlagVerified | dt::kFlagFactors), dt::DecodeError::BadVerified)
      << "another section's flag";
  EXPECT_EQ(decode_with(msg, src - 1, 2), dt::DecodeError::AbsurdCount) << "more sources than bytes";
  dt::ReportHeader h;
  dt::ReportBody body;
  EXPECT_EQ(decode(msg + "x", &h, &body), dt::DecodeError::TrailingBytes);
  for (size_t cut = 1; cut <= 6; cut++)
    EXPECT_NE(dt::decode_report(msg.data(), msg.size() - cut, &h, &body), dt::DecodeError::None) << "cut " << cut;
  // Too many: kMaxVerifiedPerMessage + 1 as the count (a two-byte varint), enough bytes after it.
  std::string many = msg.substr(0, src - 1);
  many += static_cast<char>(0x81);
  many += static_cast<char>(0x08);  // 1025
  for (int i = 0; i < 1025; i++) many += std::string("\x04\xc6\x12\x00\x02\x64", 6);
  EXPECT_EQ(decode(many, &h, &body), dt::DecodeError::BadVerified) << "over kMaxVerifiedPerMessage";
}

TEST(VerifiedMessage, ReplayedIsADuplicate) {
  dt::PeerTracker t(1'000'000'000ull);
  dt::ReportHeader h = header("h1");
  h.seq = 1;
  h.stream = dt::Stream::Verified;
  EXPECT_EQ(t.arrive(h, 10 * kMs).verdict, dt::Verdict::Accept);
  EXPECT_EQ(t.arrive(h, 20 * kMs).verdict, dt::Verdict::Duplicate) << "a recorded verified message replayed";
  h.stream = dt::Stream::Bans;
  EXPECT_EQ(t.arrive(h, 30 * kMs).verdict, dt::Verdict::Accept) << "the bans' seq 1 is another stream's";
}

TEST(VerifiedMessage, OutboxNumbersItsOwnStreamAndSeals) {
  int sealed = 0;
  dt::Outbox out(dt::OutboxOptions{"h1", 5}, [&](std::string *) { sealed++; });
  const auto a = out.verified(out.header(1, 1700000000000ull), {source("198.18.0.2", 1000)});
  const auto b = out.verified(out.header(2, 1700000000200ull), {source("198.18.0.3", 1000)});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(sealed, 2) << "every verified message signed";
  dt::ReportHeader h;
  dt::ReportBody body;
  ASSERT_EQ(decode(*b[0].bytes, &h, &body), dt::DecodeError::None);
  EXPECT_EQ(h.seq, 2u);
  EXPECT_EQ(b[0].kind, dt::OutKind::Verified);
  EXPECT_TRUE(out.verified(out.header(3, 1700000000400ull), {}).empty()) << "nothing to tell: no message";
}

dt_verified_rec rec(const std::string &addr, uint64_t expires_ns) {
  const dt::VerifiedSource v = source(addr, 1);
  dt_verified_rec r{};
  r.key = v.key;
  r.expires_ns = expires_ns;
  return r;
}

TEST(VerifiedShare, TellsEachSourceOnceWithItsTimeLeftWithinTheCap) {
  const uint64_t now = 1000 * kMs;
  uint64_t not_shared = 0;
  const auto out = dt::verified_to_share(
      {rec("198.18.0.2", now + 500 * kMs), rec("198.18.0.3", now - 1), rec("198.18.0.2", now + 900 * kMs),
       rec("2001:2::1", now + kMs / 2), rec("2001:2::2", now + 3 * kMs)},
      now, &not_shared);
  ASSERT_EQ(out.size(), 2u) << "expired, and under 1 ms left: not told; a source verified twice told once";
  EXPECT_EQ(dt::key_to_string(out[0].key), "198.18.0.2");
  EXPECT_EQ(out[0].remaining_ms, 900u) << "its latest expiry";
  EXPECT_EQ(out[1].remaining_ms, 3u);
  EXPECT_EQ(not_shared, 0u);
  std::vector<dt_verified_rec> many;
  for (size_t i = 0; i < dt::kMaxVerifiedSharedPerPeriod + 10; i++)
    many.push_back(rec("2001:2::" + std::to_string(i), now + 10 * kMs));
  EXPECT_EQ(dt::verified_to_share(many, now, &not_shared).size(), dt::kMaxVerifiedSharedPerPeriod);
  EXPECT_EQ(not_shared, 10u) << "past the period's cap: counted";
}

TEST(VerifiedShare, IntakeTakesTheAgeOffCapsAtTheLocalTtlAndKeepsItsBudget) {
  dt::VerifiedIntake in(60'000 * kMs, 3);  // --verified-ttl 60 s, 3 a period
  const auto w =
      in.take("h1", {source("198.18.0.2", 600'000), source("198.18.0.3", 1000), source("198.18.0.4", 100)}, 200, 0);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].ttl_ns, 60'000 * kMs) << "cut to our --verified-ttl";
  EXPECT_EQ(w[1].ttl_ns, 800 * kMs) << "the message's age taken off";
  EXPECT_EQ(in.counts().capped, 1u);
  EXPECT_EQ(in.counts().expired_in_transit, 1u) << "100 ms left, 200 ms old";
  EXPECT_EQ(in.take("h2", {source("198.18.0.5", 1000), source("198.18.0.6", 1000)}, 0, 0).size(), 1u);
  EXPECT_EQ(in.counts().over_budget, 1u) << "3 a period for all peers";
  in.new_period();
  EXPECT_EQ(in.take("h2", {source("198.18.0.6", 1000)}, 0, 0).size(), 1u) << "a new period, a new budget";
}

std::vector<dt::VerifiedSource> sources_from(int first, int n, uint64_t remaining_ms) {
  std::vector<dt::VerifiedSource> out;
  for (int i = first; i < first + n; i++) out.push_back(source("2001:2::" + std::to_string(i), remaining_ms));
  return out;
}

TEST(VerifiedShare, OnePeerHoldsAtMostItsCapInForceAtOnce) {
  dt::VerifiedIntake in(60'000 * kMs, 1000, dt::PeerSet{}, dt::VerifiedHoldLimits{3, 100});
  EXPECT_EQ(in.take("h1", sources_from(1, 5, 10'000), 0, 0).size(), 3u) << "--peer-verified-max 3";
  EXPECT_EQ(in.counts().over_peer_cap, 2u) << "each new source past the cap counted";
  EXPECT_EQ(in.held_of("h1"), 3u);
  EXPECT_EQ(in.take("h1", sources_from(1, 3, 20'000), 0, 1000 * kMs).size(), 3u)
      << "a source it holds already is renewed, not refused";
  EXPECT_EQ(in.counts().over_peer_cap, 2u);
  EXPECT_EQ(in.take("h1", sources_from(4, 1, 10'000), 0, 1000 * kMs).size(), 0u) << "still at its cap";
  EXPECT_EQ(in.take("h2", sources_from(10, 3, 10'000), 0, 1000 * kMs).size(), 3u)
      << "another peer's cap is its own: one peer cannot take the others' room";
  // h1's sources were renewed to 21 s (1 s + 20 s): at 15 s they still hold its room, at 21 s they have run out.
  EXPECT_EQ(in.take("h1", sources_from(4, 1, 10'000), 0, 15'000 * kMs).size(), 0u);
  EXPECT_EQ(in.take("h1", sources_from(4, 2, 10'000), 0, 21'000 * kMs).size(), 2u) << "expired sources free the room";
  EXPECT_EQ(in.held_of("h1"), 2u);
  EXPECT_EQ(in.counts().over_peer_cap, 4u);
}

TEST(VerifiedShare, AllThePeersTogetherHoldAtMostTheTable) {
  dt::VerifiedIntake in(60'000 * kMs, 1000, dt::PeerSet{}, dt::VerifiedHoldLimits{4, 6});  // --max-verified 6
  EXPECT_EQ(in.take("h1", sources_from(1, 4, 5'000), 0, 0).size(), 4u);
  EXPECT_EQ(in.take("h2", sources_from(10, 4, 10'000), 0, 0).size(), 2u) << "6 in all";
  EXPECT_EQ(in.counts().over_peer_cap, 2u);
  EXPECT_EQ(in.held(), 6u);
  EXPECT_EQ(in.take("h3", sources_from(20, 2, 10'000), 0, 6'000 * kMs).size(), 2u)
      << "h1's 4 expired at 5 s: swept when the table is full";
  EXPECT_EQ(in.held_of("h1"), 0u);
  EXPECT_EQ(in.held(), 4u);
}

TEST(VerifiedShare, PeerVerifiedMaxDefaultsToAQuarterOfTheTable) {
  EXPECT_EQ(dt::default_verified_per_peer(65536), 16384u);
  EXPECT_EQ(dt::default_verified_per_peer(3), 1u) << "never 0";
  const dt::VerifiedHoldLimits d;
  EXPECT_EQ(d.per_peer, 16384u);
  EXPECT_EQ(d.all_peers, 65536u);
}

TEST(VerifiedShare, PeerVerifiedChangesOnAReload) {
  dt::PeerSet h1;
  std::string err;
  ASSERT_TRUE(dt::parse_peer_set("h1", &h1, &err)) << err;
  dt::VerifiedIntake in(60'000 * kMs);
  EXPECT_TRUE(in.admits("h2", 1));
  EXPECT_TRUE(in.set_peers(h1, 0).empty()) << "no peer held anything";
  EXPECT_FALSE(in.admits("h2", 1)) << "refused once the reload lists h1 alone";
  EXPECT_TRUE(in.admits("h1", 1));
  EXPECT_EQ(dt::describe_peer_set_change("--peer-verified", dt::PeerSet{}, h1), "--peer-verified: h1 (was all)");
  EXPECT_EQ(dt::describe_peer_set_change("--peer-verified", h1, h1), "") << "unchanged: nothing said";
}

// A reload that takes a peer off --peer-verified: the sources it wrote are handed back (to be
// deleted from the verified map), but those a peer still listed holds too, and the expired.
TEST(VerifiedShare, AReloadWithdrawsTheSourcesOfAPeerNoLongerListed) {
  dt::PeerSet h1_h2, h1;
  std::string err;
  ASSERT_TRUE(dt::parse_peer_set("h1,h2", &h1_h2, &err)) << err;
  ASSERT_TRUE(dt::parse_peer_set("h1", &h1, &err)) << err;
  dt::VerifiedIntake in(60'000 * kMs, 1000, h1_h2);
  in.take("h2", {source("198.18.0.2", 10'000), source("198.18.0.3", 10'000), source("198.18.0.4", 1'000)}, 0, 0);
  in.take("h1", {source("198.18.0.3", 5'000)}, 0, 0);
  ASSERT_EQ(in.held(), 4u);
  const std::vector<dt::VerifiedDrop> gone = in.set_peers(h1, 2'000 * kMs);
  ASSERT_EQ(gone.size(), 1u) << "198.18.0.3 is h1's too, 198.18.0.4 has expired: h2's one other source goes";
  EXPECT_EQ(dt::key_to_string(gone[0].key), "198.18.0.2");
  EXPECT_EQ(gone[0].expires_ns, 10'000 * kMs) << "until when h2 said: a later verification here is kept";
  EXPECT_EQ(in.held_of("h2"), 0u) << "h2 holds nothing here any more";
  EXPECT_EQ(in.held(), 1u) << "h1's source stays";
  EXPECT_FALSE(in.admits("h2", 1));
  EXPECT_TRUE(in.set_peers(dt::PeerSet{}, 3'000 * kMs).empty()) << "all listed: nothing to withdraw";
  in.take("h2", {source("2001:2::5", 10'000)}, 0, 3'000 * kMs);
  in.take("h3", {source("2001:2::5", 20'000)}, 0, 3'000 * kMs);
  const std::vector<dt::VerifiedDrop> both = in.set_peers(h1, 4'000 * kMs);
  ASSERT_EQ(both.size(), 1u) << "a source of two peers no longer listed is withdrawn once";
  EXPECT_EQ(both[0].expires_ns, 23'000 * kMs) << "at the later of their expiries";
}

// A reload that takes a peer off the peer list, under --peer-verified all (the default): the
// sources it wrote are handed back as if --peer-verified had dropped it, but those a peer
// still in the cluster holds too, and the expired; the others stay with their peers.
TEST(VerifiedShare, APeerTakenOffThePeerListGivesUpItsSourcesUnderPeerVerifiedAll) {
  dt::VerifiedIntake in(60'000 * kMs);
  in.take("h2", {source("198.18.0.2", 10'000), source("198.18.0.3", 10'000), source("198.18.0.4", 1'000)}, 0, 0);
  in.take("h3", {source("198.18.0.3", 5'000), source("198.18.0.5", 5'000)}, 0, 0);
  ASSERT_EQ(in.held(), 5u);
  const std::vector<dt::VerifiedDrop> gone = in.forget_peers({"h2"}, 2'000 * kMs);
  ASSERT_EQ(gone.size(), 1u) << "198.18.0.3 is h3's too, 198.18.0.4 has expired: h2's one other source goes";
  EXPECT_EQ(dt::key_to_string(gone[0].key), "198.18.0.2");
  EXPECT_EQ(gone[0].expires_ns, 10'000 * kMs) << "until when h2 said: a later verification here is kept";
  EXPECT_EQ(in.held_of("h2"), 0u) << "h2 holds nothing here any more";
  EXPECT_EQ(in.held(), 2u) << "h3's sources stay";
  EXPECT_TRUE(in.forget_peers({"h9"}, 2'000 * kMs).empty()) << "a peer that never told anything: nothing";
  in.take("h2", {source("2001:2::5", 10'000)}, 0, 3'000 * kMs);
  in.take("h4", {source("2001:2::5", 20'000)}, 0, 3'000 * kMs);
  const std::vector<dt::VerifiedDrop> both = in.forget_peers({"h4", "h2"}, 4'000 * kMs);
  ASSERT_EQ(both.size(), 1u) << "a source of two removed peers is withdrawn once";
  EXPECT_EQ(both[0].expires_ns, 23'000 * kMs) << "at the later of their expiries, whatever the order";
  EXPECT_EQ(in.held(), 2u) << "h3's sources still stay";
}

TEST(VerifiedShare, IntakeTakesOnlyThePeersPeerVerifiedLists) {
  dt::VerifiedIntake every(60'000 * kMs);
  EXPECT_TRUE(every.admits("h9", 5)) << "default (--peer-verified all): every member, as before the option";
  EXPECT_EQ(every.counts().refused_peer, 0u);
  dt::PeerSet listed;
  std::string err;
  ASSERT_TRUE(dt::parse_peer_set("h1,lb-2", &listed, &err)) << err;
  dt::VerifiedIntake some(60'000 * kMs, 3, listed);
  EXPECT_TRUE(some.admits("h1", 2));
  EXPECT_TRUE(some.admits("lb-2", 2));
  EXPECT_FALSE(some.admits("h2", 7)) << "a member not listed";
  EXPECT_FALSE(some.admits("h", 1)) << "a prefix of a listed id is another id";
  EXPECT_EQ(some.counts().refused_peer, 8u) << "each source of a refused message counted";
  dt::PeerSet none;
  ASSERT_TRUE(dt::parse_peer_set("none", &none, &err)) << err;
  dt::VerifiedIntake no_one(60'000 * kMs, 3, none);
  EXPECT_FALSE(no_one.admits("h1", 1)) << "--peer-verified none";
  EXPECT_EQ(no_one.counts().refused_peer, 1u);
}

TEST(VerifiedShare, PeerVerifiedTakesAllNoneOrNodeIds) {
  dt::PeerSet p;
  std::string err;
  ASSERT_TRUE(dt::parse_peer_set("h1,bouncer-2", &p, &err)) << err;
  EXPECT_EQ(p.text(), "h1,bouncer-2");
  for (const char *bad : {"", "h1,", ",h1", "h1,,h2", "h/1", "h1 h2"}) {
    EXPECT_FALSE(dt::parse_peer_set(bad, &p, &err)) << "'" << bad << "' was taken";
    EXPECT_NE(err.find("node id"), std::string::npos) << "the error says what is expected: " << err;
  }
  EXPECT_EQ(p.text(), "h1,bouncer-2") << "a refused value leaves the set as it was";
  ASSERT_TRUE(dt::parse_peer_set("none", &p, &err)) << err;
  EXPECT_EQ(p.text(), "none");
  EXPECT_FALSE(p.allows("h1"));
}

}  // namespace
