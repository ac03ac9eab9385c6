// slot_quota.cpp - the query server's per-user connection quotas (slot_quota.h).
#include "query/slot_quota.h"

#include <algorithm>

namespace dt {

size_t slot_quota(uid_t group, size_t cap) { return std::max<size_t>(1, group == kRemotePeers ? cap / 4 : cap / 2); }

namespace {

size_t held_by(const SlotHoldings &held, uid_t group) {
  auto it = held.find(group);
  return it == held.end() ? 0 : it->second;
}

// The group other than `except` holding the most over its quota, if any is over it.
std::optional<uid_t> most_over_quota(const SlotHoldings &held, uid_t except, size_t cap) {
  std::optional<uid_t> worst;
  size_t worst_excess = 0;
  for (const auto &[group, n] : held) {
    const size_t quota = slot_quota(group, cap);
    if (group == except || n <= quota || n - quota <= worst_excess) continue;
    worst = group;
    worst_excess = n - quota;
  }
  return worst;
}

}  // namespace

std::optional<uid_t> slot_victim(const SlotHoldings &held, uid_t newcomer, size_t cap) {
  if (auto over = most_over_quota(held, newcomer, cap)) return over;
  const size_t mine = held_by(held, newcomer);
  if (mine >= slot_quota(newcomer, cap)) return std::nullopt;
  std::optional<uid_t> largest;
  size_t most = 0;
  for (const auto &[group, n] : held)
    if (group != newcomer && n > most) largest = group, most = n;
  if (largest && most >= mine + 2) return largest;
  return std::nullopt;
}

}  // namespace dt
