// address.h - source addresses as the maps hold them (16 bytes, IPv4 mapped into
// IPv6), to and from text.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "dthrottle/common.h"

namespace dt {

// The first 12 bytes of an IPv4-mapped IPv6 address (::ffff:a.b.c.d): how keys,
// reports and rules hold IPv4 addresses.
inline constexpr uint8_t kV4MappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
// True if the 16-byte address is an IPv4 address in that form.
inline bool addr_is_v4(const uint8_t *addr) { return memcmp(addr, kV4MappedPrefix, sizeof kV4MappedPrefix) == 0; }

// "198.18.0.1" for IPv4-mapped keys, RFC 5952 text for IPv6.
std::string key_to_string(const dt_key &k);
// Parses an IPv4 or IPv6 address into a key; false if it is neither.
bool key_from_string(const std::string &s, dt_key *out);

}  // namespace dt
