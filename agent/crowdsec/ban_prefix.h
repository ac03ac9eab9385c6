// ban_prefix.h - a banned prefix and its text forms, as the bouncer needs them until the
// ban store (agent/bans/ban_types.h, same names and contract) is merged: then this file goes.
#pragma once

#include <cstdint>
#include <string>

namespace dt {

// A banned prefix: the 16-byte address as the maps hold sources (IPv4 mapped, host bits
// cleared) and its length within its family (1..32, 1..128).
struct BanPrefix {
  uint8_t addr[16] = {};
  uint8_t len = 0;
  bool is_v6 = false;
  bool operator<(const BanPrefix &o) const;
  bool operator==(const BanPrefix &o) const;
};

// "198.18.0.1", "198.18.0.0/24", "2001:2::/48": an address, or ADDR/LEN. Host bits are
// cleared; /0 is refused. False with a sentence in *err.
bool parse_ban_prefix(const std::string &text, BanPrefix *out, std::string *err);
// The prefix as text: an address alone for a /32 or /128, else ADDR/LEN.
std::string ban_prefix_text(const BanPrefix &p);

}  // namespace dt
