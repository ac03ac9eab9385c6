// test_report_cadence.cpp - when an agent sends what (cluster_core/report_cadence.h): no
// chatter in quiet periods, heartbeats the peer tracker's liveness agrees with, a lost
// report still noticed in time, and directed batches that wait only for one-hit sources.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cluster_core/peer_tracker.h"
#include "cluster_core/report_cadence.h"
#include "report_fixtures.h"

// In dt::test: the fixtures of report_fixtures.h (v4: source number i as a key, kMsNs).
namespace dt::test {
namespace {

constexpr uint64_t kPeriod = 200 * kMsNs;

std::vector<ReportEntry> one_hit(uint32_t first, uint32_t n) {
  std::vector<ReportEntry> out;
  for (uint32_t i = 0; i < n; i++) out.push_back(ReportEntry{v4(first + i), 1});
  return out;
}

ReportCadence cadence() { return ReportCadence(CadenceOptions{kPeriod, 5 * kPeriod, 256}); }

// Periods (1-based, from t = period) in which a broadcast went out, for `content` per period.
std::vector<int> broadcasts(ReportCadence &c, const std::vector<bool> &content) {
  std::vector<int> out;
  for (size_t i = 0; i < content.size(); i++)
    if (c.plan({}, content[i], (i + 1) * kPeriod).broadcast) out.push_back(static_cast<int>(i + 1));
  return out;
}

TEST(ReportCadence, QuietPeriodsSendOnlyAHeartbeatEveryFivePeriods) {
  ReportCadence c = cadence();
  // The first period always goes (peers learn we are up), then one heartbeat per second.
  EXPECT_EQ(broadcasts(c, std::vector<bool>(16, false)), (std::vector<int>{1, 6, 11, 16}))
      << "an idle agent must send one empty report every 5 periods, not one every period";
}

TEST(ReportCadence, ReportsWithSomethingToSayGoEveryPeriodAndAreFollowedByOneWithinAHeartbeat) {
  ReportCadence c = cadence();
  std::vector<bool> content(14, false);
  content[0] = content[1] = content[2] = true;  // three periods with hits, then quiet
  // Periods 1-3 carry hits; the next message to everyone comes 5 periods after the last
  // (a lost period-3 report shows as a gap then, while it can still be asked again).
  EXPECT_EQ(broadcasts(c, content), (std::vector<int>{1, 2, 3, 8, 13}));
}

TEST(ReportCadence, HeartbeatIsEmptyAndFlaggedAsSuch) {
  ReportCadence c = cadence();
  PeriodPlan p = c.plan({}, true, kPeriod);
  EXPECT_TRUE(p.broadcast);
  EXPECT_FALSE(p.heartbeat) << "a report with hits is not a heartbeat";
  for (int i = 2; i <= 5; i++) EXPECT_FALSE(c.plan({}, false, i * kPeriod).broadcast) << "period " << i;
  p = c.plan({}, false, 6 * kPeriod);
  EXPECT_TRUE(p.broadcast && p.heartbeat);
}

// The tracker on the other side, with the default --down-after (2 heartbeats and a period),
// never declares a quiet peer down, with ticks up to 40 ms late; and does once it stops.
TEST(ReportCadence, TrackerKeepsAQuietPeerUpAndNoticesItsDeath) {
  dt::ClusterConfig cfg;
  cfg.period_ns = kPeriod;
  ASSERT_EQ(dt::heartbeat_ns(cfg), 5 * kPeriod);
  ASSERT_EQ(dt::peer_down_after_ns(cfg), 11 * kPeriod);
  dt::PeerTracker tracker(dt::TrackerOptions{dt::peer_down_after_ns(cfg), 10 * kPeriod, true, 64});
  ReportCadence c(CadenceOptions{kPeriod, dt::heartbeat_ns(cfg), 256});
  dt::ReportHeader h;
  h.node_id = "quiet";
  h.boot_id = 7;
  uint64_t now = 0, seq = 1, sent = 0;
  for (int i = 1; i <= 300; i++) {                    // 60 s
    now = i * kPeriod + (i * 7919 % 5) * 10 * kMsNs;  // late by 0-40 ms
    if (c.plan({}, false, now).broadcast) {
      h.seq = seq++;
      h.sent_unix_ms = 1'700'000'000'000ull + now / kMsNs;
      ASSERT_EQ(tracker.arrive(h, now).verdict, dt::Verdict::Accept);
      sent++;
    }
    ASSERT_TRUE(tracker.check_liveness(now).empty()) << "a peer with nothing to say went down at period " << i;
  }
  EXPECT_LE(sent, 62u) << "60 s idle: about one heartbeat a second";
  const uint64_t last = now;
  uint64_t down_at = 0;
  for (int i = 1; i <= 20 && !down_at; i++)
    if (!tracker.check_liveness(last + i * kPeriod).empty()) down_at = i * kPeriod;
  EXPECT_GT(down_at, 0u) << "a peer that stopped was never declared down";
  EXPECT_LE(down_at, dt::peer_down_after_ns(cfg) + 2 * kPeriod);
}

TEST(ReportCadence, ShortDownAfterShortensTheHeartbeat) {
  dt::ClusterConfig cfg;
  cfg.period_ns = kPeriod;
  cfg.down_after_ns = 1000 * kMsNs;
  EXPECT_EQ(dt::heartbeat_ns(cfg), 400 * kMsNs) << "two heartbeats and a period must fit in --down-after";
  EXPECT_EQ(dt::peer_down_after_ns(cfg), 1000 * kMsNs);
  cfg.down_after_ns = 100 * kMsNs;
  EXPECT_EQ(dt::heartbeat_ns(cfg), kPeriod) << "never more often than every period";
  cfg.down_after_ns = 6200 * kMsNs;
  EXPECT_EQ(dt::heartbeat_ns(cfg), 3000 * kMsNs) << "a longer --down-after: a quieter cluster";
  EXPECT_EQ(dt::cadence_options(cfg).tail_ns, 1000 * kMsNs)
      << "after a report with hits, the next within half the report max age: a lost one is asked again in time";
}

TEST(ReportCadence, TheTailComesWithinItsOwnTimeWhateverTheHeartbeat) {
  ReportCadence c(CadenceOptions{kPeriod, 15 * kPeriod, 256, 5 * kPeriod});
  std::vector<bool> content(22, false);
  content[0] = true;
  EXPECT_EQ(broadcasts(c, content), (std::vector<int>{1, 6, 21}))
      << "a report with hits, its tail 5 periods later, then heartbeats every 15";
}

TEST(ReportCadence, OneHitSourcesWaitForTheirOwnerUntilTheHeartbeat) {
  ReportCadence c = cadence();
  const std::vector<std::string> peers{"a", "b"};
  ASSERT_TRUE(c.plan(peers, false, kPeriod).broadcast);  // the first period: everyone hears us
  for (int i = 2; i <= 5; i++) {
    c.queue("a", one_hit(100 * i, 3), i * kPeriod);
    const PeriodPlan p = c.plan(peers, false, i * kPeriod);
    EXPECT_TRUE(p.directed.empty()) << "one-hit sources went at period " << i;
    EXPECT_FALSE(p.broadcast);
  }
  EXPECT_EQ(c.waiting(), 12u);
  // Period 6: the batch is due (a heartbeat old, and "a" would not hear from us in time);
  // "b" gets a heartbeat: a broadcast.
  const PeriodPlan p = c.plan(peers, false, 6 * kPeriod);
  ASSERT_EQ(p.directed.size(), 1u);
  EXPECT_EQ(p.directed[0].first, "a");
  EXPECT_EQ(p.directed[0].second.size(), 12u);
  EXPECT_TRUE(p.broadcast && p.heartbeat);
  EXPECT_EQ(c.waiting(), 0u);
}

TEST(ReportCadence, MessagesToEveryOwnerAreHeartbeatEnough) {
  ReportCadence c = cadence();
  const std::vector<std::string> peers{"a", "b"};
  ASSERT_TRUE(c.plan(peers, false, kPeriod).broadcast);
  int broadcast = 0, directed = 0;
  for (int i = 2; i <= 26; i++) {  // light sources for both owners every period, 5 s
    c.queue("a", one_hit(1000 + 10 * i, 2), i * kPeriod);
    c.queue("b", one_hit(5000 + 10 * i, 2), i * kPeriod);
    const PeriodPlan p = c.plan(peers, false, i * kPeriod);
    broadcast += p.broadcast;
    directed += static_cast<int>(p.directed.size());
  }
  EXPECT_EQ(broadcast, 0) << "every peer heard from us through its batch: no heartbeat needed";
  EXPECT_EQ(directed, 10) << "one batch per owner per heartbeat (5 s, 2 owners)";
}

TEST(ReportCadence, UrgentEntriesTakeTheirBatchAtOnce) {
  ReportCadence c = cadence();
  const std::vector<std::string> peers{"a"};
  c.plan(peers, false, kPeriod);
  c.queue("a", one_hit(1, 4), 2 * kPeriod);
  EXPECT_TRUE(c.plan(peers, false, 2 * kPeriod).directed.empty());
  c.queue("a", {ReportEntry{v4(50), 2}}, 3 * kPeriod);  // 2 hits in a period: not a one-off
  PeriodPlan p = c.plan(peers, false, 3 * kPeriod);
  ASSERT_EQ(p.directed.size(), 1u);
  EXPECT_EQ(p.directed[0].second.size(), 5u) << "the waiting one-hit sources go with it";
  c.queue("a", one_hit(7, 1), 4 * kPeriod);
  EXPECT_TRUE(c.plan(peers, false, 4 * kPeriod).directed.empty());
  c.queue("a", one_hit(7, 1), 5 * kPeriod);  // served again while it waits: a repeat
  p = c.plan(peers, false, 5 * kPeriod);
  ASSERT_EQ(p.directed.size(), 1u);
  ASSERT_EQ(p.directed[0].second.size(), 1u);
  EXPECT_EQ(p.directed[0].second[0].hits, 2u) << "both periods' hits, in one entry";
}

TEST(ReportCadence, AFullBatchGoesAtOnce) {
  ReportCadence c(CadenceOptions{kPeriod, 5 * kPeriod, 100});
  c.plan({"a"}, false, kPeriod);
  c.queue("a", one_hit(0, 99), 2 * kPeriod);
  EXPECT_TRUE(c.plan({"a"}, false, 2 * kPeriod).directed.empty());
  c.queue("a", one_hit(1000, 1), 3 * kPeriod);
  EXPECT_EQ(c.plan({"a"}, false, 3 * kPeriod).directed.size(), 1u);
}

TEST(ReportCadence, TakeAllEmptiesTheBatchesForEveryone) {
  ReportCadence c = cadence();
  c.queue("a", one_hit(0, 3), kPeriod);
  c.queue("b", one_hit(10, 2), kPeriod);
  EXPECT_EQ(c.take_all().size(), 5u);
  EXPECT_EQ(c.waiting(), 0u);
}

}  // namespace
}  // namespace dt::test
