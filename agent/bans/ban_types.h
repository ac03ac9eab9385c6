// ban_types.h - a ban as the agent handles it (docs/bans.md): an IPv4 or IPv6 prefix
// dropped until its expiry, with why, where it comes from and who set it; and the
// text forms of its prefix and duration.
//
// Contract (agent ban, the query socket's BAN, the CrowdSec bouncer, peers' bans):
//   prefix    an address (a /32 or /128) or ADDR/LEN; host bits are cleared
//             ("198.18.0.7/24" bans 198.18.0.0/24), /0 is refused;
//   duration  1s .. kMaxBanNs (30 days): "90s", "10m", "2h", "7d";
//   reason    up to kMaxBanReason printable bytes (no newline, NUL or control bytes);
//   origin    "local" (agent ban), "query" (the query socket), "crowdsec", or for a
//             ban learned from a peer that peer's node id ("h1", "h1/crowdsec");
//   who       "uid 1000 (agent ban)", "uid 33 (query socket)", "crowdsec bouncer", ...
#pragma once

#include <cstdint>
#include <string>

#include "dthrottle/common.h"

namespace dt {

constexpr uint64_t kMaxBanNs = 30ull * 86400 * 1'000'000'000;  // the longest ban: 30 days
constexpr size_t kMaxBanReason = DT_BAN_REASON_LEN - 1;
constexpr size_t kMaxBanOrigin = DT_BAN_ORIGIN_LEN - 1;
constexpr size_t kMaxBanWho = DT_BAN_WHO_LEN - 1;

// A banned prefix: the 16-byte address as the maps hold sources (IPv4 mapped, host bits
// cleared) and its length within its family (1..32, 1..128).
struct BanPrefix {
  uint8_t addr[16] = {};
  uint8_t len = 0;
  bool is_v6 = false;
  bool operator<(const BanPrefix &o) const;
  bool operator==(const BanPrefix &o) const;
};

// One ban, as the store holds it and `agent bans` shows it.
struct Ban {
  BanPrefix prefix;
  uint64_t expires_ns = 0;   // CLOCK_MONOTONIC (the kernel's bpf_ktime_get_ns)
  uint64_t set_unix_ms = 0;  // when it was set, at its origin
  std::string reason, origin, who;
  bool remote = false;                   // learned from a peer: this host does not announce it
  uint32_t slot = 0;                     // its key in ban_info and ban_counts (the store's business)
  uint64_t dropped = 0, would_drop = 0;  // packets, summed over CPUs (BanStore::list)
};

// "198.18.0.1", "198.18.0.0/24", "2001:2::/48": an address, or ADDR/LEN. Host bits are
// cleared. False with a sentence in *err (what is accepted).
bool parse_ban_prefix(const std::string &text, BanPrefix *out, std::string *err);
// The prefix as text: an address alone for a /32 or /128, else ADDR/LEN.
std::string ban_prefix_text(const BanPrefix &p);
// Whether `p` covers the 16-byte (IPv4-mapped) address `addr`.
bool ban_prefix_covers(const BanPrefix &p, const uint8_t *addr);

// "10m", "2h", "7d", "90" (seconds): 1s to 30 days. False with a sentence in *err.
bool parse_ban_duration(const std::string &text, uint64_t *ns, std::string *err);
// "9m 58s", "2h 0m", "6d 23h": a remaining time for people.
std::string format_remaining(uint64_t ns);

// A reason, origin or who: at most `max` bytes, none a control byte (newline, NUL, ...).
bool valid_ban_text(const std::string &s, size_t max);

}  // namespace dt

namespace dt {

// A ban as it travels between peers (cluster_core/peer_protocol.h, the bans message): set, or
// lifted. Sets carry what is left of the ban (the receiver's clock is not the sender's).
struct BanNotice {
  BanPrefix prefix;
  bool remove = false;
  uint64_t remaining_ms = 0;        // set: 1 .. kMaxBanNs in ms
  uint64_t unix_ms = 0;             // set: when it was set at its origin; remove: when it was lifted
  std::string reason, origin, who;  // set only (valid_ban_text, their kMaxBan* lengths)
};

}  // namespace dt
