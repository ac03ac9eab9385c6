// source_owner.cpp - rendezvous hashing of sources over node ids (source_owner.h).
#include "cluster_core/source_owner.h"

#include <cstring>

namespace dt {
namespace {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull, kFnvPrime = 0x100000001b3ull;

uint64_t fnv1a(const void *data, size_t len, uint64_t h) {
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * kFnvPrime;
  return h;
}

// splitmix64's finalizer: FNV alone spreads the last bytes poorly.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t owner_weight(const std::string &node_id, const dt_key &k) {
  const uint64_t h = fnv1a(node_id.data(), node_id.size(), kFnvOffset);
  return mix(fnv1a(k.addr, sizeof k.addr, h));  // not the rule: peers number rules differently
}

size_t source_owner(const std::vector<std::string> &members, const dt_key &k) {
  size_t best = 0;
  uint64_t best_w = 0;
  for (size_t i = 0; i < members.size(); i++) {
    const uint64_t w = owner_weight(members[i], k);
    if (i == 0 || w > best_w) best = i, best_w = w;
  }
  return best;
}

}  // namespace dt
