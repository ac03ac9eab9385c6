// cluster_verified.cpp - sources verified by SYN cookies between peers (docs/rules.md, "SYN
// cookies"; cluster_core/verified_share.h): those our packet path verified out in verified
// sources messages of their own, the peers' into our verified map.

#include "cluster/cluster.h"
#include "common/address.h"
#include "common/clock.h"
#include "dataplane/dataplane.h"

namespace dt {

// What the packet path verified since the last period (its ring), told to the peers,
// signed like reports when keys are used.
void Cluster::publish_verified(uint64_t now_ns) {
  verified_in_.new_period();
  if (!verified_ring_ || !verified_ring_->ok()) return;
  int err = 0;
  const std::vector<dt_verified_rec> recs = verified_ring_->drain(&err);
  if (err)
    log_limited(verified_log_, LogLevel::Warn, now_ns, "reading the verified sources' ring failed: %s", strerror(-err));
  if (recs.empty()) return;
  const std::vector<VerifiedSource> sources = verified_to_share(recs, now_ns, &counters_.verified_not_shared);
  if (sources.empty()) return;
  for (const Outgoing &o : node_.outbox().verified(message_header(collector_.epoch()), sources)) publish_out(o);
  counters_.verified_shared += sources.size();
}

// A peer's verified sources message (already checked as a bans message is: its signature
// with keys, its recipient, not our own echo, once only in its stream: PeerTracker), from a
// peer --peer-verified lists (else refused whole, counted and logged at a limited rate). Its
// remaining times are by the sender's clock at sending; the message's age is taken off, the
// rest capped at our --verified-ttl, within the period's budget for all peers and the
// sources one peer (all of them) may have in force here (VerifiedHoldLimits). A stale one
// is not applied (its sources pay a cookie here, as without a cluster).
void Cluster::apply_verified(const ReportHeader &h, const ReportBody &body, const Arrival &a, uint64_t now_ns) {
  counters_.verified_messages_received++;
  if (!verified_in_.admits(h.node_id, body.verified.size())) {
    counters_.verified_refused_peer += body.verified.size();
    return log_limited(verified_log_, LogLevel::Warn, now_ns,
                       "not writing %zu verified sources of %s: --peer-verified does not list it", body.verified.size(),
                       h.node_id.c_str());
  }
  if (a.stale) return void(counters_.rejected["stale verified"]++);
  const VerifiedIntakeCounts before = verified_in_.counts();
  const std::vector<VerifiedWrite> writes = verified_in_.take(h.node_id, body.verified, a.age_ms, now_ns);
  const VerifiedIntakeCounts &after = verified_in_.counts();
  counters_.verified_expired += after.expired_in_transit - before.expired_in_transit;
  counters_.verified_capped += after.capped - before.capped;
  if (const uint64_t over = after.over_budget - before.over_budget) {
    counters_.verified_over_budget += over;
    log_limited(verified_log_, LogLevel::Warn, now_ns,
                "not writing %llu verified sources of %s: over the budget of %zu a period for all peers",
                static_cast<unsigned long long>(over), h.node_id.c_str(), kMaxVerifiedLearnedPerPeriod);
  }
  if (const uint64_t over = after.over_peer_cap - before.over_peer_cap) {
    counters_.verified_refused_peer_cap += over;
    log_limited(verified_log_, LogLevel::Warn, now_ns,
                "not writing %llu new verified sources of %s: it has %zu in force here (--peer-verified-max %zu), "
                "all the peers %zu (--max-verified %zu)",
                static_cast<unsigned long long>(over), h.node_id.c_str(), verified_in_.held_of(h.node_id),
                cfg_.verified_hold.per_peer, verified_in_.held(), cfg_.verified_hold.all_peers);
  }
  write_learned(h.node_id, writes, now_ns);
}

// A peer's sources into the verified map (never through the ring: not told on), until
// now_ns + ttl: the expiry verified_in_ holds for them, so that a reload deletes exactly
// what the peer wrote (now_ns is CLOCK_MONOTONIC, drain_socket's clock, as the map's).
void Cluster::write_learned(const std::string &from, const std::vector<VerifiedWrite> &writes, uint64_t now_ns) {
  for (const VerifiedWrite &w : writes) {
    switch (write_verified(dp_.verified_fd(), w.key, w.ttl_ns, now_ns)) {
      case VerifiedWriteResult::Written: counters_.verified_learned++; break;
      case VerifiedWriteResult::Kept: counters_.verified_kept++; break;
      case VerifiedWriteResult::Failed:
        counters_.verified_write_failed++;
        log_limited(verified_log_, LogLevel::Warn, now_ns, "cannot write %s's verified source %s: %s", from.c_str(),
                    key_to_string(w.key).c_str(), strerror(errno));
        break;
    }
  }
}

// A reload's --peer-verified: what the peers no longer listed wrote leaves the verified map
// (their sources would else skip the prefix budgets here for up to --verified-ttl more,
// on the word of a peer no longer trusted); a source verified since for longer (by a
// cookie here or by a listed peer's write) stays.
size_t Cluster::set_peer_verified(const PeerSet &peers) {
  const uint64_t now_ns = mono_now_ns();
  return withdraw_verified(verified_in_.set_peers(peers, now_ns), now_ns);
}

// Each source a peer wrote, deleted from the verified map unless verified there for longer
// since (unwrite_verified); counted in verified.withdrawn.
size_t Cluster::withdraw_verified(const std::vector<VerifiedDrop> &drops, uint64_t now_ns) {
  size_t deleted = 0;
  for (const VerifiedDrop &d : drops) {
    switch (unwrite_verified(dp_.verified_fd(), d.key, d.expires_ns)) {
      case VerifiedUnwriteResult::Deleted: deleted++; break;
      case VerifiedUnwriteResult::Kept:
      case VerifiedUnwriteResult::Absent: break;
      case VerifiedUnwriteResult::Failed:
        counters_.verified_write_failed++;
        log_limited(verified_log_, LogLevel::Warn, now_ns, "cannot delete the verified source %s: %s",
                    key_to_string(d.key).c_str(), strerror(errno));
        break;
    }
  }
  counters_.verified_withdrawn += deleted;
  return deleted;
}

}  // namespace dt
