// peer_tracker.h - what this agent knows about each peer: which reports it already
// applied (so a report is applied once), what it lost and asks again, how old a report
// is, and whether the peer is alive.
//
// A peer is identified by its node id. Its messages carry (boot_id, seq): seq counts
// messages from 1 within one run of the peer's agent (boot). Rules:
//   seq == last + 1           accepted
//   seq >  last + 1           accepted; the missing ones are counted as a gap and
//                             remembered (the newest kMaxMissing) to be asked again
//   seq <= last               accepted once if it is one of the remembered missing
//                             ones (a resend: "recovered"), else rejected: a
//                             duplicate or replay (never applied twice)
//   new boot_id               the peer restarted: accepted if the message is not older
//                             than the last one accepted (sent_unix_ms), tracking restarts
//   seq 0                     not a report (a resend request): never given to the tracker
// Liveness: a peer not heard from for `down_after_ns` is down; it comes back up with
// its next accepted message. Transitions are returned so the caller can log them.
//
// Age, without trusting the clocks to agree: for each message the tracker takes
// sample = (our monotonic ms at receipt) - (the peer's sent_unix_ms), which is the
// one-way delay plus an unknown but constant offset between the two clocks, and keeps
// offset = the smallest sample seen (raised by at most kOffsetCreepPpm of the time
// between two arrivals, so that clock drift is followed, and never across a silence).
// A message's age is sample - offset: how much later than the fastest of this peer's
// messages it arrived. Only the rate of the peer's wall clock matters (NTP slewing is
// fine), not its setting.
//
// Stale (its hits not to be charged): a message older than max_age, or one sent (now -
// age, by our clock, give or take down_after / 10) before the peer came back from a
// silence longer than max_age that was not a restart: the backlog of a partition, which
// TCP delivers in a burst after the heal, when each side has already granted the full
// rate on its own. A stale message is accepted (it is not asked again). Without a max
// age nothing is stale. If a peer's messages stay stale for kRelearnAfterNs while they
// keep coming, its clock was stepped back: the offset is learned again.
//
// A new peer's (or a restarted one's) earlier seqs of its boot are remembered as
// missing too, without counting them lost: its first report carries its initial burst.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster/peer_protocol.h"

namespace dt {

constexpr uint64_t kReportMaxAgePeriods = 10;           // the default --report-max-age: 2 s at 200 ms
constexpr size_t kMaxMissing = 256;                     // remembered missing seqs per peer
constexpr uint64_t kOffsetCreepPpm = 1000;              // 1 ms per second of steady arrivals
constexpr uint64_t kRelearnAfterNs = 10'000'000'000ull;  // stale for 10 s while arriving: a clock step

struct PeerState {
  uint64_t boot_id = 0;
  uint64_t last_seq = 0;
  uint64_t last_sent_unix_ms = 0;
  uint64_t last_heard_ns = 0;  // monotonic
  bool up = false;
  uint64_t accepted = 0;
  uint64_t duplicates = 0;     // seq <= last within a boot, or a stale boot
  uint64_t lost = 0;           // messages missing in sequence gaps
  uint64_t recovered = 0;      // of those, received later (resent)
  uint64_t restarts = 0;
  uint64_t stale = 0;          // messages older than max_age (not charged)
  uint64_t relearned = 0;      // clock steps: offset learned again
  // Age: the smallest (receipt ms - sent_unix_ms) seen, see the top of this file.
  bool have_offset = false;
  int64_t offset_us = 0;
  uint64_t stale_since_ns = 0;  // 0: the last message was fresh
  uint64_t back_ns = 0;         // when it came back up after a silence (0: never, or a restart)
  uint64_t last_age_ms = 0;
  // Missing seqs of this boot -> when the gap was seen (monotonic), oldest first.
  std::map<uint64_t, uint64_t> missing;
};

enum class Verdict { Accept, Duplicate };

// What the tracker made of one message.
struct Arrival {
  Verdict verdict = Verdict::Accept;
  bool came_up = false;    // this message brought the peer (back) up
  bool recovered = false;  // it filled an earlier gap (a resend)
  bool gap = false;        // it revealed missing messages (to be asked for at once)
  bool stale = false;      // older than max_age: do not charge its hits
  uint64_t age_ms = 0;     // receipt later than the peer's fastest, see above
  int64_t relearned_ms = 0;  // != 0: the peer's clock stepped by this much; offset relearned
};

struct LivenessChange {
  std::string node_id;
  bool up;
  uint64_t silent_ns;  // for a down transition: how long it has been silent
};

class PeerTracker {
 public:
  // max_age_ns: how old a message may be and still be charged; 0: any age.
  explicit PeerTracker(uint64_t down_after_ns, uint64_t max_age_ns = 0)
      : down_after_ns_(down_after_ns), max_age_ns_(max_age_ns) {}

  // Decides about one decoded message received at monotonic time now_ns and records it.
  Arrival arrive(const ReportHeader &h, uint64_t now_ns);
  // The same, verdict only. `came_up` is set when this message brought the peer (back) up.
  Verdict on_message(const ReportHeader &h, uint64_t now_ns, bool *came_up);

  // The missing messages worth asking again: those whose gap was seen less than
  // max_age ago (or 5 s without a max age), at most `max_seqs` per peer. Older ones
  // are forgotten (they would be stale when they came).
  std::vector<ResendRequest> resend_requests(uint64_t now_ns, size_t max_seqs);

  // Marks peers silent for longer than down_after_ns as down; returns the changes.
  std::vector<LivenessChange> check_liveness(uint64_t now_ns);

  const std::map<std::string, PeerState> &peers() const { return peers_; }
  size_t up_count() const;
  // A peer removed from the cluster (agent reload): no longer listed, up or down.
  void forget(const std::string &node_id) { peers_.erase(node_id); }
  uint64_t max_age_ns() const { return max_age_ns_; }

 private:
  Verdict sequence(PeerState &p, bool fresh, const ReportHeader &h, uint64_t now_ns, Arrival *a);
  void judge_age(PeerState &p, const ReportHeader &h, uint64_t now_ns, Arrival *a);

  uint64_t down_after_ns_;
  uint64_t max_age_ns_;
  std::map<std::string, PeerState> peers_;
};

}  // namespace dt
