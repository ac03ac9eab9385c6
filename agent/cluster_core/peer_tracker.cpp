// peer_tracker.cpp - once-only application of reports, gaps and their recovery, restarts
// no forged number can fake, the age of a report, liveness, and the cap on node ids.
#include "cluster_core/peer_tracker.h"

#include <algorithm>

namespace dt {

namespace {
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kAskWithoutMaxAgeNs = 5'000'000'000ull;
constexpr uint64_t kMaxCreepSpanNs = 1ull << 50;  // 13 days: keeps the creep product far from overflow

uint64_t add_saturated(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// Silent for longer than down_after (a clock read before the last message is not).
bool silent_for(const PeerState &p, uint64_t now_ns, uint64_t down_after_ns) {
  return now_ns > p.last_heard_ns && now_ns - p.last_heard_ns > down_after_ns;
}

// The seqs before `seq` of a boot heard for the first time: what it sent before we
// listened may still be worth asking for (its first report carries its initial burst);
// it only resends what is recent, and a stale resend is not charged. Not counted as
// lost: we were not listening.
void remember_earlier(PeerState &p, uint64_t seq, uint64_t now_ns) {
  p.missing.clear();
  if (seq == 0) return;
  for (uint64_t s = seq - std::min<uint64_t>(seq - 1, kMaxMissing); s < seq; s++) p.missing[s] = now_ns;
}

Arrival refused(Refusal why, uint64_t *counter) {
  Arrival a;
  a.verdict = Verdict::Rejected;
  a.refused = why;
  (*counter)++;
  return a;
}
}  // namespace

const char *refusal_name(Refusal r) {
  switch (r) {
    case Refusal::None: return "ok";
    case Refusal::AbsurdTime: return "absurd send time";
    case Refusal::NewBoot: return "restart refused";
    case Refusal::TooManyPeers: return "too many peers";
    case Refusal::OldBoot: return "old boot";
    case Refusal::NoSeq: return "no sequence number";
  }
  return "?";
}

PeerTracker::PeerTracker(const TrackerOptions &opt) : opt_(opt) {
  if (opt_.max_peers == 0) opt_.max_peers = 1;
}

// A new node id when max_peers are tracked: the longest-silent peer that is down (or
// silent for longer than down_after, liveness not checked yet) is forgotten. False if
// every tracked peer is alive: the newcomer is refused.
bool PeerTracker::make_room(uint64_t now_ns, Arrival *a) {
  while (peers_.size() >= opt_.max_peers) {
    // Nobody can be down before the least recently heard peer is down_after silent:
    // until then a flood of new node ids costs no scan.
    if (now_ns < no_room_until_ns_) return false;
    auto victim = peers_.end();
    uint64_t least_heard_ns = UINT64_MAX;
    for (auto it = peers_.begin(); it != peers_.end(); ++it) {
      const PeerState &p = it->second;
      least_heard_ns = std::min(least_heard_ns, p.last_heard_ns);
      if (p.up && !silent_for(p, now_ns, opt_.down_after_ns)) continue;
      if (victim == peers_.end() || p.last_heard_ns < victim->second.last_heard_ns) victim = it;
    }
    if (victim == peers_.end()) {
      no_room_until_ns_ = add_saturated(add_saturated(least_heard_ns, opt_.down_after_ns), 1);
      return false;
    }
    a->evicted.push_back(victim->first);
    peers_.erase(victim);
    counters_.evicted++;
  }
  return true;
}

// Another boot of a known peer: the restart rules at the top of peer_tracker.h. Only an
// accepted one changes the peer's state.
Verdict PeerTracker::new_boot(PeerState &p, const ReportHeader &h, uint64_t now_ns, Arrival *a) {
  if (std::find(p.retired_boots.begin(), p.retired_boots.end(), h.boot_id) != p.retired_boots.end()) {
    p.duplicates++;  // a replay of an earlier boot's traffic
    return Verdict::Duplicate;
  }
  const uint32_t counter = boot_counter(h.boot_id), current = boot_counter(p.boot_id);
  if (opt_.authenticated && counter < current) {  // signed, so the node's: an old boot replayed
    p.boot_rejected++;
    a->refused = Refusal::OldBoot;
    return Verdict::Rejected;
  }
  const bool newer = opt_.authenticated && counter > current;  // proven: its restart
  if (!newer && !silent_for(p, now_ns, opt_.down_after_ns)) {  // provisional: the live boot stays
    p.boot_rejected++;
    a->refused = Refusal::NewBoot;
    return Verdict::Rejected;
  }
  p.retired_boots.push_back(p.boot_id);
  if (p.retired_boots.size() > kRetiredBoots) p.retired_boots.erase(p.retired_boots.begin());
  p.restarts++;
  a->restarted = true;
  p.last_seq = 0;  // every stream starts afresh
  p.missing.clear();
  p.stream_seqs.clear();
  return Verdict::Accept;
}

// Once-only: the boot and seq rules at the top of peer_tracker.h.
Verdict PeerTracker::sequence(PeerState &p, bool fresh, const ReportHeader &h, uint64_t now_ns, Arrival *a) {
  if (!fresh && h.boot_id != p.boot_id)
    if (const Verdict v = new_boot(p, h, now_ns, a); v != Verdict::Accept) return v;
  p.boot_id = h.boot_id;
  p.last_sent_unix_ms = std::max(p.last_sent_unix_ms, h.sent_unix_ms);
  if (is_report_stream(h)) return report_sequence(p, h, now_ns, a);
  uint64_t &last = p.stream_seqs[stream_key(h)];
  if (h.seq <= last) {
    p.duplicates++;
    return Verdict::Duplicate;
  }
  last = h.seq;
  return Verdict::Accept;
}

// The reports to everyone: gaps remembered to be asked again, a resend applied once.
Verdict PeerTracker::report_sequence(PeerState &p, const ReportHeader &h, uint64_t now_ns, Arrival *a) {
  if (p.last_seq == 0) {  // the first of this boot we hear
    remember_earlier(p, h.seq, now_ns);
  } else if (h.seq <= p.last_seq) {
    if (p.missing.erase(h.seq) == 0) {
      p.duplicates++;
      return Verdict::Duplicate;
    }
    p.recovered++;
    a->recovered = true;
    return Verdict::Accept;
  } else {
    const uint64_t gap = h.seq - p.last_seq - 1;
    p.lost += gap;
    a->gap = gap > 0;
    for (uint64_t s = h.seq - std::min<uint64_t>(gap, kMaxMissing); s < h.seq; s++) p.missing[s] = now_ns;
    while (p.missing.size() > kMaxMissing) p.missing.erase(p.missing.begin());
  }
  p.last_seq = h.seq;
  return Verdict::Accept;
}

// The age of an accepted message, and whether it is stale (see peer_tracker.h). The
// caller bounded sent_unix_ms (kMaxSentUnixMs): no sum below can overflow.
void PeerTracker::judge_age(PeerState &p, const ReportHeader &h, uint64_t now_ns, Arrival *a) {
  // In microseconds, so that the creep of a 10 ms period is not rounded away.
  const int64_t sample = static_cast<int64_t>(now_ns / 1000) - static_cast<int64_t>(h.sent_unix_ms * 1000);
  if (!p.have_offset) {
    p.have_offset = true;
    p.offset_us = sample;
  } else {
    // Follow drift while messages arrive steadily: never across a silence (a partition),
    // so the backlog delivered after it is judged against the offset from before it.
    const uint64_t since = now_ns - p.last_heard_ns;
    const uint64_t steady = since < opt_.down_after_ns ? std::min(since, kMaxCreepSpanNs) : 0;
    p.offset_us = std::min(p.offset_us + static_cast<int64_t>(steady / 1000 * kOffsetCreepPpm / 1000000), sample);
  }
  a->age_ms = static_cast<uint64_t>(sample - p.offset_us) / 1000;
  p.last_age_ms = a->age_ms;
  // Sent (by our clock: now - age) before the peer came back from a silence: backlog.
  // (age_ms * kMs > x, written as age_ms > x / kMs: the same for integers, no overflow.)
  const bool backlog =
      p.back_ns && a->age_ms > add_saturated(now_ns - p.back_ns,
                                             opt_.backlog_slack_ns ? opt_.backlog_slack_ns : opt_.down_after_ns / 10) /
                                   kMs;
  a->stale = opt_.max_age_ns && (backlog || a->age_ms > opt_.max_age_ns / kMs);
  if (!a->stale) {
    p.stale_since_ns = 0;
    return;
  }
  if (p.stale_since_ns == 0) p.stale_since_ns = now_ns;
  if (now_ns - p.stale_since_ns >= kRelearnAfterNs && now_ns - p.last_heard_ns < opt_.down_after_ns) {
    // Stale for 10 s while arriving steadily: no backlog lasts that long, the clock moved.
    a->relearned_ms = (sample - p.offset_us) / 1000;
    p.offset_us = sample;
    p.relearned++;
    p.stale_since_ns = 0;
    a->stale = false;
    a->age_ms = 0;
  }
}

Arrival PeerTracker::arrive(const ReportHeader &h, uint64_t now_ns) {
  if (h.sent_unix_ms > kMaxSentUnixMs) return refused(Refusal::AbsurdTime, &counters_.absurd_time);
  if (h.seq == 0) return refused(Refusal::NoSeq, &counters_.no_seq);
  Arrival a;
  auto it = peers_.find(h.node_id);
  const bool fresh = it == peers_.end();
  if (fresh) {
    if (!make_room(now_ns, &a)) {
      Arrival r = refused(Refusal::TooManyPeers, &counters_.too_many_peers);
      r.evicted = std::move(a.evicted);
      return r;
    }
    it = peers_.emplace(h.node_id, PeerState{}).first;
  }
  PeerState &p = it->second;
  a.verdict = sequence(p, fresh, h, now_ns, &a);
  if (a.verdict != Verdict::Accept) return a;
  if (fresh) p.last_heard_ns = now_ns;
  // Back from a silence longer than the max age that was not a restart: what it sent
  // meanwhile may follow (shorter silences, TCP stalls, are judged by age alone).
  if (!p.up) p.back_ns = !fresh && !a.restarted && now_ns - p.last_heard_ns > opt_.max_age_ns ? now_ns : 0;
  judge_age(p, h, now_ns, &a);
  p.stale += a.stale;
  p.last_heard_ns = now_ns;
  p.accepted++;
  if (!p.up) {
    p.up = true;
    a.came_up = true;
  }
  return a;
}

Verdict PeerTracker::on_message(const ReportHeader &h, uint64_t now_ns, bool *came_up) {
  const Arrival a = arrive(h, now_ns);
  *came_up = a.came_up;
  return a.verdict;
}

std::vector<ResendRequest> PeerTracker::resend_requests(uint64_t now_ns, size_t max_seqs) {
  const uint64_t keep_ns = opt_.max_age_ns ? opt_.max_age_ns : kAskWithoutMaxAgeNs;
  std::vector<ResendRequest> out;
  for (auto &[id, p] : peers_) {
    std::erase_if(p.missing, [&](const auto &m) { return now_ns - m.second >= keep_ns; });
    if (p.missing.empty() || !p.up) continue;
    ResendRequest r{id, p.boot_id, {}};
    // The newest first: if not all fit, the older ones are the likelier to be stale.
    for (auto m = p.missing.rbegin(); m != p.missing.rend() && r.seqs.size() < max_seqs; ++m)
      r.seqs.push_back(m->first);
    std::reverse(r.seqs.begin(), r.seqs.end());
    out.push_back(std::move(r));
  }
  return out;
}

bool PeerTracker::link_dropped(const std::string &node_id, uint64_t now_ns, LivenessChange *change) {
  auto it = peers_.find(node_id);
  if (it == peers_.end() || !it->second.up) return false;
  it->second.up = false;
  *change = {node_id, false, now_ns > it->second.last_heard_ns ? now_ns - it->second.last_heard_ns : 0};
  return true;
}

std::vector<LivenessChange> PeerTracker::check_liveness(uint64_t now_ns) {
  std::vector<LivenessChange> changes;
  for (auto &[id, p] : peers_) {
    if (p.up && silent_for(p, now_ns, opt_.down_after_ns)) {
      p.up = false;
      changes.push_back({id, false, now_ns - p.last_heard_ns});
    }
  }
  return changes;
}

size_t PeerTracker::up_count() const {
  size_t n = 0;
  for (const auto &[id, p] : peers_) n += p.up;
  return n;
}

}  // namespace dt
