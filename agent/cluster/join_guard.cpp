// join_guard.cpp - a joiner's peer-reported sources start empty (join_guard.h).
#include "cluster/join_guard.h"

namespace dt {

void JoinGuard::first_report(uint64_t peer_epoch, uint64_t now_ns) {
  if (decided_) return;
  decided_ = true;
  if (peer_epoch >= opt_.running_epoch && opt_.window_ns > 0) until_ns_ = now_ns + opt_.window_ns;
}

uint64_t JoinGuard::extra(const dt_key &k, uint64_t burst_hits, uint64_t now_ns) {
  if (!active(now_ns) || burst_hits == 0) {
    if (!active(now_ns) && !charged_.empty()) charged_.clear();  // the window is over: no memory kept
    return 0;
  }
  if (!charged_.insert(k).second) return 0;
  charged_count_++;
  return burst_hits;
}

std::vector<uint64_t> rule_burst_hits(const std::vector<dt_policy> &policies) {
  std::vector<uint64_t> out;
  for (const dt_policy &p : policies) out.push_back(p.interval_ns ? p.burst_ns / p.interval_ns : 0);
  return out;
}

}  // namespace dt
