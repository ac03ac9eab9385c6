// peer_tracker.cpp - once-only application of reports, gaps and their recovery, the age
// of a report and liveness.
#include "cluster/peer_tracker.h"

#include <algorithm>

namespace dt {

namespace {
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kAskWithoutMaxAgeNs = 5'000'000'000ull;
}  // namespace

// Once-only: the seq rules at the top of peer_tracker.h.
Verdict PeerTracker::sequence(PeerState &p, bool fresh, const ReportHeader &h, uint64_t now_ns, Arrival *a) {
  if (!fresh && h.boot_id == p.boot_id) {
    if (h.seq <= p.last_seq) {
      if (p.missing.erase(h.seq) == 0) {
        p.duplicates++;
        return Verdict::Duplicate;
      }
      p.recovered++;
      a->recovered = true;
      return Verdict::Accept;
    }
    const uint64_t gap = h.seq - p.last_seq - 1;
    p.lost += gap;
    a->gap = gap > 0;
    for (uint64_t s = h.seq - std::min<uint64_t>(gap, kMaxMissing); s < h.seq; s++) p.missing[s] = now_ns;
    while (p.missing.size() > kMaxMissing) p.missing.erase(p.missing.begin());
  } else if (fresh || h.sent_unix_ms >= p.last_sent_unix_ms) {
    // A peer heard for the first time, or a restart: what it sent before this message
    // in this boot may still be worth asking for (its first report carries its initial
    // burst); it only resends what is recent, and a stale resend is not charged. Not
    // counted as lost: we were not listening.
    if (!fresh) p.restarts++;
    p.missing.clear();
    for (uint64_t s = h.seq - std::min<uint64_t>(h.seq - 1, kMaxMissing); s < h.seq; s++) p.missing[s] = now_ns;
  } else {
    // Another boot of the peer, older than what we already accepted: a replay of an
    // earlier boot's traffic.
    p.duplicates++;
    return Verdict::Duplicate;
  }
  p.boot_id = h.boot_id;
  p.last_seq = h.seq;
  p.last_sent_unix_ms = h.sent_unix_ms;
  return Verdict::Accept;
}

// The age of an accepted message, and whether it is stale (see peer_tracker.h).
void PeerTracker::judge_age(PeerState &p, const ReportHeader &h, uint64_t now_ns, Arrival *a) {
  // In microseconds, so that the creep of a 10 ms period is not rounded away.
  const int64_t sample = static_cast<int64_t>(now_ns / 1000) - static_cast<int64_t>(h.sent_unix_ms) * 1000;
  if (!p.have_offset) {
    p.have_offset = true;
    p.offset_us = sample;
  } else {
    // Follow drift while messages arrive steadily: never across a silence (a partition),
    // so the backlog delivered after it is judged against the offset from before it.
    const uint64_t since = now_ns - p.last_heard_ns;
    const uint64_t steady = since < down_after_ns_ ? since : 0;
    p.offset_us = std::min(p.offset_us + static_cast<int64_t>(steady / 1000 * kOffsetCreepPpm / 1000000), sample);
  }
  a->age_ms = static_cast<uint64_t>(sample - p.offset_us) / 1000;
  p.last_age_ms = a->age_ms;
  // Sent (by our clock: now - age) before the peer came back from a silence: backlog.
  const bool backlog = p.back_ns && a->age_ms * kMs > now_ns - p.back_ns + down_after_ns_ / 10;
  a->stale = max_age_ns_ && (backlog || a->age_ms * kMs > max_age_ns_);
  if (!a->stale) {
    p.stale_since_ns = 0;
    return;
  }
  if (p.stale_since_ns == 0) p.stale_since_ns = now_ns;
  if (now_ns - p.stale_since_ns >= kRelearnAfterNs && now_ns - p.last_heard_ns < down_after_ns_) {
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
  Arrival a;
  auto [it, fresh] = peers_.try_emplace(h.node_id);
  PeerState &p = it->second;
  const uint64_t boot_before = p.boot_id;
  a.verdict = sequence(p, fresh, h, now_ns, &a);
  if (a.verdict == Verdict::Duplicate) return a;
  if (fresh) p.last_heard_ns = now_ns;
  // Back from a silence longer than the max age that was not a restart: what it sent
  // meanwhile may follow (shorter silences, TCP stalls, are judged by age alone).
  if (!p.up) {
    const bool restart = fresh || p.boot_id != boot_before;
    p.back_ns = !restart && now_ns - p.last_heard_ns > max_age_ns_ ? now_ns : 0;
  }
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
  const uint64_t keep_ns = max_age_ns_ ? max_age_ns_ : kAskWithoutMaxAgeNs;
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

std::vector<LivenessChange> PeerTracker::check_liveness(uint64_t now_ns) {
  std::vector<LivenessChange> changes;
  for (auto &[id, p] : peers_) {
    if (p.up && now_ns - p.last_heard_ns > down_after_ns_) {
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
