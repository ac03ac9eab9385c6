// test_peer_tracker.cpp - the peer tracker: once-only application of reports, restarts no
// forged number can fake, liveness, the cap on node ids (age: test_peer_tracker_age.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cluster_core/peer_tracker.h"
#include "report_fixtures.h"

// In dt::test: the fixtures of report_fixtures.h (header, kMsNs).
namespace dt::test {
namespace {

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

// With authenticated messages, a new boot with a higher boot counter is taken at once.
TEST(PeerTracker, RestartIsAcceptedButOldBootIsAReplay) {
  dt::PeerTracker t(dt::TrackerOptions{1000, 0, true, dt::kMinTrackedPeers});
  dt::ReportHeader h = header("b");
  bool up;
  h.seq = 50;
  ASSERT_EQ(t.on_message(h, 1, &up), dt::Verdict::Accept);
  dt::ReportHeader restarted = h;
  restarted.boot_id = h.boot_id + (1ull << 32);  // the next boot counter
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

// --- Restarts ------------------------------------------------------------------

constexpr uint64_t kWall0 = 1700000000000ull;              // the peers' wall clock at our monotonic 0
constexpr uint64_t kDownAfterMs = 1000, kMaxAgeMs = 2000;  // the agent's defaults at 200 ms

dt::TrackerOptions options(bool authenticated, size_t max_peers = dt::kMinTrackedPeers) {
  return dt::TrackerOptions{kDownAfterMs * kMsNs, kMaxAgeMs * kMsNs, authenticated, max_peers};
}

// One boot of a peer: sent at `ms` on its clock (ours + skew_ms), received 1 ms later.
struct Boot {
  dt::ReportHeader h;
  int64_t skew_ms = 0;
  Boot(const char *node, uint64_t boot_id, int64_t skew = 0) : h(header(node)), skew_ms(skew) {
    h.boot_id = boot_id;
    h.seq = 0;
  }
  dt::Arrival send(dt::PeerTracker &t, uint64_t ms) {
    h.seq++;
    h.sent_unix_ms = static_cast<uint64_t>(static_cast<int64_t>(kWall0 + ms) + skew_ms);
    return t.arrive(h, (ms + 1) * kMsNs);
  }
};

// The forged-restart attack, without authentication (--insecure-cluster): a message with the real
// peer's node id, a new boot and a send time far in the future, while the real peer keeps
// reporting. Before, it was taken as a restart and every later report of the real boot
// dropped as a duplicate; now it is refused and the real boot is untouched.
TEST(PeerTrackerRestart, ForgedRestartChangesNothingWithoutAuthentication) {
  dt::PeerTracker t(options(false));
  Boot real("h2", 7);
  for (uint64_t ms = 0; ms < 5000; ms += 200) ASSERT_EQ(real.send(t, ms).verdict, Verdict::Accept) << ms;
  dt::ReportHeader forged = header("h2");
  forged.boot_id = 0xf07e;
  size_t forgeries = 0;
  for (uint64_t ms = 5000; ms < 15000; ms += 200) {
    forged.seq = forgeries + 1;
    forged.sent_unix_ms = forgeries % 2 ? dt::kMaxSentUnixMs : kWall0 + 10 * 365 * 86400000ull;  // ten years on
    const dt::Arrival f = t.arrive(forged, ms * kMsNs);
    forgeries++;
    EXPECT_EQ(f.verdict, Verdict::Rejected) << "forged restart at " << ms << " ms";
    EXPECT_EQ(f.refused, Refusal::NewBoot);
    const dt::Arrival a = real.send(t, ms + 100);
    EXPECT_EQ(a.verdict, Verdict::Accept) << "the real peer's report at " << ms + 100 << " ms";
    EXPECT_FALSE(a.stale) << "and charged: " << a.age_ms << " ms old";
  }
  const dt::PeerState &p = t.peers().at("h2");
  EXPECT_EQ(p.boot_id, 7u) << "the real boot is still the one tracked";
  EXPECT_EQ(p.restarts, 0u);
  EXPECT_EQ(p.boot_rejected, forgeries);
  EXPECT_EQ(p.accepted, 25u + 50u) << "every real report";
  EXPECT_EQ(p.duplicates, 0u);
  EXPECT_EQ(p.stale, 0u);
}

// Without authentication a real restart waits until the old boot has been silent for
// down_after: at most down_after of reports refused, and those are asked again.
TEST(PeerTrackerRestart, WithoutAuthenticationARestartWaitsForDownAfterOfSilence) {
  dt::PeerTracker t(options(false));
  Boot old_boot("h2", 1), new_boot("h2", 2);
  for (uint64_t ms = 0; ms <= 4800; ms += 200) old_boot.send(t, ms);  // last heard at 4801 ms
  size_t refused = 0;
  uint64_t ms = 5000;
  for (; ms < 10000; ms += 200) {
    const dt::Arrival a = new_boot.send(t, ms);
    if (a.verdict == Verdict::Accept) {
      EXPECT_TRUE(a.restarted);
      EXPECT_FALSE(a.stale) << "a restarted peer has no backlog";
      break;
    }
    EXPECT_EQ(a.refused, Refusal::NewBoot);
    refused++;
  }
  EXPECT_EQ(ms, 6000u) << "accepted once the old boot is more than 1 s silent (heard at 4801 ms)";
  EXPECT_LE(refused * 200, kDownAfterMs) << "at most down_after of the new boot's reports refused";
  EXPECT_EQ(t.peers().at("h2").boot_rejected, refused);
  const auto asks = t.resend_requests(6100 * kMsNs, 64);
  ASSERT_EQ(asks.size(), 1u);
  EXPECT_EQ(asks[0].seqs, (std::vector<uint64_t>{1, 2, 3, 4, 5})) << "the refused ones are asked again";
  dt::ReportHeader resent = new_boot.h;
  resent.seq = 2;
  EXPECT_TRUE(t.arrive(resent, 6150 * kMsNs).recovered);
  EXPECT_EQ(t.peers().at("h2").restarts, 1u);
}

// A peer whose clock is stepped back an hour and whose agent then restarts is taken
// after down_after of silence (with or without authentication) and charged again once
// its offset is learned again: never ignored for good.
TEST(PeerTrackerRestart, SteppedBackClockAndRestartIsNotSilenced) {
  for (const bool authenticated : {false, true}) {
    dt::PeerTracker t(options(authenticated));
    Boot before("h2", 1), after("h2", 2, -3600 * 1000);
    for (uint64_t ms = 0; ms <= 4800; ms += 200) before.send(t, ms);
    dt::Arrival a = after.send(t, 5200);
    EXPECT_EQ(a.verdict, Verdict::Rejected)
        << "older than the last report, old boot 0.4 s silent, auth " << authenticated;
    uint64_t ms = 5400, first_charged = 0;
    for (; ms < 30000; ms += 200) {
      a = after.send(t, ms);
      if (ms >= 6000) {
        ASSERT_EQ(a.verdict, Verdict::Accept) << ms << " ms, auth " << authenticated;
      }
      if (a.verdict == Verdict::Accept && !a.stale && !first_charged) first_charged = ms;
    }
    EXPECT_TRUE(a.verdict == Verdict::Accept && !a.stale);
    EXPECT_GT(first_charged, 0u);
    EXPECT_LE(first_charged, 6000 + dt::kRelearnAfterNs / kMsNs + 200) << "charged again after the relearning";
    EXPECT_EQ(t.peers().at("h2").relearned, 1u);
  }
}

// Authenticated: a new boot is taken at once only if its boot counter is higher; a lower
// one is an old boot, refused (test_peer_tracker_streams.cpp: for good).
TEST(PeerTrackerRestart, AuthenticatedNewBootMustBeNewer) {
  dt::PeerTracker t(options(true));
  Boot current("h2", 2ull << 32), older("h2", 1ull << 32, 50), newer("h2", 3ull << 32);
  for (uint64_t ms = 0; ms <= 1000; ms += 200) current.send(t, ms);
  EXPECT_EQ(older.send(t, 1010).refused, Refusal::OldBoot) << "a lower counter, even sent later";
  EXPECT_EQ(current.send(t, 1200).verdict, Verdict::Accept) << "the current boot goes on";
  const dt::Arrival a = newer.send(t, 1210);
  EXPECT_EQ(a.verdict, Verdict::Accept);
  EXPECT_TRUE(a.restarted);
  EXPECT_EQ(current.send(t, 1400).verdict, Verdict::Duplicate) << "the previous boot is retired";
  EXPECT_EQ(t.peers().at("h2").boot_rejected, 1u);
}

// The last kRetiredBoots boots are replays; an older one, with keys, is an old boot: refused.
TEST(PeerTrackerRestart, RetiredBootsAreReplays) {
  dt::PeerTracker t(options(true));
  std::vector<Boot> boots;
  for (uint64_t b = 1; b <= 10; b++) boots.emplace_back("h2", b << 32);  // boot counters 1..10
  for (size_t i = 0; i < boots.size(); i++) ASSERT_TRUE(boots[i].send(t, 100 * i).verdict == Verdict::Accept);
  EXPECT_EQ(t.peers().at("h2").retired_boots.size(), dt::kRetiredBoots);
  EXPECT_EQ(boots[8].send(t, 1000).verdict, Verdict::Duplicate) << "boot 9, retired";
  EXPECT_EQ(boots[1].send(t, 1000).verdict, Verdict::Duplicate) << "boot 2, the oldest remembered";
  boots[0].h.sent_unix_ms = kWall0 + 1000;  // boot 1, forgotten: an older counter, sent now
  boots[0].h.seq++;
  EXPECT_EQ(t.arrive(boots[0].h, 1001 * kMsNs).refused, Refusal::OldBoot);
  EXPECT_EQ(t.peers().at("h2").boot_id, 10ull << 32);
}

// --- The cap on node ids -------------------------------------------------------------

// 10,000 forged node ids, twice: the tracker holds at most max_peers, the configured peers
// stay tracked and every one of their reports is accepted.
TEST(PeerTrackerCap, TenThousandForgedNodeIdsLeaveTheConfiguredPeersTracked) {
  dt::PeerTracker t(options(false, 64));
  std::vector<Boot> real = {{"h1", 1}, {"h2", 2}, {"h3", 3}};
  auto flood = [&](uint64_t ms, int round) {
    size_t refused = 0;
    for (int i = 0; i < 10000; i++) {
      dt::ReportHeader f = header(("forged-" + std::to_string(round) + "-" + std::to_string(i)).c_str());
      f.seq = 1;
      f.sent_unix_ms = kWall0 + ms;
      const dt::Arrival a = t.arrive(f, ms * kMsNs);
      refused += a.verdict == Verdict::Rejected && a.refused == Refusal::TooManyPeers;
    }
    return refused;
  };
  size_t refused = 0;
  for (uint64_t ms = 0; ms < 6000; ms += 200) {
    for (auto &r : real) ASSERT_EQ(r.send(t, ms).verdict, Verdict::Accept) << r.h.node_id << " at " << ms;
    if (ms == 200 || ms == 3000) refused += flood(ms, static_cast<int>(ms));
    t.check_liveness(ms * kMsNs);
    ASSERT_LE(t.peers().size(), 64u);
  }
  EXPECT_EQ(refused, 2 * (10000u - 61u)) << "61 places left by the 3 real peers, each round";
  EXPECT_EQ(t.counters().too_many_peers, refused);
  EXPECT_EQ(t.counters().evicted, 61u) << "the first round's forged ids, down, made room for the second's";
  for (const char *id : {"h1", "h2", "h3"}) {
    ASSERT_TRUE(t.peers().count(id)) << id;
    EXPECT_TRUE(t.peers().at(id).up) << id;
    EXPECT_EQ(t.peers().at(id).accepted, 30u) << id;
  }
}

// When full, the longest-silent peer that is down (or silent past down_after before the
// liveness check) makes room; while every peer is alive, a new node id is refused.
TEST(PeerTrackerCap, EvictsTheLongestSilentDownPeer) {
  dt::PeerTracker t(options(false, 3));
  Boot a("a", 1), b("b", 2), c("c", 3), d("d", 4), e("e", 5);
  a.send(t, 0);
  b.send(t, 500);
  c.send(t, 600);
  dt::Arrival r = d.send(t, 700);
  EXPECT_EQ(r.refused, Refusal::TooManyPeers);
  EXPECT_TRUE(r.evicted.empty());
  c.send(t, 1050);
  r = d.send(t, 1100);  // a last heard at 1 ms: more than 1 s silent; b at 501 ms
  EXPECT_EQ(r.verdict, Verdict::Accept);
  EXPECT_EQ(r.evicted, std::vector<std::string>{"a"});
  EXPECT_EQ(e.send(t, 1200).refused, Refusal::TooManyPeers) << "b is 0.7 s silent: alive";
  r = e.send(t, 1600);
  EXPECT_EQ(r.evicted, std::vector<std::string>{"b"}) << "b: 1.1 s silent";
  EXPECT_EQ(t.peers().size(), 3u);
  t.set_max_peers(2);
  EXPECT_EQ(a.send(t, 1700).refused, Refusal::TooManyPeers) << "c, d, e alive: nobody leaves";
}

// The Cluster's options: a few node ids per configured peer or hub, never fewer than 64.
TEST(PeerTrackerCap, ClusterOptionsScaleWithTheConfiguredPeers) {
  dt::ClusterConfig cfg;
  cfg.period_ns = 200 * kMsNs;
  cfg.peers = {"tcp://198.18.0.2:7700", "tcp://198.18.0.3:7700"};
  dt::TrackerOptions o = dt::tracker_options(cfg);
  EXPECT_EQ(o.max_peers, 64u);
  EXPECT_EQ(o.down_after_ns, 2200 * kMsNs) << "2 heartbeats of 5 periods, and a period";
  EXPECT_EQ(o.max_age_ns, 2000 * kMsNs) << "10 periods";
  EXPECT_FALSE(o.authenticated) << "until every report's signature is verified";
  cfg.peers.assign(30, "tcp://198.18.0.2:7700");
  cfg.hubs = {"tcp://198.18.0.9:7701"};
  EXPECT_EQ(dt::tracker_options(cfg).max_peers, 124u);
}

}  // namespace
}  // namespace dt::test
