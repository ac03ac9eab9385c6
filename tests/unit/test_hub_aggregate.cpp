// test_hub_aggregate.cpp - the summing hub (hub/aggregator.h), its message
// (cluster_core/aggregate_protocol.h) and an agent's intake of it (cluster_core/aggregate_intake.h):
// sums per rule name, source and tag; each report summed once; own hits taken out; one
// hub at a time, failover without charging a report twice.
#include <gtest/gtest.h>

#include "cluster/boot_counter.h"
#include "cluster_core/aggregate_intake.h"
#include "cluster_core/aggregate_protocol.h"
#include "common/address.h"
#include "hub/aggregator.h"

namespace {

constexpr uint64_t kMs = 1000000;

dt_key key_of(const char *addr) {
  dt_key k{};
  EXPECT_TRUE(dt::key_from_string(addr, &k));
  return k;
}

// A body with `rules`, and entries (rule index, address, hits).
dt::ReportBody body_of(std::vector<std::string> rules, std::vector<std::tuple<uint32_t, const char *, uint64_t>> hits,
                       std::vector<dt::TagHit> tags = {}) {
  dt::ReportBody b;
  b.rules = std::move(rules);
  for (auto &[rule, addr, n] : hits) {
    dt::ReportEntry e{key_of(addr), n};
    e.key.rule = rule;
    b.entries.push_back(e);
  }
  b.tags = std::move(tags);
  return b;
}

dt::ReportHeader header_of(const std::string &node, uint64_t boot, uint64_t seq) {
  dt::ReportHeader h;
  h.node_id = node;
  h.boot_id = boot;
  h.seq = seq;
  return h;
}

// The hits of (rule name, address) in a body, 0 if absent.
uint64_t hits_in(const dt::ReportBody &b, const std::string &rule, const char *addr) {
  uint64_t n = 0;
  const dt_key k = key_of(addr);
  for (const auto &e : b.entries)
    if (b.rules[e.key.rule] == rule && memcmp(e.key.addr, k.addr, sizeof k.addr) == 0) n += e.hits;
  return n;
}

uint64_t tag_in(const dt::ReportBody &b, const std::string &tag) {
  for (const auto &t : b.tags)
    if (t.tag == tag) return t.hits;
  return 0;
}

TEST(HubAggregator, SumsBySourceRuleNameAndTagAndSaysWhichReports) {
  dt::HubAggregator agg;
  // Two nodes number their rules differently: sums go by name.
  EXPECT_EQ(agg.add(header_of("h1", 1, 5),
                    body_of({"default", "api"}, {{0, "198.18.0.1", 10}, {1, "198.18.0.1", 3}}, {{"t", 4}})),
            dt::HubAggregator::Added::Summed);
  EXPECT_EQ(agg.add(header_of("h2", 2, 9),
                    body_of({"api", "default"}, {{1, "198.18.0.1", 7}, {0, "198.18.0.2", 1}}, {{"t", 6}})),
            dt::HubAggregator::Added::Summed);
  EXPECT_EQ(agg.add(header_of("h2", 2, 10), body_of({"default"}, {{0, "198.18.0.1", 5}})),
            dt::HubAggregator::Added::Summed);
  // A resend (or replay) of a summed report is not summed again, nor an older seq.
  EXPECT_EQ(agg.add(header_of("h2", 2, 10), body_of({"default"}, {{0, "198.18.0.1", 5}})),
            dt::HubAggregator::Added::Duplicate);
  EXPECT_EQ(agg.add(header_of("h2", 2, 8), body_of({"default"}, {{0, "198.18.0.1", 5}})),
            dt::HubAggregator::Added::Duplicate);
  std::vector<dt::IncludedSeqs> inc;
  const dt::ReportBody sums = agg.take(&inc);
  EXPECT_EQ(hits_in(sums, "default", "198.18.0.1"), 22u);
  EXPECT_EQ(hits_in(sums, "api", "198.18.0.2"), 1u);
  EXPECT_EQ(hits_in(sums, "default", "198.18.0.2"), 0u);
  EXPECT_EQ(hits_in(sums, "api", "198.18.0.1"), 3u);
  EXPECT_EQ(tag_in(sums, "t"), 10u);
  ASSERT_EQ(inc.size(), 2u);
  EXPECT_EQ(inc[0].node_id, "h1");
  EXPECT_EQ(inc[0].seqs, (std::vector<uint64_t>{5}));
  EXPECT_EQ(inc[1].node_id, "h2");
  EXPECT_EQ(inc[1].boot_id, 2u);
  EXPECT_EQ(inc[1].seqs, (std::vector<uint64_t>{9, 10}));
  // The next period starts empty; a node's new boot starts its seqs again.
  EXPECT_EQ(agg.add(header_of("h2", 3, 1), body_of({"default"}, {{0, "198.18.0.1", 2}})),
            dt::HubAggregator::Added::Summed);
  const dt::ReportBody next = agg.take(&inc);
  EXPECT_EQ(hits_in(next, "default", "198.18.0.1"), 2u);
  ASSERT_EQ(inc.size(), 1u);
  EXPECT_EQ(inc[0].boot_id, 3u);
}

// Boots only move forward (boot counters, peer_protocol.h): a replayed report of an older
// boot cannot reset a node's seqs at the hub, so the newer boot's reports are not summed twice.
TEST(HubAggregator, AnOlderBootIsAReplay) {
  dt::HubAggregator agg;
  const uint64_t old_boot = dt::make_boot_id(6, 1), boot = dt::make_boot_id(7, 1);
  const dt::ReportBody b = body_of({"default"}, {{0, "198.18.0.1", 10}});
  std::vector<dt::IncludedSeqs> inc;
  EXPECT_EQ(agg.add(header_of("h2", boot, 5), b), dt::HubAggregator::Added::Summed);
  agg.take(&inc);
  EXPECT_EQ(agg.add(header_of("h2", old_boot, 9), b), dt::HubAggregator::Added::Duplicate) << "an old boot";
  agg.take(&inc);
  EXPECT_EQ(agg.add(header_of("h2", boot, 5), b), dt::HubAggregator::Added::Duplicate) << "still summed once";
  EXPECT_EQ(agg.add(header_of("h2", dt::make_boot_id(8, 1), 1), b), dt::HubAggregator::Added::Summed)
      << "a newer boot: a restart";
}

TEST(HubAggregator, BoundsTheNodesItTracks) {
  dt::HubAggregator agg(2);
  EXPECT_EQ(agg.add(header_of("a", 1, 1), body_of({"default"}, {})), dt::HubAggregator::Added::Summed);
  EXPECT_EQ(agg.add(header_of("b", 1, 1), body_of({"default"}, {})), dt::HubAggregator::Added::Summed);
  EXPECT_EQ(agg.add(header_of("c", 1, 1), body_of({"default"}, {})), dt::HubAggregator::Added::TooManyNodes);
}

TEST(AggregateProtocol, RoundTripsInPartsEachWithTheWholeList) {
  dt::ReportBody sums;
  sums.rules = {"default"};
  for (uint32_t i = 0; i < 30000; i++) {
    dt::ReportEntry e{};
    e.key.addr[10] = e.key.addr[11] = 0xff;
    e.key.addr[12] = 198, e.key.addr[13] = 18, e.key.addr[14] = static_cast<uint8_t>(i >> 8),
    e.key.addr[15] = static_cast<uint8_t>(i);
    e.hits = 1 + i % 3;
    sums.entries.push_back(e);
  }
  const std::vector<dt::IncludedSeqs> inc = {{"h1", 11, {4, 5, 9}}, {"h2", 12, {1}}};
  const auto msgs = dt::encode_aggregate("hub1", inc, header_of("hub1", 77, 0), 100, sums);
  ASSERT_GT(msgs.size(), 1u) << "30,000 entries do not fit one message";
  uint64_t total = 0, want = 0;
  for (const auto &e : sums.entries) want += e.hits;
  for (size_t i = 0; i < msgs.size(); i++) {
    EXPECT_LE(msgs[i].size(), dt::kMaxMessageBytes);
    ASSERT_TRUE(dt::is_aggregate_message(msgs[i].data(), msgs[i].size()));
    dt::AggregateMessage m;
    ASSERT_EQ(dt::decode_aggregate(msgs[i].data(), msgs[i].size(), &m), dt::DecodeError::None);
    EXPECT_EQ(m.hub_id, "hub1");
    EXPECT_EQ(m.header.seq, 100 + i);
    EXPECT_EQ(m.header.part, i);
    ASSERT_EQ(m.included.size(), 2u);
    EXPECT_EQ(m.included[0].seqs, (std::vector<uint64_t>{4, 5, 9}));
    EXPECT_EQ(m.included[1].node_id, "h2");
    for (const auto &e : m.body.entries) total += e.hits;
  }
  EXPECT_EQ(total, want);
  // Truncated or with a byte too many: refused.
  dt::AggregateMessage m;
  EXPECT_NE(dt::decode_aggregate(msgs[0].data(), msgs[0].size() - 1, &m), dt::DecodeError::None);
  const std::string longer = msgs[0] + "x";
  EXPECT_NE(dt::decode_aggregate(longer.data(), longer.size(), &m), dt::DecodeError::None);
  // A report is not an aggregate.
  const std::string report = dt::encode_report(header_of("h1", 1, 0), 1, sums, 1000)[0];
  EXPECT_FALSE(dt::is_aggregate_message(report.data(), report.size()));
}

// An aggregate message as the hub would send it (one part).
dt::AggregateMessage aggregate(const std::string &hub, uint64_t epoch, std::vector<dt::IncludedSeqs> inc,
                               dt::ReportBody sums) {
  dt::AggregateMessage m;
  m.hub_id = hub;
  m.header = header_of(hub, 1, epoch);
  m.header.epoch = epoch;
  m.included = std::move(inc);
  m.body = std::move(sums);
  return m;
}

TEST(AggregateIntake, DebitsTheSumsLessOwnHitsOfTheNamedSeqs) {
  dt::AggregateIntake in(1000 * kMs, 2000 * kMs);
  in.set_own("h1", 42);
  in.remember_own(5, body_of({"default"}, {{0, "198.18.0.1", 10}}, {{"t", 2}}), 0);
  in.remember_own(6, body_of({"default"}, {{0, "198.18.0.1", 4}, {0, "198.18.0.9", 3}}), 0);
  // The hub summed our seq 5 (not 6 yet) and h2's 7 and 8.
  bool switched = false;
  std::string from;
  auto out = in.on_message(aggregate("hub1", 1, {{"h1", 42, {5}}, {"h2", 9, {7, 8}}},
                                     body_of({"default"}, {{0, "198.18.0.1", 25}, {0, "198.18.0.2", 8}}, {{"t", 5}})),
                           100 * kMs, &switched, &from);
  EXPECT_TRUE(switched);
  EXPECT_EQ(from, "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(hits_in(out[0], "default", "198.18.0.1"), 15u) << "25 summed, 10 of them ours";
  EXPECT_EQ(hits_in(out[0], "default", "198.18.0.2"), 8u);
  EXPECT_EQ(tag_in(out[0], "t"), 3u);
  EXPECT_EQ(in.counters().own_hits_subtracted, 12u);
  EXPECT_EQ(in.own_held(), 1u) << "seq 5 used once and forgotten, 6 still held";
  // Next period: our 6 (all ours: nothing of 198.18.0.9 is left to debit).
  out = in.on_message(
      aggregate("hub1", 2, {{"h1", 42, {6}}}, body_of({"default"}, {{0, "198.18.0.1", 4}, {0, "198.18.0.9", 3}})),
      300 * kMs, &switched, &from);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].entries.empty());
}

// The agents' check: an aggregate naming an older boot of a node than the last applied is
// an overlap (a replay), so it cannot reset that node's seqs for the next one either.
TEST(AggregateIntake, AnOlderBootIsAnOverlap) {
  dt::AggregateIntake in(1000 * kMs, 2000 * kMs);
  in.set_own("h1", 42);
  bool switched = false;
  std::string from;
  const uint64_t old_boot = dt::make_boot_id(6, 1), boot = dt::make_boot_id(7, 1);
  const dt::ReportBody sums = body_of({"default"}, {{0, "198.18.0.1", 10}});
  EXPECT_EQ(in.on_message(aggregate("hub1", 1, {{"h2", boot, {5}}}, sums), 100 * kMs, &switched, &from).size(), 1u);
  EXPECT_TRUE(in.on_message(aggregate("hub1", 2, {{"h2", old_boot, {9}}}, sums), 300 * kMs, &switched, &from).empty())
      << "an old boot of h2";
  EXPECT_TRUE(in.on_message(aggregate("hub1", 3, {{"h2", boot, {5}}}, sums), 500 * kMs, &switched, &from).empty())
      << "h2's seq 5 again";
  EXPECT_EQ(in.counters().overlaps, 2u);
}

TEST(AggregateIntake, RefusesSumsOfOurReportsItNoLongerHolds) {
  dt::AggregateIntake in(1000 * kMs, 2000 * kMs);
  in.set_own("h1", 42);
  in.remember_own(5, body_of({"default"}, {{0, "198.18.0.1", 10}}), 0);
  bool switched = false;
  std::string from;
  // Seq 5 expired (kept 2 s): the sums would charge our own clients again.
  auto out = in.on_message(aggregate("hub1", 1, {{"h1", 42, {5}}}, body_of({"default"}, {{0, "198.18.0.1", 10}})),
                           3000 * kMs, &switched, &from);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(in.counters().own_missing, 1u);
}

TEST(AggregateIntake, OneHubAtATimeFailoverReplaysWithoutChargingTwice) {
  dt::AggregateIntake in(1000 * kMs, 4000 * kMs);
  in.set_own("h1", 42);
  bool switched = false;
  std::string from;
  auto sums = [](uint64_t n) { return body_of({"default"}, {{0, "198.18.0.1", n}}); };
  // Both hubs sum h2's seqs 1 and 2; hub1 is heard first and becomes the active one.
  auto a1 = in.on_message(aggregate("hub1", 1, {{"h2", 9, {1}}}, sums(10)), 100 * kMs, &switched, &from);
  auto b1 = in.on_message(aggregate("hub2", 1, {{"h2", 9, {1}}}, sums(10)), 110 * kMs, &switched, &from);
  auto a2 = in.on_message(aggregate("hub1", 2, {{"h2", 9, {2}}}, sums(20)), 300 * kMs, &switched, &from);
  auto b2 = in.on_message(aggregate("hub2", 2, {{"h2", 9, {2}}}, sums(20)), 310 * kMs, &switched, &from);
  EXPECT_EQ(a1.size() + a2.size(), 2u);
  EXPECT_TRUE(b1.empty() && b2.empty()) << "the standby hub's sums are kept, not debited";
  EXPECT_EQ(in.active_hub(), "hub1");
  // hub1 dies before summing seq 3 and 4; hub2 sums them, unapplied while hub1 might be alive.
  auto b3 = in.on_message(aggregate("hub2", 3, {{"h2", 9, {3}}}, sums(30)), 500 * kMs, &switched, &from);
  EXPECT_TRUE(b3.empty());
  EXPECT_FALSE(switched);
  // hub1 silent for more than down_after (1 s): hub2's next sums make it active, and its kept
  // sums are replayed: seq 1 and 2 (already charged through hub1) refused, 3 then 4 debited.
  auto b4 = in.on_message(aggregate("hub2", 4, {{"h2", 9, {4}}}, sums(40)), 1400 * kMs, &switched, &from);
  EXPECT_TRUE(switched);
  EXPECT_EQ(from, "hub1");
  EXPECT_EQ(in.active_hub(), "hub2");
  uint64_t debited = 0;
  for (const auto &b : b4) debited += hits_in(b, "default", "198.18.0.1");
  EXPECT_EQ(debited, 70u) << "seq 3 (30) and 4 (40), never 1 or 2 again";
  EXPECT_EQ(in.counters().overlaps, 2u);
  EXPECT_EQ(in.counters().failovers, 1u);
  // hub1 comes back: hub2 stays active, hub1's sums (some of the same seqs) are not debited.
  auto a5 = in.on_message(aggregate("hub1", 3, {{"h2", 9, {4}}}, sums(40)), 1500 * kMs, &switched, &from);
  EXPECT_TRUE(a5.empty());
  EXPECT_EQ(in.active_hub(), "hub2");
}

TEST(AggregateIntake, PartsOfOneAggregateShareTheVerdictAndTheOwnHits) {
  dt::AggregateIntake in(1000 * kMs, 2000 * kMs);
  in.set_own("h1", 42);
  in.remember_own(5, body_of({"default"}, {{0, "198.18.0.1", 10}, {0, "198.18.0.2", 1}}), 0);
  bool switched = false;
  std::string from;
  auto p0 = aggregate("hub1", 1, {{"h1", 42, {5}}, {"h2", 9, {3}}}, body_of({"default"}, {{0, "198.18.0.1", 12}}));
  auto p1 = aggregate("hub1", 1, {{"h1", 42, {5}}, {"h2", 9, {3}}}, body_of({"default"}, {{0, "198.18.0.2", 6}}));
  p1.header.part = 1;
  auto o0 = in.on_message(p0, 100 * kMs, &switched, &from);
  auto o1 = in.on_message(p1, 101 * kMs, &switched, &from);
  ASSERT_EQ(o0.size(), 1u);
  ASSERT_EQ(o1.size(), 1u) << "the second part is not an overlap of the first";
  EXPECT_EQ(hits_in(o0[0], "default", "198.18.0.1"), 2u);
  EXPECT_EQ(hits_in(o1[0], "default", "198.18.0.2"), 5u);
}

}  // namespace

namespace {

// A summing hub sums plain reports only; everything else passes as it is, or not at all.
TEST(HubRoute, SumsPlainReportsRelaysTheRestUnchanged) {
  dt::ReportBody b = body_of({"default"}, {{0, "198.18.0.1", 3}});
  const std::string plain = dt::encode_report(header_of("h1", 1, 0), 1, b)[0];
  EXPECT_EQ(dt::route_message(plain.data(), plain.size()), dt::HubRoute::Sum);
  std::string signed_report = plain;
  signed_report[dt::kFlagsOffset] |= dt::kFlagSigned;
  EXPECT_EQ(dt::route_message(signed_report.data(), signed_report.size()), dt::HubRoute::Sum);
  b.factors = {{false, "default", 500000}};
  const std::string factors = dt::encode_report(header_of("h1", 1, 0), 2, b)[0];
  EXPECT_EQ(dt::route_message(factors.data(), factors.size()), dt::HubRoute::Relay) << "a factor is a node's own";
  const std::string resend = dt::encode_resend_request(header_of("h1", 1, 0), {{"h2", 7, {3}}});
  EXPECT_EQ(dt::route_message(resend.data(), resend.size()), dt::HubRoute::Relay);
  std::string bans = plain;  // a flag the hub does not know (bans: bit 3; relayed reports: bit 5)
  for (uint8_t bit : {8, 32}) {
    bans[dt::kFlagsOffset] = static_cast<char>(bit);
    EXPECT_EQ(dt::route_message(bans.data(), bans.size()), dt::HubRoute::Relay) << "flag " << int(bit);
  }
  const std::string directed = "DTO\x02h2" + plain;  // another message type
  EXPECT_EQ(dt::route_message(directed.data(), directed.size()), dt::HubRoute::Relay);
  const std::string agg = dt::encode_aggregate("hub1", {}, header_of("hub1", 1, 0), 1, {})[0];
  EXPECT_EQ(dt::route_message(agg.data(), agg.size()), dt::HubRoute::Drop);
}

}  // namespace
