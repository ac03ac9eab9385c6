// report_router.cpp - the owner reporting scheme's routing (report_router.h).
#include "cluster_core/report_router.h"

#include <algorithm>

#include "cluster_core/source_owner.h"

namespace dt {

void ReportRouter::set_members(std::vector<std::string> ids, size_t self) {
  members_ = std::move(ids);
  self_ = self < members_.size() ? self : 0;
  owner_cache_.clear();
}

size_t ReportRouter::owner(const dt_key &k) {
  if (members_.size() <= 1) return self_;
  dt_key addr_only = k;
  addr_only.rule = 0;  // one owner per address, whatever the rule
  auto [it, fresh] = owner_cache_.emplace(addr_only, 0);
  if (fresh) it->second = static_cast<uint32_t>(source_owner(members_, addr_only));
  return it->second;
}

bool ReportRouter::shared(const dt_key &k, uint64_t now_ns) const {
  auto it = shared_until_.find(k);
  return it != shared_until_.end() && it->second > now_ns;
}

std::vector<dt_key> ReportRouter::shared_keys(uint64_t now_ns, size_t max) const {
  std::vector<dt_key> keys;
  for (const auto &[k, until] : shared_until_) {
    if (keys.size() >= max) break;
    if (until > now_ns) keys.push_back(k);
  }
  return keys;
}

RoutedReport ReportRouter::route(const std::vector<ReportEntry> &served, uint64_t now_ns) {
  sweep(now_ns);
  RoutedReport r;
  const bool mesh = members_.size() < kOwnerMinMembers;
  for (const ReportEntry &e : served) {
    if (e.hits == 0) continue;
    if (mesh || shared(e.key, now_ns)) {
      heard(e.key, now_ns);  // still served here: still shared
      r.everyone.push_back(e);
      continue;
    }
    const size_t o = owner(e.key);
    if (o != self_) {
      r.to_owner[o].push_back(e);
      continue;
    }
    for (RelayEntry &x : contribute(e.key, self_, e.hits, now_ns)) r.relays.push_back(std::move(x));
  }
  return r;
}

std::vector<RelayEntry> ReportRouter::contribute(const dt_key &k, size_t from, uint64_t hits, uint64_t now_ns) {
  const auto member = static_cast<uint32_t>(from);
  if (shared(k, now_ns)) return {RelayEntry{member, ReportEntry{k, hits}}};
  std::vector<Pending> &waiting = pending_[k];
  std::erase_if(waiting, [&](const Pending &p) { return p.at_ns + opt_.pending_max_age_ns < now_ns; });
  waiting.push_back({member, hits, now_ns});
  if (std::none_of(waiting.begin(), waiting.end(), [&](const Pending &p) { return p.from != member; })) return {};
  std::vector<RelayEntry> out;
  for (const Pending &p : waiting) out.push_back({p.from, ReportEntry{k, p.hits}});
  pending_.erase(k);
  heard(k, now_ns);
  return out;
}

// Forgets sources not shared any more and hits too old to relay (bounded memory: every
// entry goes within max(shared_keep, pending_max_age) of its last use).
void ReportRouter::sweep(uint64_t now_ns) {
  if (now_ns < next_sweep_ns_) return;
  next_sweep_ns_ = now_ns + std::max<uint64_t>(opt_.shared_keep_ns / 2, 1);
  std::erase_if(shared_until_, [&](const auto &kv) { return kv.second <= now_ns; });
  for (auto it = pending_.begin(); it != pending_.end();) {
    std::erase_if(it->second, [&](const Pending &p) { return p.at_ns + opt_.pending_max_age_ns < now_ns; });
    it = it->second.empty() ? pending_.erase(it) : std::next(it);
  }
}

}  // namespace dt
