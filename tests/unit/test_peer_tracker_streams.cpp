// test_peer_tracker_streams.cpp - one replay rule for every kind of message (peer_tracker.h):
// a node's streams (reports to everyone, reports to us alone, bans, resend requests) each
// applied once, under one boot that only moves forward (boot counters, boot_counter.h),
// judged by one clock offset.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cluster/boot_counter.h"
#include "cluster_core/peer_tracker.h"
#include "report_fixtures.h"
#include "temp_dir.h"

namespace {

using dt::Refusal;
using dt::Stream;
using dt::Verdict;
using dt::test::kMsNs;

constexpr uint64_t kWall0 = 1700000000000ull;  // the peer's wall clock at our monotonic 0
constexpr uint64_t kDownAfterMs = 1000, kMaxAgeMs = 2000;

dt::TrackerOptions options(bool authenticated) {
  return dt::TrackerOptions{kDownAfterMs * kMsNs, kMaxAgeMs * kMsNs, authenticated, dt::kMinTrackedPeers};
}

// A message of node h2, boot (counter, random bits), in stream `s` to `to`, seq `seq`,
// sent at our `ms` (received 1 ms later).
struct Msg {
  dt::ReportHeader h;
  Msg(uint32_t counter, uint64_t seq, Stream s = Stream::Reports, const char *to = "") : h(dt::test::header("h2")) {
    h.boot_id = dt::make_boot_id(counter, 0xabcd);
    h.seq = seq;
    h.stream = s;
    h.to = to;
  }
  dt::Arrival at(dt::PeerTracker &t, uint64_t ms, uint64_t sent_ms) {
    h.sent_unix_ms = kWall0 + sent_ms;
    return t.arrive(h, (ms + 1) * kMsNs);
  }
  dt::Arrival at(dt::PeerTracker &t, uint64_t ms) { return at(t, ms, ms); }
};

// A directed message with a large seq once moved nothing of the reports (its own tracker);
// now both are streams of one tracker: each applied once, neither moves the other.
TEST(PeerTrackerStreams, EachStreamIsAppliedOnceAndMovesNoOther) {
  dt::PeerTracker t(options(true));
  ASSERT_EQ(Msg(5, 1).at(t, 0).verdict, Verdict::Accept);
  ASSERT_EQ(Msg(5, 1000, Stream::Reports, "h1").at(t, 10).verdict, Verdict::Accept) << "to us alone, seq 1000";
  EXPECT_EQ(Msg(5, 2).at(t, 20).verdict, Verdict::Accept) << "the reports' seq 2 is not a replay of anything";
  EXPECT_FALSE(Msg(5, 2).at(t, 20).gap);
  EXPECT_EQ(Msg(5, 1000, Stream::Reports, "h1").at(t, 30).verdict, Verdict::Duplicate) << "the directed one again";
  EXPECT_EQ(Msg(5, 999, Stream::Reports, "h1").at(t, 30).verdict, Verdict::Duplicate) << "an older directed one";
  EXPECT_EQ(Msg(5, 1, Stream::Bans).at(t, 40).verdict, Verdict::Accept);
  EXPECT_EQ(Msg(5, 1, Stream::Bans).at(t, 50).verdict, Verdict::Duplicate) << "a recorded bans message replayed";
  EXPECT_EQ(Msg(5, 1, Stream::Resend).at(t, 60).verdict, Verdict::Accept);
  EXPECT_EQ(Msg(5, 1, Stream::Resend).at(t, 70).verdict, Verdict::Duplicate) << "a resend request replayed";
  const dt::PeerState &p = t.peers().at("h2");
  EXPECT_EQ(p.last_seq, 2u);
  EXPECT_EQ(p.lost, 0u) << "no stream's seqs count as another's gap";
  EXPECT_TRUE(p.missing.empty());
  EXPECT_EQ(t.arrive(Msg(5, 0, Stream::Bans).h, 80 * kMsNs).refused, Refusal::NoSeq) << "every message has a seq";
}

// The clock offset is the peer's, learned from all its streams: a message recorded long
// ago is old by it, whichever stream it is replayed into (a directed tracker of its own
// learned its offset from the first message it saw: the replay itself).
TEST(PeerTrackerStreams, AReplayIntoAnotherStreamIsJudgedByThePeersClock) {
  dt::PeerTracker t(options(true));
  for (uint64_t ms = 0; ms <= 10000; ms += 200) ASSERT_EQ(Msg(5, 1 + ms / 200).at(t, ms).verdict, Verdict::Accept);
  const dt::Arrival a = Msg(5, 7, Stream::Reports, "h1").at(t, 10100, 1000);  // sent 9 s ago
  EXPECT_EQ(a.verdict, Verdict::Accept);
  EXPECT_TRUE(a.stale) << "9 s old by h2's clock: " << a.age_ms << " ms";
  const dt::Arrival b = Msg(5, 3, Stream::Bans).at(t, 10150, 2000);
  EXPECT_TRUE(b.stale) << "a bans message sent 8 s ago: " << b.age_ms << " ms";
}

// The attack: a signed old boot replayed after --down-after of silence of the live
// one. Before, it was taken (silence), the live boot retired and its reports dropped as a
// replay until it restarted. Now boots only move forward: refused, however long the silence.
TEST(PeerTrackerBoots, AnOldBootNeverComesBackWithKeys) {
  dt::PeerTracker t(options(true));
  for (uint64_t ms = 0; ms <= 1000; ms += 200) ASSERT_EQ(Msg(7, 1 + ms / 200).at(t, ms).verdict, Verdict::Accept);
  for (uint64_t ms = 5000; ms <= 60000; ms += 5000) {  // the live boot silent for minutes
    const dt::Arrival old = Msg(6, 40 + ms / 1000).at(t, ms, ms);
    EXPECT_EQ(old.verdict, Verdict::Rejected) << ms;
    EXPECT_EQ(old.refused, Refusal::OldBoot) << ms;
  }
  const dt::Arrival live = Msg(7, 7).at(t, 61000);
  EXPECT_EQ(live.verdict, Verdict::Accept) << "the live boot is still the one";
  EXPECT_FALSE(live.restarted);
  EXPECT_EQ(t.peers().at("h2").restarts, 0u);
  EXPECT_EQ(t.peers().at("h2").boot_rejected, 12u);
}

// A boot with a higher counter is the node's restart, proven: taken at once and the
// previous one retired; the same counter proves nothing: it waits until the live boot is
// gone (down_after of silence), never while it reports.
TEST(PeerTrackerBoots, ANewerBootAtOnceAProvisionalOneOnlyAfterTheSilence) {
  dt::PeerTracker t(options(true));
  for (uint64_t ms = 0; ms <= 1000; ms += 200) Msg(7, 1 + ms / 200).at(t, ms);
  Msg same(7, 1);
  same.h.boot_id ^= 1;  // same counter, other random bits
  for (uint64_t ms = 1100; ms <= 3000; ms += 200) {
    EXPECT_EQ(same.at(t, ms).refused, Refusal::NewBoot) << ms << ": the live boot still reports";
    same.h.seq++;
    ASSERT_EQ(Msg(7, 7 + (ms - 1100) / 200).at(t, ms + 50).verdict, Verdict::Accept);
  }
  const dt::Arrival newer = Msg(8, 1).at(t, 3100);
  EXPECT_EQ(newer.verdict, Verdict::Accept);
  EXPECT_TRUE(newer.restarted);
  EXPECT_EQ(Msg(7, 100).at(t, 3200).verdict, Verdict::Duplicate) << "the previous boot is retired";
  // Boot 8 goes silent: a provisional boot (counter 8 again) is taken once it is gone.
  Msg provisional(8, 1);
  provisional.h.boot_id ^= 2;
  EXPECT_EQ(provisional.at(t, 3900).refused, Refusal::NewBoot) << "0.8 s of silence";
  provisional.h.seq++;
  EXPECT_EQ(provisional.at(t, 4200).verdict, Verdict::Accept) << "1.1 s of silence: gone";
}

// A new boot starts every stream afresh (its seqs count from 1 again).
TEST(PeerTrackerBoots, ARestartStartsEveryStreamAfresh) {
  dt::PeerTracker t(options(true));
  Msg(7, 50).at(t, 0);
  Msg(7, 30, Stream::Bans).at(t, 10);
  Msg(7, 20, Stream::Reports, "h1").at(t, 20);
  EXPECT_EQ(Msg(8, 1, Stream::Bans).at(t, 100).verdict, Verdict::Accept) << "a new boot's first bans message";
  EXPECT_EQ(Msg(8, 1, Stream::Reports, "h1").at(t, 110).verdict, Verdict::Accept);
  const dt::Arrival r = Msg(8, 3).at(t, 120);
  EXPECT_EQ(r.verdict, Verdict::Accept);
  EXPECT_FALSE(r.gap) << "the first report heard of this boot";
  EXPECT_EQ(t.peers().at("h2").missing.size(), 2u) << "its seqs 1 and 2 may still be asked for";
}

// Without keys a counter is a number anyone may write: it proves nothing either way.
TEST(PeerTrackerBoots, WithoutKeysCountersProveNothing) {
  dt::PeerTracker t(options(false));
  for (uint64_t ms = 0; ms <= 1000; ms += 200) Msg(7, 1 + ms / 200).at(t, ms);
  EXPECT_EQ(Msg(900, 1).at(t, 1100).refused, Refusal::NewBoot) << "a forged higher counter while it reports";
  EXPECT_EQ(Msg(3, 1).at(t, 2500).verdict, Verdict::Accept) << "after the silence, whatever its counter";
}

// --- the counter itself -------------------------------------------------------------------

TEST(BootCounter, MovesForwardAcrossAClockSteppedBackAndWithoutItsFile) {
  dt::test::TempDir dir("dt-boot");
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.file("web1.boot");
  std::string warn;
  EXPECT_EQ(dt::next_boot_counter(path, 1000, &warn), 1000u) << "the first start: the clock";
  EXPECT_EQ(warn, "") << "no file yet is not worth a warning";
  EXPECT_EQ(dt::next_boot_counter(path, 1000, &warn), 1001u) << "two starts within a second";
  EXPECT_EQ(dt::next_boot_counter(path, 500, &warn), 1002u) << "the clock stepped back";
  EXPECT_EQ(dt::next_boot_counter(path, 5000, &warn), 5000u) << "the clock ahead of the file";
  std::ofstream(path, std::ios::trunc) << "garbage\n";
  EXPECT_EQ(dt::next_boot_counter(path, 6000, &warn), 6000u);
  EXPECT_NE(warn, "") << "a file that holds no counter is said";
  EXPECT_EQ(dt::next_boot_counter("", 7000, &warn), 7000u) << "no file: the clock alone";
  EXPECT_EQ(dt::next_boot_counter(dir.file("no/such/dir/x.boot"), 8000, &warn), 8000u);
  EXPECT_NE(warn, "") << "a file that cannot be written is said";
  EXPECT_EQ(dt::boot_counter_path("/etc/dthrottle/web1.key"), "/etc/dthrottle/web1.boot");
  EXPECT_EQ(dt::boot_counter_path("/etc/dthrottle/web1"), "/etc/dthrottle/web1.boot");
  EXPECT_EQ(dt::choose_boot_file(dir.file("web1.key"), "/run/x.boot"), dir.file("web1.boot")) << "a writable dir";
  EXPECT_EQ(dt::choose_boot_file(dir.file("no/such/web1.key"), "/run/x.boot"), "/run/x.boot");
  EXPECT_EQ(dt::choose_boot_file("", "/run/x.boot"), "/run/x.boot") << "no keys";
  EXPECT_EQ(dt::boot_counter(dt::make_boot_id(1001, 0xffffffff)), 1001u);
  EXPECT_GT(dt::make_boot_id(1001, 0), dt::make_boot_id(1000, 0xffffffff)) << "the counter orders boots";
}

}  // namespace
