// ban_types.cpp - ban prefixes and durations to and from text.
#include "bans/ban_types.h"

#include <arpa/inet.h>

#include <cstring>

#include "common/address.h"
#include "common/parse_values.h"

namespace dt {
namespace {

// Clears the bits of the 16-byte address past `bits` (counted from the start of the
// 16 bytes: an IPv4 /24 is bits 96 + 24).
void clear_host_bits(uint8_t *addr, unsigned bits) {
  for (unsigned i = 0; i < 16; i++) {
    const unsigned first = i * 8;
    if (first >= bits) addr[i] = 0;
    else if (bits - first < 8) addr[i] &= static_cast<uint8_t>(0xff << (8 - (bits - first)));
  }
}

}  // namespace

bool BanPrefix::operator<(const BanPrefix &o) const {
  if (int c = memcmp(addr, o.addr, sizeof addr); c != 0) return c < 0;
  return len < o.len;
}

bool BanPrefix::operator==(const BanPrefix &o) const {
  return memcmp(addr, o.addr, sizeof addr) == 0 && len == o.len && is_v6 == o.is_v6;
}

bool parse_ban_prefix(const std::string &text, BanPrefix *out, std::string *err) {
  const size_t slash = text.find('/');
  const std::string host = text.substr(0, slash);
  dt_key k{};
  if (host.empty() || !key_from_string(host, &k)) {
    *err = "'" + text +
           "' is not an address or prefix: give an IPv4 or IPv6 address (198.18.0.7, 2001:2::7) or "
           "a prefix (198.18.0.0/24, 2001:2::/48)";
    return false;
  }
  BanPrefix p;
  p.is_v6 = !addr_is_v4(k.addr);
  const unsigned max = p.is_v6 ? 128 : 32;
  uint64_t len = max;
  if (slash != std::string::npos) {
    std::string why;
    if (!parse_count(text.substr(slash + 1), 1, max, &len, &why)) {
      *err = "'" + text + "': the prefix length must be 1.." + std::to_string(max) + " (" + why + ")";
      return false;
    }
  }
  memcpy(p.addr, k.addr, 16);
  p.len = static_cast<uint8_t>(len);
  clear_host_bits(p.addr, (p.is_v6 ? 0 : 96) + p.len);
  *out = p;
  return true;
}

std::string ban_prefix_text(const BanPrefix &p) {
  dt_key k{};
  memcpy(k.addr, p.addr, 16);
  std::string s = key_to_string(k);
  if (p.len != (p.is_v6 ? 128 : 32)) s += "/" + std::to_string(p.len);
  return s;
}

bool ban_prefix_covers(const BanPrefix &p, const uint8_t *addr) {
  if (p.is_v6 == addr_is_v4(addr)) return false;
  uint8_t masked[16];
  memcpy(masked, addr, 16);
  clear_host_bits(masked, (p.is_v6 ? 0 : 96) + p.len);
  return memcmp(masked, p.addr, 16) == 0;
}

bool parse_ban_duration(const std::string &text, uint64_t *ns, std::string *err) {
  std::string why;
  uint64_t v = 0;
  bool ok;
  if (!text.empty() && text.back() == 'd') {
    uint64_t days = 0;
    ok = parse_count(text.substr(0, text.size() - 1), 1, 30, &days, &why);
    v = days * 86400 * 1'000'000'000ull;
  } else {
    ok = parse_duration(text, &v, &why);
  }
  if (!ok || v < 1'000'000'000ull || v > kMaxBanNs) {
    *err = "'" + text + "' is not a ban duration: give 1s to 30d, e.g. 90s, 10m, 2h or 7d" +
           (why.empty() ? "" : " (" + why + ")");
    return false;
  }
  *ns = v;
  return true;
}

std::string format_remaining(uint64_t ns) {
  const uint64_t s = ns / 1'000'000'000ull;
  char buf[48];
  if (s >= 86400)
    snprintf(buf, sizeof buf, "%llud %lluh", (unsigned long long)(s / 86400), (unsigned long long)(s % 86400 / 3600));
  else if (s >= 3600)
    snprintf(buf, sizeof buf, "%lluh %llum", (unsigned long long)(s / 3600), (unsigned long long)(s % 3600 / 60));
  else if (s >= 60)
    snprintf(buf, sizeof buf, "%llum %llus", (unsigned long long)(s / 60), (unsigned long long)(s % 60));
  else snprintf(buf, sizeof buf, "%llus", (unsigned long long)s);
  return buf;
}

bool valid_ban_text(const std::string &s, size_t max) {
  if (s.size() > max) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

}  // namespace dt
