// test_cluster_links.cpp - liveness from the link (cluster.h: link_liveness()): with keys
// in a full mesh a signed heartbeat every 20 s and one-hit sources waiting for their owner
// until its batch is quiet for 1 s (8 s at most), a peer down at once when its link drops,
// and a heartbeat for a peer that (re)connects; with hubs or without keys the cadence of
// before.
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

dt::ClusterConfig keyed_mesh() {
  dt::ClusterConfig cfg;
  cfg.period_ns = kPeriod;
  cfg.curve_key_file = "/etc/dthrottle/h1.key";
  cfg.peers = {"tcp://198.18.0.2:7700"};
  return cfg;
}

TEST(LinkLiveness, KeysInAFullMeshHeartbeatEveryTwentySeconds) {
  dt::ClusterConfig cfg = keyed_mesh();
  ASSERT_TRUE(dt::link_liveness(cfg));
  EXPECT_EQ(dt::heartbeat_ns(cfg), 20'000 * kMsNs);
  EXPECT_EQ(dt::peer_down_after_ns(cfg), 40'200 * kMsNs) << "a peer whose link stays up but says nothing (hung)";
  const CadenceOptions o = dt::cadence_options(cfg);
  EXPECT_EQ(o.batch_wait_ns, 8'000 * kMsNs);
  EXPECT_EQ(o.batch_quiet_ns, 1'000 * kMsNs);
  EXPECT_EQ(o.tail_ns, 1'000 * kMsNs) << "a lost report is still asked again while it is fresh";
  EXPECT_EQ(dt::tracker_options(cfg).backlog_slack_ns, 220 * kMsNs)
      << "a partition's backlog is judged as with a heartbeat a second, not by the hung-peer limit";
  cfg.down_after_ns = 6200 * kMsNs;  // the user's --down-after: the heartbeat of before
  EXPECT_EQ(dt::heartbeat_ns(cfg), 3'000 * kMsNs);
  EXPECT_EQ(dt::cadence_options(cfg).batch_wait_ns, 0u);
  EXPECT_EQ(dt::cadence_options(cfg).batch_quiet_ns, 0u);
}

TEST(LinkLiveness, NotThroughHubsNorWithoutKeys) {
  dt::ClusterConfig cfg = keyed_mesh();
  cfg.hubs = {"tcp://198.18.0.9:7701"};
  EXPECT_FALSE(dt::link_liveness(cfg)) << "an agent on a hub has no link of its own to each peer";
  EXPECT_EQ(dt::heartbeat_ns(cfg), 5 * kPeriod);
  EXPECT_EQ(dt::peer_down_after_ns(cfg), 11 * kPeriod);
  cfg = keyed_mesh();
  cfg.curve_key_file.clear();
  EXPECT_FALSE(dt::link_liveness(cfg)) << "without keys a link says nothing of who is at its end";
  EXPECT_EQ(dt::heartbeat_ns(cfg), 5 * kPeriod);
  EXPECT_EQ(dt::cadence_options(cfg).batch_wait_ns, 0u);
  EXPECT_EQ(dt::tracker_options(cfg).backlog_slack_ns, 0u);
}

TEST(LinkLiveness, ASprayOfLightSourcesGoesInOneBatchOnceQuiet) {
  // heartbeat 100 periods, batches: 40 periods at most, or 5 without a new entry
  ReportCadence c(CadenceOptions{kPeriod, 100 * kPeriod, 256, 5 * kPeriod, 40 * kPeriod, 5 * kPeriod});
  const std::vector<std::string> peers{"a", "b"};
  ASSERT_TRUE(c.plan(peers, false, kPeriod).broadcast);
  int sent_at[2] = {0, 0}, broadcasts = 0;
  for (int i = 2; i <= 60; i++) {  // a light source for "a" every period for 3 s; one for "b" at period 2
    if (i <= 16) c.queue("a", {ReportEntry{v4(i), 1}}, i * kPeriod);
    if (i == 2) c.queue("b", {ReportEntry{v4(1000), 1}}, i * kPeriod);
    const PeriodPlan p = c.plan(peers, false, i * kPeriod);
    broadcasts += p.broadcast;
    for (const auto &[to, entries] : p.directed) {
      EXPECT_EQ(entries.size(), to == "a" ? 15u : 1u) << "one batch with every light source of the spray";
      EXPECT_EQ(sent_at[to == "b"], 0) << to << " got a second batch at period " << i;
      sent_at[to == "b"] = i;
    }
  }
  EXPECT_EQ(sent_at[0], 21) << "a's batch goes 5 periods after its last entry (period 16)";
  EXPECT_EQ(sent_at[1], 7) << "a lone source waits 5 periods (1 s), as with a heartbeat a second";
  EXPECT_EQ(broadcasts, 0) << "both owners heard from us: the next heartbeat is due at period 101";
}

TEST(LinkLiveness, ASteadyTrickleOfLightSourcesWaitsAtMostTheBatchWait) {
  ReportCadence c(CadenceOptions{kPeriod, 100 * kPeriod, 256, 5 * kPeriod, 40 * kPeriod, 5 * kPeriod});
  c.plan({"a"}, false, kPeriod);
  int first = 0;
  for (int i = 2; i <= 60 && !first; i++) {
    c.queue("a", {ReportEntry{v4(i), 1}}, i * kPeriod);
    if (!c.plan({"a"}, false, i * kPeriod).directed.empty()) first = i;
  }
  EXPECT_EQ(first, 42) << "never quiet: the batch goes 40 periods (8 s) after its first entry";
}

TEST(LinkLiveness, APeerThatConnectsHearsAHeartbeatAtTheNextPeriod) {
  ReportCadence c(CadenceOptions{kPeriod, 50 * kPeriod, 256});
  ASSERT_TRUE(c.plan({}, false, kPeriod).broadcast);
  EXPECT_FALSE(c.plan({}, false, 2 * kPeriod).broadcast);
  c.force_broadcast();
  const PeriodPlan p = c.plan({}, false, 3 * kPeriod);
  EXPECT_TRUE(p.broadcast && p.heartbeat) << "a new subscriber must hear us without waiting 20 s";
  EXPECT_FALSE(c.plan({}, false, 4 * kPeriod).broadcast) << "once";
}

TEST(LinkLiveness, ALinkThatDropsBringsThePeerDownAtOnce) {
  dt::PeerTracker t(dt::TrackerOptions{20'200 * kMsNs, 2000 * kMsNs, true, 64});
  dt::ReportHeader h = header("p");
  h.boot_id = 1;
  h.seq = 1;
  ASSERT_EQ(t.arrive(h, 1000 * kMsNs).verdict, dt::Verdict::Accept);
  dt::LivenessChange ch;
  EXPECT_FALSE(t.link_dropped("stranger", 1200 * kMsNs, &ch)) << "a node id never heard is not tracked";
  EXPECT_EQ(t.peers().count("stranger"), 0u);
  ASSERT_TRUE(t.link_dropped("p", 1500 * kMsNs, &ch));
  EXPECT_EQ(ch.node_id, "p");
  EXPECT_FALSE(ch.up);
  EXPECT_EQ(ch.silent_ns, 500 * kMsNs);
  EXPECT_FALSE(t.peers().at("p").up);
  EXPECT_FALSE(t.link_dropped("p", 1600 * kMsNs, &ch)) << "down already: no second change";
  EXPECT_TRUE(t.check_liveness(1700 * kMsNs).empty());
  h.seq = 2;
  h.sent_unix_ms += 3000;
  const dt::Arrival a = t.arrive(h, 4000 * kMsNs);  // it reconnected and sent its heartbeat
  EXPECT_EQ(a.verdict, dt::Verdict::Accept);
  EXPECT_TRUE(a.came_up);
  EXPECT_EQ(t.peers().at("p").lost, 0u) << "the sequence is untouched by the link";
}

}  // namespace
}  // namespace dt::test
