// peer_tracker.cpp - once-only application of reports, gaps and liveness.
#include "cluster/peer_tracker.h"

namespace dt {

Verdict PeerTracker::on_message(const ReportHeader &h, uint64_t now_ns, bool *came_up) {
  *came_up = false;
  auto [it, fresh] = peers_.try_emplace(h.node_id);
  PeerState &p = it->second;
  if (!fresh && h.boot_id == p.boot_id) {
    if (h.seq <= p.last_seq) {
      p.duplicates++;
      return Verdict::Duplicate;
    }
    p.lost += h.seq - p.last_seq - 1;
  } else if (!fresh) {
    // Another boot of the peer: a restart, unless the message is older than what we
    // already accepted (a replay of an earlier boot's traffic).
    if (h.sent_unix_ms < p.last_sent_unix_ms) {
      p.duplicates++;
      return Verdict::Duplicate;
    }
    p.restarts++;
  }
  p.boot_id = h.boot_id;
  p.last_seq = h.seq;
  p.last_sent_unix_ms = h.sent_unix_ms;
  p.last_heard_ns = now_ns;
  p.accepted++;
  if (!p.up) {
    p.up = true;
    *came_up = true;
  }
  return Verdict::Accept;
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
