// test_peer_tracker_age.cpp - the peer tracker's report age: clock skew, a partition's
// backlog, drift, clock steps, send times at the limits; and the missing seqs it asks again.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cluster_core/peer_tracker.h"
#include "report_fixtures.h"

// In dt::test: the fixtures of report_fixtures.h (header, kMsNs).
namespace dt::test {
namespace {

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

// Send times are the sender's numbers: 0, UINT64_MAX, far future and far past neither
// overflow nor disturb a boot. Beyond kMaxSentUnixMs a message is refused outright.
TEST(PeerTrackerAge, SendTimesAtTheLimitsNeverOverflow) {
  dt::PeerTracker t(dt::TrackerOptions{1000 * kMsNs, 1000 * kMsNs, true, 8});
  dt::ReportHeader h = header("b");
  h.seq = 1;
  for (const uint64_t absurd : {UINT64_MAX, dt::kMaxSentUnixMs + 1, uint64_t{1} << 63}) {
    h.sent_unix_ms = absurd;
    const dt::Arrival a = t.arrive(h, 500 * kMsNs);
    EXPECT_EQ(a.verdict, Verdict::Rejected) << absurd;
    EXPECT_EQ(a.refused, Refusal::AbsurdTime) << absurd;
  }
  EXPECT_TRUE(t.peers().empty()) << "an absurd message creates no state";
  EXPECT_EQ(t.counters().absurd_time, 3u);
  h.sent_unix_ms = 0;  // 1970: far past, but a number a clock can hold
  dt::Arrival a = t.arrive(h, 1000 * kMsNs);
  ASSERT_EQ(a.verdict, Verdict::Accept);
  EXPECT_EQ(a.age_ms, 0u) << "the first message sets the offset";
  h.seq = 2;
  h.sent_unix_ms = dt::kMaxSentUnixMs;  // 2109: far future, the limit itself
  a = t.arrive(h, 1200 * kMsNs);
  ASSERT_EQ(a.verdict, Verdict::Accept);
  EXPECT_EQ(a.age_ms, 0u) << "a clock stepped forward is taken at once";
  h.seq = 3;
  h.sent_unix_ms = 0;  // and back to 1970: 2^42 ms older than the fastest
  a = t.arrive(h, 1400 * kMsNs);
  EXPECT_EQ(a.age_ms, dt::kMaxSentUnixMs + 199) << "exact, no wrap (200 ms later, less 0.2 ms of creep)";
  EXPECT_TRUE(a.stale);
  h.seq = 4;
  h.sent_unix_ms = UINT64_MAX;  // the same boot, an absurd time: refused, nothing moves
  EXPECT_EQ(t.arrive(h, 1600 * kMsNs).refused, Refusal::AbsurdTime);
  EXPECT_EQ(t.peers().at("b").last_seq, 3u);
  // Our own clock at its limit too.
  dt::ReportHeader c = header("c");
  c.seq = 1;
  c.sent_unix_ms = dt::kMaxSentUnixMs;
  EXPECT_EQ(t.arrive(c, UINT64_MAX).verdict, Verdict::Accept);
  c.seq = 2;
  c.sent_unix_ms = 0;
  a = t.arrive(c, UINT64_MAX);
  EXPECT_EQ(a.age_ms, dt::kMaxSentUnixMs);
  EXPECT_TRUE(a.stale);
}

// A new boot with an absurd send time, authenticated or not, leaves the boot in force.
TEST(PeerTrackerAge, AbsurdNewBootLeavesTheBootInForce) {
  for (const bool authenticated : {false, true}) {
    dt::PeerTracker t(dt::TrackerOptions{1000 * kMsNs, 1000 * kMsNs, authenticated, 8});
    dt::ReportHeader h = header("b");
    h.seq = 1;
    ASSERT_EQ(t.arrive(h, 1000 * kMsNs).verdict, Verdict::Accept);
    dt::ReportHeader forged = h;
    forged.boot_id = 0xf07e;
    forged.sent_unix_ms = UINT64_MAX;
    EXPECT_EQ(t.arrive(forged, 3000 * kMsNs).refused, Refusal::AbsurdTime) << "even after a silence";
    h.seq = 2;
    h.sent_unix_ms += 2200;
    const dt::Arrival a = t.arrive(h, 3200 * kMsNs);
    EXPECT_EQ(a.verdict, Verdict::Accept) << "auth " << authenticated;
    EXPECT_EQ(t.peers().at("b").boot_id, h.boot_id);
    EXPECT_EQ(t.peers().at("b").restarts, 0u);
  }
}

}  // namespace
}  // namespace dt::test
