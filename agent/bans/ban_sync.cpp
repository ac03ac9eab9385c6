// ban_sync.cpp - bans across the cluster (ban_sync.h).
#include "bans/ban_sync.h"

#include <algorithm>

#include "common/log.h"

namespace dt {

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

std::vector<BanNotice> BanSync::on_period(uint64_t now_ns, uint64_t now_unix_ms) {
  counters_.swept += store_.sweep(now_ns);
  for (auto it = tombstones_.begin(); it != tombstones_.end();)
    it = it->second.until_ns <= now_ns ? tombstones_.erase(it) : std::next(it);
  const bool full = now_ns >= next_full_ns_;
  std::vector<BanNotice> out;
  const uint64_t gen = store_.generation();  // before the scan: a change during it is seen next time
  if (gen == seen_generation_ && !full) return out;
  seen_generation_ = gen;
  if (full) next_full_ns_ = now_ns + kBanAnnounceEveryNs;
  rescan(now_ns, now_unix_ms, full, &out);
  return out;
}

// The bans now against known_: lifted ones (gone before their expiry) become tombstones
// and lifts to announce; our own new or changed ones (all of them when `full`) sets.
void BanSync::rescan(uint64_t now_ns, uint64_t now_unix_ms, bool full, std::vector<BanNotice> *out) {
  std::vector<Ban> bans;
  std::string err;
  if (!store_.list(&bans, &err, false)) {
    DT_WARN("reading the bans failed: %s", err.c_str());
    return;
  }
  std::map<BanPrefix, Known> now_known;
  for (const Ban &b : bans) now_known[b.prefix] = Known{b.expires_ns, b.set_unix_ms, b.remote};
  for (const auto &[prefix, k] : known_) {
    if (now_known.count(prefix) || k.expires_ns <= now_ns) continue;  // still there, or expired
    tombstones_[prefix] = Tombstone{now_unix_ms, now_ns + kBanTombstoneNs};
    BanNotice lift;
    lift.prefix = prefix;
    lift.remove = true;
    lift.unix_ms = now_unix_ms;
    out->push_back(lift);
  }
  for (const Ban &b : bans) {
    auto t = tombstones_.find(b.prefix);
    if (t != tombstones_.end() && t->second.unix_ms <= b.set_unix_ms) tombstones_.erase(t);  // banned again
    if (b.remote || b.expires_ns <= now_ns) continue;
    auto old = known_.find(b.prefix);
    const bool changed = old == known_.end() || old->second.expires_ns != b.expires_ns ||
                         old->second.set_unix_ms != b.set_unix_ms || old->second.remote;
    if (full || changed) out->push_back(set_notice(b, now_ns));
  }
  if (full)
    for (const auto &[prefix, t] : tombstones_) {
      if (std::any_of(out->begin(), out->end(), [&](const BanNotice &n) { return n.remove && n.prefix == prefix; }))
        continue;
      BanNotice lift;
      lift.prefix = prefix;
      lift.remove = true;
      lift.unix_ms = t.unix_ms;
      out->push_back(lift);
    }
  for (const BanNotice &n : *out) (n.remove ? counters_.lifts_announced : counters_.announced)++;
  known_ = std::move(now_known);
}

size_t BanSync::remote_count() const {
  size_t n = 0;
  for (const auto &[p, k] : known_) n += k.remote;
  return n;
}

void BanSync::apply(const std::string &from, const std::vector<BanNotice> &notices, uint64_t now_ns) {
  for (const BanNotice &n : notices) {
    if (n.remove) apply_lift(n, now_ns);
    else apply_set(from, n, now_ns);
  }
}

void BanSync::apply_set(const std::string &from, const BanNotice &n, uint64_t now_ns) {
  if (n.remaining_ms == 0 || n.remaining_ms > kMaxBanNs / 1'000'000) {
    counters_.rejected_duration++;
    return;
  }
  auto t = tombstones_.find(n.prefix);
  if (t != tombstones_.end() && t->second.unix_ms >= n.unix_ms) {  // lifted after it was set
    counters_.ignored_stale++;
    return;
  }
  const uint64_t expires = now_ns + n.remaining_ms * 1'000'000;
  auto old = store_.find(n.prefix);
  if (old && old->set_unix_ms > n.unix_ms) {  // the ban held here is newer
    counters_.ignored_stale++;
    return;
  }
  const bool same = old && old->set_unix_ms == n.unix_ms && old->remote &&
                    (old->expires_ns > expires ? old->expires_ns - expires : expires - old->expires_ns) < 2'000'000'000ull;
  if (same) return;  // a re-announcement: nothing to write
  if (!old && remote_count() >= kMaxPeerBans) {
    counters_.rejected_cap++;
    return;
  }
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
  (old ? counters_.updated : counters_.learned)++;
  known_[n.prefix] = Known{expires, n.unix_ms, true};
  if (!old) DT_INFO("ban of %s from %s (%s) for %s: %s", ban_prefix_text(n.prefix).c_str(), from.c_str(),
                    b.origin.c_str(), format_remaining(n.remaining_ms * 1'000'000).c_str(), n.reason.c_str());
}

void BanSync::apply_lift(const BanNotice &n, uint64_t now_ns) {
  auto &t = tombstones_[n.prefix];
  if (n.unix_ms > t.unix_ms) t.unix_ms = n.unix_ms;
  t.until_ns = std::max(t.until_ns, now_ns + kBanTombstoneNs);
  auto old = store_.find(n.prefix);
  if (!old || old->set_unix_ms > n.unix_ms) return;  // none, or set again after the lift
  bool found = false;
  std::string err;
  if (!store_.remove(n.prefix, &found, &err)) {
    DT_WARN("cannot lift the ban of %s: %s", ban_prefix_text(n.prefix).c_str(), err.c_str());
    return;
  }
  known_.erase(n.prefix);
  if (found) {
    counters_.lifted++;
    DT_INFO("ban of %s lifted by a peer", ban_prefix_text(n.prefix).c_str());
  }
}

}  // namespace dt
