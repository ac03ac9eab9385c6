// ban_policy.h - what this host takes of bans it did not set itself (docs/bans.md "What a
// member may ban"): the peers' bans (ban_sync.h) and the CrowdSec bouncer's (crowdsec/).
// Pure logic: no maps, no sockets.
//
//   min prefix   a ban wider than /16 (IPv4) or /48 (IPv6), by default, is refused: a
//                member's 0.0.0.0/1 would black out half of IPv4 on every host;
//   peers        which peers may ban at all (all, none, or a list of node ids);
//   duration     a peer's ban lasts at most max_duration here (longer ones are cut to it:
//                its origin's re-announcements bring it back while the origin holds it);
//   per peer     at most max_per_peer of a peer's bans in force here, and at most rate
//                new ones a second (bursts of kBanRateBurstSeconds worth): one member
//                cannot fill the 16,384 learned bans for everyone;
//   times        a notice's set or lift time (the origin's clock) may not be later than
//                the origin's clock now (as this host knows it) + kBanClockSlackMs, nor
//                older than the longest ban (kMaxBanNs).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bans/ban_types.h"
#include "common/peer_set.h"

namespace dt {

constexpr uint64_t kBanClockSlackMs = 5000;
constexpr uint64_t kBanRateBurstSeconds = 10;
constexpr size_t kMaxBanRatePeers = 4096;  // peers whose rate is tracked at once

// The narrowest a ban may be too wide: bans shorter than these lengths are refused.
struct BanMinPrefix {
  uint8_t v4 = 16, v6 = 48;
};
// "16,48" (IPv4,IPv6): lengths 1..32 and 1..128. False with *err.
bool parse_ban_min_prefix(const std::string &text, BanMinPrefix *out, std::string *err);
// Whether `p` is wider than `min` allows.
bool ban_too_wide(const BanPrefix &p, const BanMinPrefix &min);
// "16,48".
std::string ban_min_prefix_text(const BanMinPrefix &min);

struct PeerBanPolicy {
  PeerSet peers;  // which peers may ban here (--peer-bans)
  BanMinPrefix min_prefix;
  uint64_t max_duration_ns = 86'400'000'000'000ull;  // a day
  uint64_t max_per_peer = 4096;
  uint64_t rate_per_s = 100;  // new bans a second, per peer
  bool allows_peer(const std::string &node_id) const;
};
// --peer-bans: "all", "none", or "NODE[,NODE...]". False with *err.
bool parse_peer_bans(const std::string &text, PeerBanPolicy *out, std::string *err);

enum class NoticeTime { Ok, Future, Past };
// Whether a notice's time (unix_ms, the origin's clock) is credible when the origin's
// clock reads peer_now_ms.
NoticeTime check_notice_time(uint64_t unix_ms, uint64_t peer_now_ms);

// Per-peer token buckets for new bans: rate_per_s a second, bursts of kBanRateBurstSeconds
// worth. At most kMaxBanRatePeers peers tracked (those with full buckets are forgotten
// first; past that a new peer is refused).
class PeerBanRate {
 public:
  // Takes one token of `node_id`'s bucket at now_ns; false if it has none.
  bool take(const std::string &node_id, uint64_t rate_per_s, uint64_t now_ns);

 private:
  struct Bucket {
    double tokens = 0;
    uint64_t at_ns = 0;
  };
  void forget_full(uint64_t rate_per_s, uint64_t now_ns);
  std::map<std::string, Bucket> buckets_;
};

}  // namespace dt
