// source_watch.cpp - which peers report one source, watched on request.
#include "cluster/source_watch.h"

#include <cstring>

#include "dthrottle/bucket.h"

namespace dt {

void SourceWatch::start(const uint8_t addr[16], uint64_t until_ns) {
  memcpy(addr_, addr, sizeof addr_);
  until_ns_ = until_ns;
  seen_.clear();
  active_ = true;
}

// A report's key is the source cut to the sender's rule prefix (a /24 rule reports
// 198.18.1.0 for 198.18.1.7): the key covers the address if cutting the address at the
// first bit where the two differ gives the key (a key prefix of IPv4 keeps the mapped
// prefix, at least 97 bits; of IPv6 at least 1).
static bool key_covers(const uint8_t key[16], const uint8_t addr[16]) {
  uint32_t bit = 0;
  while (bit < 128 && ((key[bit / 8] ^ addr[bit / 8]) & (0x80 >> (bit % 8))) == 0) bit++;
  if (bit == 128) return true;
  const bool v4 = memcmp(addr, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0;
  if (bit < (v4 ? 97u : 1u)) return false;
  uint8_t cut[16];
  memcpy(cut, addr, sizeof cut);
  dt_mask_addr(cut, bit);
  return memcmp(cut, key, sizeof cut) == 0;
}

void SourceWatch::observe(const std::string &node, const ReportBody &body) {
  if (!active_) return;
  for (const ReportEntry &e : body.entries) {
    if (!key_covers(e.key.addr, addr_)) continue;
    const std::string &rule = e.key.rule < body.rules.size() ? body.rules[e.key.rule] : std::string();
    auto &[hits, reports] = seen_[{node, rule}];
    hits += e.hits;
    reports++;
  }
}

std::vector<SourceWatch::Sighting> SourceWatch::take() {
  std::vector<Sighting> out;
  for (const auto &[who, counts] : seen_) out.push_back({who.first, who.second, counts.first, counts.second});
  seen_.clear();
  active_ = false;
  return out;
}

}  // namespace dt
