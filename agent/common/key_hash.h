// key_hash.h - hashing and comparing bucket keys (rule + source address) for
// std::unordered_map / unordered_set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

#include "dthrottle/common.h"

namespace dt {

struct KeyHash {
  size_t operator()(const dt_key &k) const noexcept {
    uint64_t a, b;
    memcpy(&a, k.addr, 8);
    memcpy(&b, k.addr + 8, 8);
    return std::hash<uint64_t>()((a * 0x9e3779b97f4a7c15ull ^ b) + k.rule);
  }
};
struct KeyEq {
  bool operator()(const dt_key &a, const dt_key &b) const noexcept {
    return a.rule == b.rule && memcmp(a.addr, b.addr, sizeof a.addr) == 0;
  }
};

}  // namespace dt
