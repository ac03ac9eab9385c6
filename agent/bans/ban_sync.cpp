// ban_sync.cpp - bans across the cluster (ban_sync.h).
#include "bans/ban_sync.h"

#include <algorithm>

namespace dt {
namespace {

BanNotice lift_notice(const BanPrefix &prefix, uint64_t unix_ms) {
  BanNotice lift;
  lift.prefix = prefix;
  lift.remove = true;
  lift.unix_ms = unix_ms;
  return lift;
}

// The node id as a ban's origin holds it (origins are cut to kMaxBanOrigin bytes).
std::string origin_node_of(const std::string &from) { return from.substr(0, kMaxBanOrigin); }

}  // namespace

BanNotice set_notice(const Ban &b, uint64_t now_ns) {
  BanNotice n;
  n.prefix = b.prefix;
  n.remaining_ms = b.expires_ns > now_ns ? (b.expires_ns - now_ns + 999'999) / 1'000'000 : 0;
  n.unix_ms = b.set_unix_ms;
  n.reason = b.reason;
  n.origin = b.origin;
  n.who = b.who;
  return n;
}

std::string ban_origin_node(const Ban &b) { return b.origin.substr(0, b.origin.find('/')); }

void BanSync::expire_tombstones(uint64_t now_ns) {
  for (auto it = tombstones_.begin(); it != tombstones_.end();)
    it = it->second.until_ns <= now_ns ? tombstones_.erase(it) : std::next(it);
  for (auto it = peer_tombstones_.begin(); it != peer_tombstones_.end();) {
    if (it->second.until_ns > now_ns) {
      ++it;
      continue;
    }
    if (--peer_tombstone_counts_[it->first.second] == 0) peer_tombstone_counts_.erase(it->first.second);
    it = peer_tombstones_.erase(it);
  }
  counters_.tombstones = tombstones_.size() + peer_tombstones_.size();
}

std::vector<BanNotice> BanSync::on_period(uint64_t now_ns, uint64_t now_unix_ms) {
  counters_.swept += store_.sweep(now_ns);
  expire_tombstones(now_ns);
  const bool full = now_ns >= next_full_ns_;
  std::vector<BanNotice> out;
  const uint64_t gen = store_.generation();  // before the scan: a change during it is seen next time
  if (gen == seen_generation_ && !full) return out;
  seen_generation_ = gen;
  if (full) next_full_ns_ = now_ns + kBanAnnounceEveryNs;
  rescan(now_ns, now_unix_ms, full, &out);
  return out;
}

// A ban gone before its expiry: our own ban's lift is announced (and its tombstone kept
// to announce again); a peer's ban unbanned here is lifted here only: its tombstone keeps
// that peer's re-announcements of it out until it would have expired.
void BanSync::on_lifted_here(const BanPrefix &prefix, const Known &k, uint64_t now_ns, uint64_t now_unix_ms,
                             std::vector<BanNotice> *out) {
  if (k.remote) {
    if (!keep_peer_tombstone({prefix, k.node}, Tombstone{k.set_unix_ms, k.expires_ns})) counters_.refused_tombstones++;
    return;
  }
  if (tombstones_.size() < kMaxBanTombstones || tombstones_.count(prefix))
    tombstones_[prefix] = Tombstone{now_unix_ms, now_ns + kBanTombstoneNs};
  else counters_.refused_tombstones++;  // announced once, not again
  out->push_back(lift_notice(prefix, now_unix_ms));
}

void BanSync::announce_tombstones(std::vector<BanNotice> *out) {
  for (const auto &[prefix, t] : tombstones_) {
    if (std::any_of(out->begin(), out->end(), [&](const BanNotice &n) { return n.remove && n.prefix == prefix; }))
      continue;
    out->push_back(lift_notice(prefix, t.unix_ms));
  }
}

// The bans now against known_: lifted ones (gone before their expiry) see on_lifted_here;
// our own new or changed ones (all of them when `full`) are sets to announce.
void BanSync::rescan(uint64_t now_ns, uint64_t now_unix_ms, bool full, std::vector<BanNotice> *out) {
  std::vector<Ban> bans;
  std::string err;
  if (!store_.list(&bans, &err, false)) {
    DT_WARN("reading the bans failed: %s", err.c_str());
    return;
  }
  std::map<BanPrefix, Known> now_known;
  for (const Ban &b : bans)
    now_known[b.prefix] = Known{b.expires_ns, b.set_unix_ms, b.remote, b.remote ? ban_origin_node(b) : ""};
  for (const auto &[prefix, k] : known_)
    if (!now_known.count(prefix) && k.expires_ns > now_ns) on_lifted_here(prefix, k, now_ns, now_unix_ms, out);
  for (const Ban &b : bans) {
    if (b.remote || b.expires_ns <= now_ns) continue;
    auto t = tombstones_.find(b.prefix);
    if (t != tombstones_.end() && t->second.unix_ms <= b.set_unix_ms) tombstones_.erase(t);  // banned again
    auto old = known_.find(b.prefix);
    const bool changed = old == known_.end() || old->second.expires_ns != b.expires_ns ||
                         old->second.set_unix_ms != b.set_unix_ms || old->second.remote;
    if (full || changed) out->push_back(set_notice(b, now_ns));
  }
  if (full) announce_tombstones(out);
  for (const BanNotice &n : *out) (n.remove ? counters_.lifts_announced : counters_.announced)++;
  known_ = std::move(now_known);
  count_known();
  counters_.tombstones = tombstones_.size() + peer_tombstones_.size();
}

void BanSync::count_known() {
  peer_bans_.clear();
  remote_bans_ = 0;
  for (const auto &[p, k] : known_)
    if (k.remote) peer_bans_[k.node]++, remote_bans_++;
}

void BanSync::apply(const std::string &from, const std::vector<BanNotice> &notices, uint64_t now_ns,
                    uint64_t peer_now_ms) {
  for (const BanNotice &n : notices) {
    if (n.remove) apply_lift(from, n, now_ns, peer_now_ms);
    else apply_set(from, n, now_ns, peer_now_ms);
  }
}

void BanSync::refuse(uint64_t *counter, const std::string &from, const BanNotice &n, const std::string &why,
                     uint64_t now_ns) {
  (*counter)++;
  log_limited(refuse_log_, LogLevel::Warn, now_ns, "refused the %s of %s from %s: %s", n.remove ? "lift" : "ban",
              ban_prefix_text(n.prefix).c_str(), from.c_str(), why.c_str());
}

// The policy's checks of a peer's set that need no ban map (ban_policy.h, never_ban.h).
bool BanSync::admit_set(const std::string &from, const BanNotice &n, uint64_t now_ns, uint64_t peer_now_ms) {
  if (n.remaining_ms == 0 || n.remaining_ms > kMaxBanNs / 1'000'000)
    return refuse(&counters_.rejected_duration, from, n, "no duration, or longer than 30 days", now_ns), false;
  if (!policy_.allows_peer(from))
    return refuse(&counters_.refused_peer, from, n, "this peer may not ban here (--peer-bans)", now_ns), false;
  if (const NoticeTime t = check_notice_time(n.unix_ms, peer_now_ms); t != NoticeTime::Ok)
    return refuse(&counters_.refused_time, from, n,
                  t == NoticeTime::Future ? "set in the future of the peer's clock" : "set over 30 days ago", now_ns),
           false;
  if (ban_too_wide(n.prefix, policy_.min_prefix))
    return refuse(&counters_.refused_prefix, from, n,
                  "wider than --peer-ban-min-prefix " + ban_min_prefix_text(policy_.min_prefix), now_ns),
           false;
  if (std::string what; never_.overlaps(n.prefix, &what))
    return refuse(&counters_.refused_never_ban, from, n, "it covers " + what + " (never banned)", now_ns), false;
  return true;
}

void BanSync::apply_set(const std::string &from, const BanNotice &n, uint64_t now_ns, uint64_t peer_now_ms) {
  if (!admit_set(from, n, now_ns, peer_now_ms)) return;
  const std::string node = origin_node_of(from);
  auto t = peer_tombstones_.find({n.prefix, node});
  if (t != peer_tombstones_.end() && t->second.unix_ms >= n.unix_ms) {  // lifted after it was set
    counters_.ignored_stale++;
    return;
  }
  auto old = store_.find(n.prefix);
  if (old && (!old->remote || ban_origin_node(*old) != node)) {  // this host's, or another peer's
    counters_.ignored_held++;
    return;
  }
  if (old && old->set_unix_ms > n.unix_ms) {  // the ban held here is newer
    counters_.ignored_stale++;
    return;
  }
  const bool clamped = n.remaining_ms * 1'000'000 > policy_.max_duration_ns;
  const uint64_t expires = now_ns + std::min(n.remaining_ms * 1'000'000, policy_.max_duration_ns);
  const uint64_t drift = old ? (old->expires_ns > expires ? old->expires_ns - expires : expires - old->expires_ns) : 0;
  if (old && old->set_unix_ms == n.unix_ms && (clamped || drift < 2'000'000'000ull)) return;  // a re-announcement
  if (!old) {
    if (remote_bans_ >= kMaxPeerBans)
      return refuse(&counters_.rejected_cap, from, n, "16,384 peers' bans here", now_ns);
    if (auto p = peer_bans_.find(node); (p == peer_bans_.end() ? 0 : p->second) >= policy_.max_per_peer)
      return refuse(&counters_.refused_peer_cap, from, n,
                    "this peer's bans here are at --peer-ban-max " + std::to_string(policy_.max_per_peer), now_ns);
    if (!rate_.take(node, policy_.rate_per_s, now_ns))
      return refuse(&counters_.refused_rate, from, n,
                    "over --peer-ban-rate " + std::to_string(policy_.rate_per_s) + " new bans a second", now_ns);
  }
  if (clamped) counters_.clamped++;
  install(from, n, now_ns, expires, old.has_value());
}

void BanSync::install(const std::string &from, const BanNotice &n, uint64_t now_ns, uint64_t expires, bool existed) {
  Ban b;
  b.prefix = n.prefix;
  b.expires_ns = expires;
  b.set_unix_ms = n.unix_ms;
  b.reason = n.reason;
  b.origin = (n.origin.empty() || n.origin == "local" ? from : from + "/" + n.origin).substr(0, kMaxBanOrigin);
  b.who = n.who;
  b.remote = true;
  std::string err;
  if (!store_.set(b, &err)) {
    counters_.rejected_write++;
    DT_WARN("cannot install the ban of %s from %s: %s", ban_prefix_text(n.prefix).c_str(), from.c_str(), err.c_str());
    return;
  }
  (existed ? counters_.updated : counters_.learned)++;
  const std::string node = origin_node_of(from);
  if (!existed) peer_bans_[node]++, remote_bans_++;
  known_[n.prefix] = Known{expires, n.unix_ms, true, node};
  if (on_installed_) on_installed_(b);
  if (!existed)
    DT_INFO("ban of %s from %s (%s) for %s: %s", ban_prefix_text(n.prefix).c_str(), from.c_str(), b.origin.c_str(),
            format_remaining(expires - now_ns).c_str(), n.reason.c_str());
}

// A peer's tombstone, if there is room (kMaxBanTombstones, and the peer's max_per_peer).
bool BanSync::keep_peer_tombstone(const PeerKey &key, const Tombstone &t) {
  auto it = peer_tombstones_.find(key);
  if (it != peer_tombstones_.end()) {
    if (t.unix_ms > it->second.unix_ms) it->second = t;
    return true;
  }
  size_t &of_peer = peer_tombstone_counts_[key.second];
  if (peer_tombstones_.size() >= kMaxBanTombstones || of_peer >= policy_.max_per_peer) {
    if (of_peer == 0) peer_tombstone_counts_.erase(key.second);
    return false;
  }
  of_peer++;
  peer_tombstones_.emplace(key, t);
  return true;
}

void BanSync::apply_lift(const std::string &from, const BanNotice &n, uint64_t now_ns, uint64_t peer_now_ms) {
  if (!policy_.allows_peer(from))
    return refuse(&counters_.refused_peer, from, n, "this peer may not ban here (--peer-bans)", now_ns);
  if (const NoticeTime t = check_notice_time(n.unix_ms, peer_now_ms); t != NoticeTime::Ok)
    return refuse(&counters_.refused_time, from, n,
                  t == NoticeTime::Future ? "lifted in the future of the peer's clock" : "lifted over 30 days ago",
                  now_ns);
  const std::string node = origin_node_of(from);
  auto old = store_.find(n.prefix);
  if (old && (!old->remote || ban_origin_node(*old) != node))
    return refuse(&counters_.refused_origin, from, n,
                  "the ban is " + (old->remote ? ban_origin_node(*old) + "'s" : std::string("this host's")) +
                      " (only its origin lifts it)",
                  now_ns);
  // The tombstone lives kBanTombstoneNs from the lift at the origin, not from now.
  const uint64_t age_ms = peer_now_ms > n.unix_ms ? peer_now_ms - n.unix_ms : 0;
  if (age_ms < kBanTombstoneNs / 1'000'000 &&
      !keep_peer_tombstone({n.prefix, node}, Tombstone{n.unix_ms, now_ns + kBanTombstoneNs - age_ms * 1'000'000}))
    refuse(&counters_.refused_tombstones, from, n, "no room for its tombstone (lifted all the same)", now_ns);
  counters_.tombstones = tombstones_.size() + peer_tombstones_.size();
  if (!old || old->set_unix_ms > n.unix_ms) return;  // none, or set again after the lift
  bool found = false;
  std::string err;
  if (!store_.remove(n.prefix, &found, &err)) {
    DT_WARN("cannot lift the ban of %s: %s", ban_prefix_text(n.prefix).c_str(), err.c_str());
    return;
  }
  known_.erase(n.prefix);
  if (!found) return;
  counters_.lifted++;
  if (auto p = peer_bans_.find(node); p != peer_bans_.end() && p->second > 0) p->second--, remote_bans_--;
  DT_INFO("ban of %s lifted by %s, its origin", ban_prefix_text(n.prefix).c_str(), from.c_str());
}

}  // namespace dt
