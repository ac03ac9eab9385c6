// ban_policy.cpp - what this host takes of bans it did not set itself (ban_policy.h).
#include "bans/ban_policy.h"

#include <algorithm>

#include "common/parse_values.h"

namespace dt {

bool parse_ban_min_prefix(const std::string &text, BanMinPrefix *out, std::string *err) {
  const size_t comma = text.find(',');
  uint64_t v4 = 0, v6 = 0;
  std::string why;
  if (comma == std::string::npos || !parse_count(text.substr(0, comma), 1, 32, &v4, &why) ||
      !parse_count(text.substr(comma + 1), 1, 128, &v6, &why)) {
    *err = "'" + text + "' is not V4,V6 prefix lengths: give the IPv4 (1..32) and IPv6 (1..128) lengths, e.g. 16,48" +
           (why.empty() ? "" : " (" + why + ")");
    return false;
  }
  out->v4 = static_cast<uint8_t>(v4);
  out->v6 = static_cast<uint8_t>(v6);
  return true;
}

bool ban_too_wide(const BanPrefix &p, const BanMinPrefix &min) { return p.len < (p.is_v6 ? min.v6 : min.v4); }

std::string ban_min_prefix_text(const BanMinPrefix &min) {
  return std::to_string(min.v4) + "," + std::to_string(min.v6);
}

bool PeerBanPolicy::allows_peer(const std::string &node_id) const { return peers.allows(node_id); }

bool parse_peer_bans(const std::string &text, PeerBanPolicy *out, std::string *err) {
  return parse_peer_set(text, &out->peers, err);
}

NoticeTime check_notice_time(uint64_t unix_ms, uint64_t peer_now_ms) {
  if (unix_ms > peer_now_ms + kBanClockSlackMs) return NoticeTime::Future;
  if (unix_ms + kMaxBanNs / 1'000'000 < peer_now_ms) return NoticeTime::Past;
  return NoticeTime::Ok;
}

void PeerBanRate::forget_full(uint64_t rate_per_s, uint64_t now_ns) {
  const double burst = static_cast<double>(rate_per_s * kBanRateBurstSeconds);
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    const double tokens = it->second.tokens + static_cast<double>(now_ns - it->second.at_ns) * 1e-9 * rate_per_s;
    it = tokens >= burst ? buckets_.erase(it) : std::next(it);
  }
}

bool PeerBanRate::take(const std::string &node_id, uint64_t rate_per_s, uint64_t now_ns) {
  const double burst = static_cast<double>(rate_per_s * kBanRateBurstSeconds);
  auto it = buckets_.find(node_id);
  if (it == buckets_.end()) {
    if (buckets_.size() >= kMaxBanRatePeers) forget_full(rate_per_s, now_ns);
    if (buckets_.size() >= kMaxBanRatePeers) return false;
    it = buckets_.emplace(node_id, Bucket{burst, now_ns}).first;
  }
  Bucket &b = it->second;
  if (now_ns > b.at_ns)
    b.tokens = std::min(burst, b.tokens + static_cast<double>(now_ns - b.at_ns) * 1e-9 * rate_per_s);
  b.at_ns = std::max(b.at_ns, now_ns);
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

}  // namespace dt
