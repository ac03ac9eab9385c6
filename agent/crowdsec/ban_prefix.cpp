// ban_prefix.cpp - banned prefixes to and from text (see ban_prefix.h: replaced by
// agent/bans/ban_types.h once merged).
#include "crowdsec/ban_prefix.h"

#include <arpa/inet.h>

#include <cstring>

#include "common/address.h"

namespace dt {

bool BanPrefix::operator<(const BanPrefix &o) const {
  if (const int c = memcmp(addr, o.addr, sizeof addr); c != 0) return c < 0;
  return len < o.len;
}

bool BanPrefix::operator==(const BanPrefix &o) const { return memcmp(addr, o.addr, sizeof addr) == 0 && len == o.len; }

bool parse_ban_prefix(const std::string &text, BanPrefix *out, std::string *err) {
  std::string addr = text, len;
  const size_t slash = text.find('/');
  if (slash != std::string::npos) addr = text.substr(0, slash), len = text.substr(slash + 1);
  BanPrefix p;
  if (inet_pton(AF_INET, addr.c_str(), &p.addr[12]) == 1) {
    memcpy(p.addr, kV4MappedPrefix, sizeof kV4MappedPrefix);
  } else if (inet_pton(AF_INET6, addr.c_str(), p.addr) == 1) {
    p.is_v6 = true;
  } else {
    return *err = "'" + text + "' is not an IPv4 or IPv6 address or prefix", false;
  }
  const int max = p.is_v6 ? 128 : 32;
  int bits = max;
  if (slash != std::string::npos) {
    const bool digits = !len.empty() && len.size() <= 3 && len.find_first_not_of("0123456789") == std::string::npos;
    bits = digits ? std::stoi(len) : -1;
    if (bits < 1 || bits > max) return *err = "'" + text + "': the length must be 1 to " + std::to_string(max), false;
  }
  p.len = static_cast<uint8_t>(bits);
  for (int i = (p.is_v6 ? 0 : 96) + bits; i < 128; i++) p.addr[i / 8] &= static_cast<uint8_t>(~(0x80 >> (i % 8)));
  *out = p;
  return true;
}

std::string ban_prefix_text(const BanPrefix &p) {
  dt_key key{};
  memcpy(key.addr, p.addr, 16);
  std::string text = key_to_string(key);
  if (p.len != (p.is_v6 ? 128 : 32)) text += "/" + std::to_string(p.len);
  return text;
}

}  // namespace dt
