// verified_share.cpp - sources verified by SYN cookies, between peers (see verified_share.h).
#include "cluster_core/verified_share.h"

#include <unordered_map>

#include "common/key_hash.h"

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

std::vector<VerifiedWrite> VerifiedIntake::take(const std::vector<VerifiedSource> &sources, uint64_t age_ms) {
  std::vector<VerifiedWrite> out;
  for (const VerifiedSource &v : sources) {
    if (v.remaining_ms <= age_ms) {
      counts_.expired_in_transit++;
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
    out.push_back({v.key, ttl_ns});
  }
  return out;
}

}  // namespace dt
