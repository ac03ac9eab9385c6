// verified_share.cpp - sources verified by SYN cookies, between peers (see verified_share.h).
#include "cluster_core/verified_share.h"

#include <algorithm>
#include <unordered_map>

namespace dt {

std::vector<VerifiedSource> verified_to_share(const std::vector<dt_verified_rec> &recs, uint64_t now_ns,
                                              uint64_t *not_shared) {
  std::unordered_map<dt_key, size_t, KeyHash, KeyEq> at;  // a source's place in `out`
  std::vector<VerifiedSource> out;
  for (const dt_verified_rec &r : recs) {
    if (r.expires_ns <= now_ns) continue;
    const uint64_t ms = (r.expires_ns - now_ns) / 1000000;
    if (ms == 0) continue;
    const auto [it, fresh] = at.try_emplace(r.key, out.size());
    if (!fresh) {
      if (ms > out[it->second].remaining_ms) out[it->second].remaining_ms = ms;
      continue;
    }
    if (out.size() == kMaxVerifiedSharedPerPeriod) {
      at.erase(it);
      ++*not_shared;
      continue;
    }
    out.push_back({r.key, ms > kMaxVerifiedMs ? kMaxVerifiedMs : ms});
  }
  return out;
}

bool VerifiedIntake::admits(const std::string &node_id, size_t n) {
  if (peers_.allows(node_id)) return true;
  counts_.refused_peer += n;
  return false;
}

void VerifiedIntake::drop_expired(Held &h, uint64_t now_ns) {
  for (auto it = h.begin(); it != h.end();) {
    if (it->second > now_ns) {
      ++it;
      continue;
    }
    it = h.erase(it);
    held_total_--;
  }
}

// A sweep at now_ns leaves nothing expired at now_ns (what take() adds expires later), so
// one take() sweeps each set at most once: a message of sources past a full cap costs one
// walk of what is held, not one a source.
bool VerifiedIntake::room_for_one(Held &mine, uint64_t now_ns, Swept *swept) {
  if (mine.size() >= hold_.per_peer && !swept->mine) {
    drop_expired(mine, now_ns);
    swept->mine = true;
  }
  if (mine.size() >= hold_.per_peer) return false;
  if (held_total_ < hold_.all_peers) return true;
  if (!swept->all) {
    for (auto it = held_.begin(); it != held_.end();) {  // every peer's expired ones, empty peers forgotten
      drop_expired(it->second, now_ns);
      it = it->second.empty() && &it->second != &mine ? held_.erase(it) : std::next(it);
    }
    swept->all = swept->mine = true;
  }
  return held_total_ < hold_.all_peers;
}

bool VerifiedIntake::listed_holds(const dt_key &key, uint64_t now_ns) const {
  for (const auto &[node, h] : held_) {
    if (!peers_.allows(node)) continue;
    const auto it = h.find(key);
    if (it != h.end() && it->second > now_ns) return true;
  }
  return false;
}

std::vector<VerifiedDrop> VerifiedIntake::set_peers(PeerSet peers, uint64_t now_ns) {
  peers_ = std::move(peers);
  return withdraw_if([this](const std::string &node) { return !peers_.allows(node); }, now_ns);
}

std::vector<VerifiedDrop> VerifiedIntake::forget_peers(const std::vector<std::string> &node_ids, uint64_t now_ns) {
  return withdraw_if(
      [&node_ids](const std::string &node) {
        return std::find(node_ids.begin(), node_ids.end(), node) != node_ids.end();
      },
      now_ns);
}

// The peers that go are taken out first, so that listed_holds sees only those that stay.
std::vector<VerifiedDrop> VerifiedIntake::withdraw_if(const std::function<bool(const std::string &)> &goes,
                                                      uint64_t now_ns) {
  std::vector<Held> gone;
  for (auto it = held_.begin(); it != held_.end();) {
    if (!goes(it->first)) {
      ++it;
      continue;
    }
    held_total_ -= it->second.size();
    gone.push_back(std::move(it->second));
    it = held_.erase(it);
  }
  std::vector<VerifiedDrop> out;
  std::unordered_map<dt_key, size_t, KeyHash, KeyEq> at;  // a source's place in `out`: two gone peers' once
  for (const Held &h : gone) {
    for (const auto &[key, expires] : h) {
      if (expires <= now_ns || listed_holds(key, now_ns)) continue;
      const auto [place, fresh] = at.try_emplace(key, out.size());
      if (fresh) out.push_back({key, expires});
      else if (out[place->second].expires_ns < expires) out[place->second].expires_ns = expires;
    }
  }
  return out;
}

size_t VerifiedIntake::held_of(const std::string &node_id) const {
  const auto it = held_.find(node_id);
  return it == held_.end() ? 0 : it->second.size();
}

std::vector<VerifiedWrite> VerifiedIntake::take(const std::string &node_id, const std::vector<VerifiedSource> &sources,
                                                uint64_t age_ms, uint64_t now_ns) {
  std::vector<VerifiedWrite> out;
  Held &mine = held_[node_id];
  Swept swept;
  for (const VerifiedSource &v : sources) {
    if (v.remaining_ms <= age_ms) {
      counts_.expired_in_transit++;
      continue;
    }
    const auto had = mine.find(v.key);
    if ((had == mine.end() || had->second <= now_ns) && !room_for_one(mine, now_ns, &swept)) {
      counts_.over_peer_cap++;
      continue;
    }
    if (used_ >= per_period_) {
      counts_.over_budget++;
      continue;
    }
    uint64_t ttl_ns = (v.remaining_ms - age_ms) * 1000000;
    if (ttl_ns > ttl_cap_ns_) {
      ttl_ns = ttl_cap_ns_;
      counts_.capped++;
    }
    used_++;
    const auto [at, fresh] = mine.try_emplace(v.key, now_ns + ttl_ns);
    if (fresh) held_total_++;
    else if (at->second < now_ns + ttl_ns) at->second = now_ns + ttl_ns;
    out.push_back({v.key, ttl_ns});
  }
  if (mine.empty()) held_.erase(node_id);
  return out;
}

}  // namespace dt
