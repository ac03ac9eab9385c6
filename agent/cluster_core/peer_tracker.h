// peer_tracker.h - what this agent knows about each peer: which reports it already
// applied (so a report is applied once), what it lost and asks again, how old a report
// is, and whether the peer is alive.
//
// A peer is identified by its node id. Its messages carry (boot_id, stream, seq): seq
// counts the messages of one stream from 1 within one run of the peer's agent (boot). A
// stream is a kind of message and its recipient (peer_protocol.h): the reports (and
// relays) to everyone, which can be asked again; the reports to us alone (the owner
// scheme's directed messages), the bans, the resend requests. One tracker judges them
// all: one boot per peer, one clock offset per peer (every stream's send times are that
// peer's clock), one liveness. The caller refused messages whose recipient is another
// node. Rules, checked in order:
//   sent_unix_ms > 2^42 ms    rejected (refused AbsurdTime): no clock is past 2109, and
//                             every later sum stays far from overflow
//   seq == 0                  rejected (refused NoSeq): every message of v2 has one
//   a node id not tracked     accepted if fewer than max_peers are tracked, or after the
//                             longest-silent DOWN peer (or one silent for down_after) is
//                             forgotten to make room; else rejected (TooManyPeers)
//   the reports to everyone:
//   seq == last + 1           accepted
//   seq >  last + 1           accepted; the missing ones are counted as a gap and
//                             remembered (the newest kMaxMissing) to be asked again
//   seq <= last               accepted once if it is one of the remembered missing
//                             ones (a resend: "recovered"), else rejected: a
//                             duplicate or replay (never applied twice)
//   any other stream          accepted if seq > the stream's last (nothing is asked
//                             again), else a duplicate or replay
//   a retired boot_id         one of the peer's last kRetiredBoots boots: a replay
//                             (Duplicate)
//   another new boot_id       the peer restarted, or someone claims it did. Every stream
//                             of the new boot starts afresh.
//     authenticated           boots only move forward: a boot counter (boot_counter(),
//                             persisted by the sender, cluster/boot_counter.h) above the
//                             current one's is the node's restart, proven (signed): taken
//                             at once; below it, an old boot replayed: refused for good
//                             (refused OldBoot), however long the peer is silent; the
//                             same counter proves nothing (a provisional boot): taken only
//                             once the current boot has been silent for longer than
//                             down_after (it is gone), never while it reports
//     not authenticated       accepted ONLY once the current boot has been silent for
//     (--insecure-cluster)    longer than down_after: a forged restart, whatever numbers
//                             it carries, cannot displace a boot that is still reporting.
//                             The price: a real restart faster than down_after loses the
//                             new boot's reports until the old boot's last message is
//                             down_after old (at most down_after of reports, which
//                             are then asked again like any gap)
//                             Else rejected (refused NewBoot, PeerState::boot_rejected):
//                             nothing of the current boot's tracking changes.
// A stepped-back clock plus a restart: the new boot's reports look old, and are judged
// stale until the offset is learned again (kRelearnAfterNs, below). It is never ignored
// for longer. The offset is kept across restarts on purpose.
// `authenticated` promises that every message reaching the tracker carries a verified
// signature of the node it names; without that promise anyone can claim any node id.
// Without authentication these rules only keep a forged restart from silencing a live
// peer: a forger who reads the real boot id can still forge its seqs and its hits, and
// one heard before the real node (this agent just started) holds the node id for as
// long as it keeps reporting (--insecure-cluster is for networks where every host is
// trusted).
// Liveness: a peer not heard from for `down_after_ns` is down; it comes back up with
// its next accepted message, of any stream. Transitions are returned so the caller can log them.
//
// Age, without trusting the clocks to agree: for each message the tracker takes
// sample = (our monotonic ms at receipt) - (the peer's sent_unix_ms), which is the
// one-way delay plus an unknown but constant offset between the two clocks, and keeps
// offset = the smallest sample seen (raised by at most kOffsetCreepPpm of the time
// between two arrivals, so that clock drift is followed, and never across a silence).
// A message's age is sample - offset: how much later than the fastest of this peer's
// messages it arrived. Only the rate of the peer's wall clock matters (NTP slewing is
// fine), not its setting. In int64 microseconds: with sent_unix_ms below 2^42 ms and
// now_ns/1000 below 2^55, a sample, the offset and their difference never overflow.
// "At receipt" means when the message was read: a time taken earlier (a poll's wake-up,
// before a drain held up for seconds) makes a sample too small, which lowers the offset
// and makes every later message of that peer look old (Cluster::on_readable).
//
// Stale (its hits not to be charged): a message older than max_age, or one sent (now -
// age, by our clock, give or take backlog_slack, default down_after / 10) before the peer came back from a
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

#include "cluster_core/peer_protocol.h"

namespace dt {

constexpr uint64_t kReportMaxAgePeriods = 10;            // the default --report-max-age: 2 s at 200 ms
constexpr size_t kMaxMissing = 256;                      // remembered missing seqs per peer
constexpr uint64_t kOffsetCreepPpm = 1000;               // 1 ms per second of steady arrivals
constexpr uint64_t kRelearnAfterNs = 10'000'000'000ull;  // stale for 10 s while arriving: a clock step
constexpr uint64_t kMaxSentUnixMs = 1ull << 42;          // later than 2109: an absurd send time
constexpr size_t kRetiredBoots = 8;                      // a peer's last boots, replays of which are refused
constexpr size_t kMinTrackedPeers = 64;                  // the least max_peers a Cluster asks for

struct TrackerOptions {
  uint64_t down_after_ns = 0;           // silent this long: down (and, for a new boot, replaceable)
  uint64_t max_age_ns = 0;              // how old a message may be and still be charged; 0: any age
  bool authenticated = false;           // every message carries a verified signature of its node
  size_t max_peers = kMinTrackedPeers;  // node ids tracked at most (>= 1)
  // How much earlier than its return a message may have been sent and not be a partition's
  // backlog (clocks and delays); 0: down_after / 10. With link liveness down_after is long
  // (a hung peer), the slack stays that of the heartbeat a second (cluster_peers.cpp).
  uint64_t backlog_slack_ns = 0;
};

struct PeerState {
  uint64_t boot_id = 0;
  uint64_t last_seq = 0;
  uint64_t last_sent_unix_ms = 0;
  uint64_t last_heard_ns = 0;  // monotonic
  bool up = false;
  uint64_t accepted = 0;
  uint64_t duplicates = 0;  // seq <= last within a boot, or a retired boot
  uint64_t lost = 0;        // messages missing in sequence gaps
  uint64_t recovered = 0;   // of those, received later (resent)
  uint64_t restarts = 0;
  uint64_t boot_rejected = 0;  // messages of a new boot refused while the current one lives
  uint64_t stale = 0;          // messages older than max_age (not charged)
  uint64_t relearned = 0;      // clock steps: offset learned again
  // The other streams (stream_key()): the last seq accepted of each, this boot.
  std::map<uint8_t, uint64_t> stream_seqs;
  // Age: the smallest (receipt ms - sent_unix_ms) seen, see the top of this file.
  bool have_offset = false;
  int64_t offset_us = 0;
  uint64_t stale_since_ns = 0;  // 0: the last message was fresh
  uint64_t back_ns = 0;         // when it came back up after a silence (0: never, or a restart)
  uint64_t last_age_ms = 0;
  // Missing seqs of this boot -> when the gap was seen (monotonic), oldest first.
  std::map<uint64_t, uint64_t> missing;
  std::vector<uint64_t> retired_boots;  // the last kRetiredBoots boot ids, oldest first
};

// Duplicate: already applied, or a replay. Rejected: see Arrival::refused.
enum class Verdict { Accept, Duplicate, Rejected };
enum class Refusal { None, AbsurdTime, NewBoot, TooManyPeers, OldBoot, NoSeq };
// "absurd send time", "restart refused", "too many peers", "old boot", "no sequence number"
const char *refusal_name(Refusal r);

// A stream's key in PeerState::stream_seqs: its kind, and whether it is to us alone.
inline uint8_t stream_key(const ReportHeader &h) {
  return static_cast<uint8_t>(static_cast<uint8_t>(h.stream) * 2 + !h.to.empty());
}
// The reports to everyone: the stream whose lost messages are asked again.
inline bool is_report_stream(const ReportHeader &h) { return stream_key(h) == 0; }

// What the tracker made of one message.
struct Arrival {
  Verdict verdict = Verdict::Accept;
  Refusal refused = Refusal::None;   // why, when Rejected
  bool came_up = false;              // this message brought the peer (back) up
  bool restarted = false;            // it is the first of a new boot of a known peer
  bool recovered = false;            // it filled an earlier gap (a resend)
  bool gap = false;                  // it revealed missing messages (to be asked for at once)
  bool stale = false;                // older than max_age: do not charge its hits
  uint64_t age_ms = 0;               // receipt later than the peer's fastest, see above
  int64_t relearned_ms = 0;          // != 0: the peer's clock stepped by this much; offset relearned
  std::vector<std::string> evicted;  // down peers forgotten to make room for this one
};

struct LivenessChange {
  std::string node_id;
  bool up;
  uint64_t silent_ns;  // for a down transition: how long it has been silent
};

// What the tracker refused or dropped over all node ids (per peer: PeerState).
struct TrackerCounters {
  uint64_t absurd_time = 0;     // messages with sent_unix_ms beyond kMaxSentUnixMs
  uint64_t too_many_peers = 0;  // messages of a new node id refused: max_peers tracked, none down
  uint64_t evicted = 0;         // down peers forgotten to make room for a new node id
  uint64_t no_seq = 0;          // messages with seq 0
};

class PeerTracker {
 public:
  explicit PeerTracker(const TrackerOptions &opt);
  // The existing callers' form: not authenticated, kMinTrackedPeers peers at most.
  explicit PeerTracker(uint64_t down_after_ns, uint64_t max_age_ns = 0)
      : PeerTracker(TrackerOptions{down_after_ns, max_age_ns, false, kMinTrackedPeers}) {}

  // Decides about one decoded message received at monotonic time now_ns and records it.
  Arrival arrive(const ReportHeader &h, uint64_t now_ns);
  // The same, verdict only. `came_up` is set when this message brought the peer (back) up.
  Verdict on_message(const ReportHeader &h, uint64_t now_ns, bool *came_up);

  // The missing messages worth asking again: those whose gap was seen less than
  // max_age ago (or 5 s without a max age), at most `max_seqs` per peer. Older ones
  // are forgotten (they would be stale when they came).
  std::vector<ResendRequest> resend_requests(uint64_t now_ns, size_t max_seqs);

  // Our link to the peer dropped (link liveness, cluster.h: link_liveness()): a tracked
  // peer that is up goes down at once (*change says so; true). Its next accepted message
  // brings it up again, as after any silence.
  bool link_dropped(const std::string &node_id, uint64_t now_ns, LivenessChange *change);

  // Marks peers silent for longer than down_after_ns as down; returns the changes.
  std::vector<LivenessChange> check_liveness(uint64_t now_ns);

  const std::map<std::string, PeerState> &peers() const { return peers_; }
  size_t up_count() const;
  // A peer removed from the cluster (agent reload): no longer listed, up or down.
  void forget(const std::string &node_id) { peers_.erase(node_id); }
  uint64_t max_age_ns() const { return opt_.max_age_ns; }
  const TrackerOptions &options() const { return opt_; }
  // A new cap (agent reload changed the peers); peers beyond it leave as they go down.
  void set_max_peers(size_t max_peers) { opt_.max_peers = max_peers ? max_peers : 1; }
  const TrackerCounters &counters() const { return counters_; }

 private:
  bool make_room(uint64_t now_ns, Arrival *a);
  Verdict new_boot(PeerState &p, const ReportHeader &h, uint64_t now_ns, Arrival *a);
  Verdict sequence(PeerState &p, bool fresh, const ReportHeader &h, uint64_t now_ns, Arrival *a);
  Verdict report_sequence(PeerState &p, const ReportHeader &h, uint64_t now_ns, Arrival *a);
  void judge_age(PeerState &p, const ReportHeader &h, uint64_t now_ns, Arrival *a);

  TrackerOptions opt_;
  std::map<std::string, PeerState> peers_;
  TrackerCounters counters_;
  uint64_t no_room_until_ns_ = 0;  // full, and no peer can be down before then
};

}  // namespace dt
