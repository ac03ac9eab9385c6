// peer_wire.h - what the report encoder (peer_encode.cpp) and its strict decoder
// (peer_decode.cpp) share: the magic, the little-endian writers, a bounds-checked reader
// and the validity rules both sides apply (peer_protocol.h is the format). Internal to
// cluster_core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "cluster_core/peer_protocol.h"
#include "common/address.h"

namespace dt::wire {

inline constexpr char kMagic[4] = {'D', 'T', 'R', 'P'};
// magic, version, flags, id length, recipient length, 4 x u64, 2 x u16
inline constexpr size_t kFixedBytes = 4 + 1 + 1 + 1 + 1 + 4 * 8 + 2 * 2;

inline bool is_v4(const dt_key &k) { return addr_is_v4(k.addr); }

inline void put_u64(std::string *out, uint64_t v) {
  for (int i = 0; i < 8; i++) out->push_back(static_cast<char>(v >> (8 * i)));
}
inline void put_u16(std::string *out, uint16_t v) {
  out->push_back(static_cast<char>(v));
  out->push_back(static_cast<char>(v >> 8));
}
inline void put_u32(std::string *out, uint32_t v) {
  for (int i = 0; i < 4; i++) out->push_back(static_cast<char>(v >> (8 * i)));
}
inline void put_varint(std::string *out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
inline size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}

// Bounds-checked reader over the message.
struct Reader {
  const uint8_t *p, *end;
  bool take(void *dst, size_t n) {
    if (static_cast<size_t>(end - p) < n) return false;
    memcpy(dst, p, n);
    p += n;
    return true;
  }
  bool u8(uint8_t *v) { return take(v, 1); }
  bool u16(uint16_t *v) {
    uint8_t b[2];
    if (!take(b, 2)) return false;
    *v = static_cast<uint16_t>(b[0] | (b[1] << 8));
    return true;
  }
  bool u32(uint32_t *v) {
    uint8_t b[4];
    if (!take(b, 4)) return false;
    *v = static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 | static_cast<uint32_t>(b[2]) << 16 |
         static_cast<uint32_t>(b[3]) << 24;
    return true;
  }
  bool u64(uint64_t *v) {
    uint8_t b[8];
    if (!take(b, 8)) return false;
    *v = 0;
    for (int i = 7; i >= 0; i--) *v = (*v << 8) | b[i];
    return true;
  }
  // Returns None, TooShort or BadVarint.
  DecodeError varint(uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!u8(&b)) return DecodeError::TooShort;
      if (shift == 63 && (b & 0x7e)) return DecodeError::BadVarint;  // > 64 bits
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return DecodeError::None;
    }
    return DecodeError::BadVarint;
  }
  size_t left() const { return static_cast<size_t>(end - p); }
};

inline bool valid_rule_name(const std::string &name) {
  return !name.empty() && name.size() <= kMaxRuleNameLen && valid_node_id(name);
}

// A tag or a tag rule prefix: no newline (the query protocol's separator) or NUL.
inline bool valid_tag_bytes(const std::string &t) {
  return t.size() <= kMaxTagLen && t.find('\n') == std::string::npos && t.find('\0') == std::string::npos;
}

inline bool valid_factor(const RuleFactor &f) {
  if (f.factor_ppm == 0 || f.factor_ppm > kFactorOne) return false;
  return f.tag ? valid_tag_bytes(f.name) : valid_rule_name(f.name);
}

// kind, name length, name, u32 factor
inline size_t factor_bytes(const RuleFactor &f) { return 1 + varint_len(f.name.size()) + f.name.size() + 4; }
inline constexpr size_t kMinFactorBytes = 1 + 1 + 0 + 4;

// A ban notice its sender may send (peer_decode.cpp): a masked prefix, and for a set ban
// a remaining time and texts within their bounds.
bool valid_notice(const BanNotice &n);

}  // namespace dt::wire
