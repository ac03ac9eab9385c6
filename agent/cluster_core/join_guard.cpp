// join_guard.cpp - a joiner's peer-reported sources start empty (join_guard.h).
#include "cluster_core/join_guard.h"

namespace dt {

void JoinGuard::heard(const std::string &peer, uint64_t peer_epoch, uint64_t now_ns) {
  if (!decided_) {
    decided_ = true;
    if (peer_epoch >= opt_.running_epoch && opt_.window_ns > 0) until_ns_ = now_ns + opt_.window_ns;
  }
  if (active(now_ns)) first_epoch_.try_emplace(peer, peer_epoch);
  else forget();  // the agent calls extra() only while active: the memory goes here
}

bool JoinGuard::in_flight(const std::string &peer, uint64_t peer_epoch) const {
  const auto it = first_epoch_.find(peer);
  return it != first_epoch_.end() && peer_epoch <= it->second + opt_.in_flight_periods;
}

// The window is over: no memory kept.
void JoinGuard::forget() {
  if (!seen_.empty()) seen_.clear();
  if (!first_epoch_.empty()) first_epoch_.clear();
}

uint64_t JoinGuard::extra(const std::string &peer, uint64_t peer_epoch, const dt_key &k, uint64_t burst_hits,
                          uint64_t now_ns) {
  if (!active(now_ns)) {
    forget();
    return 0;
  }
  if (burst_hits == 0) return 0;
  if (!seen_.insert(k).second) return 0;       // decided at its first debit, once
  if (!in_flight(peer, peer_epoch)) return 0;  // new since we joined: it starts full
  charged_count_++;
  return burst_hits;
}

std::vector<uint64_t> rule_burst_hits(const std::vector<dt_policy> &policies) {
  std::vector<uint64_t> out;
  for (const dt_policy &p : policies) out.push_back(p.interval_ns ? p.burst_ns / p.interval_ns : 0);
  return out;
}

}  // namespace dt
