// range_set.cpp - building, reading and searching range sets (range_set.h).
#include "dataplane/range_set.h"

#include <algorithm>
#include <bit>

namespace dt {
namespace {

constexpr uint32_t kHeader = 1;  // element 0

template <class U>
constexpr unsigned kWidth = sizeof(U) * 8;

// All ones past the first `len` bits.
template <class U>
U host_mask(unsigned len) {
  return len >= kWidth<U> ? U(0) : static_cast<U>(~U(0)) >> len;
}

template <class U, class K>
std::vector<AddrRange<U>> merge_keys(const std::vector<K> &keys, U (*addr_of)(const uint8_t *)) {
  std::vector<AddrRange<U>> r;
  r.reserve(keys.size());
  for (const K &k : keys) {
    const U m = host_mask<U>(k.prefixlen), lo = addr_of(k.addr) & ~m;
    r.push_back({lo, lo | m});
  }
  std::sort(r.begin(), r.end(), [](const auto &a, const auto &b) { return a.lo < b.lo; });
  size_t out = 0;
  for (size_t i = 0; i < r.size(); i++) {
    if (out > 0 && (r[out - 1].hi == static_cast<U>(~U(0)) || r[i].lo <= r[out - 1].hi + 1)) {
      r[out - 1].hi = std::max(r[out - 1].hi, r[i].hi);
      continue;
    }
    r[out++] = r[i];
  }
  r.resize(out);
  return r;
}

// Bit `skip` on of an IPv6 address, 64 of them (bpf/lists.bpf.h: dt_addr6_from).
uint64_t from_bit(Addr6 a, uint32_t skip) { return static_cast<uint64_t>((a << skip) >> 64); }

// The bucket of an address in a set: v4 its top `bits`; v6 the `bits` past `skip`.
struct Bucketing {
  uint32_t bits, skip;
  uint64_t of(uint32_t a) const { return a >> (32 - bits); }
  uint64_t of(Addr6 a) const { return from_bit(a, skip) >> (64 - bits); }
};

// Slice [start, end) of ranges meeting each bucket, as element numbers from `first`.
template <class U>
std::vector<std::pair<uint32_t, uint32_t>> slices(const std::vector<AddrRange<U>> &r, const Bucketing &bk,
                                                  uint32_t first) {
  const uint64_t buckets = uint64_t{1} << bk.bits;
  std::vector<std::pair<uint32_t, uint32_t>> s(buckets);
  size_t start = 0, end = 0;
  for (uint64_t b = 0; b < buckets; b++) {
    while (start < r.size() && bk.of(r[start].hi) < b) start++;
    while (end < r.size() && bk.of(r[end].lo) <= b) end++;
    s[b] = {first + static_cast<uint32_t>(start), first + static_cast<uint32_t>(std::max(start, end))};
  }
  return s;
}

// The last of the `n` ranges from element `base` whose lo <= addr, halving as the program
// does (at most DT_LIST_SEARCH_STEPS steps); its lo and hi from `lo_of` and `hi_of`.
template <class U, class Lo, class Hi>
bool search(uint32_t base, uint32_t n, size_t count, U addr, Lo lo_of, Hi hi_of) {
  for (uint32_t i = 0; i < DT_LIST_SEARCH_STEPS && n > 1; i++) {
    const uint32_t k = base + (n >> 1);
    if (k >= count) return false;
    if (lo_of(k) <= addr) base = k;
    n -= n >> 1;
  }
  return n == 1 && base < count && lo_of(base) <= addr && addr <= hi_of(base);
}

template <class U>
void put_addr(U a, uint8_t *out) {
  for (unsigned i = 0; i < sizeof(U); i++) out[i] = static_cast<uint8_t>(a >> (kWidth<U> - 8 - 8 * i));
}

// The greedy cover of [lo, hi] by aligned blocks (the fewest prefixes).
template <class U, class K>
void cover(U lo, U hi, std::vector<K> *out) {
  for (;;) {
    unsigned len = kWidth<U>;
    while (len > 0) {
      const U m = host_mask<U>(len - 1);
      if ((lo & m) != 0 || (lo | m) > hi) break;
      len--;
    }
    K k{len, {}};
    put_addr(lo, k.addr);
    out->push_back(k);
    const U last = lo | host_mask<U>(len);
    if (last >= hi) return;
    lo = last + 1;
  }
}

template <class U, class K>
std::vector<K> prefixes_of(const std::vector<AddrRange<U>> &ranges) {
  std::vector<K> out;
  for (const auto &r : ranges) cover<U, K>(r.lo, r.hi, &out);
  return out;
}

Addr6 addr6(uint64_t hi, uint64_t lo) { return (Addr6{hi} << 64) | lo; }

// Leading zero bits of x (128 for 0): the common prefix of two addresses is that of their xor.
uint32_t clz128(Addr6 x) {
  const uint64_t hi = static_cast<uint64_t>(x >> 64);
  return static_cast<uint32_t>(hi ? std::countl_zero(hi) : 64 + std::countl_zero(static_cast<uint64_t>(x)));
}

}  // namespace

uint32_t addr4_of(const uint8_t *b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

Addr6 addr6_of(const uint8_t *b) {
  Addr6 a = 0;
  for (int i = 0; i < 16; i++) a = (a << 8) | b[i];
  return a;
}

std::vector<Range4> merge_prefixes(const std::vector<dt_list_v4_key> &keys) {
  return merge_keys<uint32_t>(keys, addr4_of);
}
std::vector<Range6> merge_prefixes(const std::vector<dt_list_v6_key> &keys) {
  return merge_keys<Addr6>(keys, addr6_of);
}

std::vector<dt_list_v4_key> range_prefixes(const std::vector<Range4> &r) {
  return prefixes_of<uint32_t, dt_list_v4_key>(r);
}
std::vector<dt_list_v6_key> range_prefixes(const std::vector<Range6> &r) {
  return prefixes_of<Addr6, dt_list_v6_key>(r);
}

uint32_t range_index_bits(size_t ranges) {
  return std::clamp<uint32_t>(static_cast<uint32_t>(std::bit_width(ranges)), 1, DT_LIST_INDEX_BITS_MAX);
}

std::vector<dt_list_v4_elem> build_range_set(const std::vector<dt_list_v4_key> &keys) {
  const std::vector<Range4> r = merge_prefixes(keys);
  if (r.empty()) return {};
  const Bucketing bk{range_index_bits(r.size()), 0};
  const uint32_t first = kHeader + (1u << bk.bits);
  std::vector<dt_list_v4_elem> e;
  e.reserve(first + r.size());
  e.push_back({bk.bits, static_cast<uint32_t>(keys.size())});
  for (const auto &[s, t] : slices(r, bk, first)) e.push_back({s, t});
  for (const Range4 &x : r) e.push_back({x.lo, x.hi});
  return e;
}

std::vector<dt_list_v6_elem> build_range_set(const std::vector<dt_list_v6_key> &keys) {
  const std::vector<Range6> r = merge_prefixes(keys);
  if (r.empty()) return {};
  const uint32_t skip = std::min(127u, clz128(r.front().lo ^ r.back().hi));
  const Bucketing bk{range_index_bits(r.size()), skip};
  const uint32_t index = ((1u << bk.bits) + DT_LIST_V6_SLICES_PER_ELEM - 1) / DT_LIST_V6_SLICES_PER_ELEM;
  const uint32_t first = kHeader + index;
  std::vector<dt_list_v6_elem> e(first);
  e[0].head = {bk.bits,
               skip,
               static_cast<uint32_t>(keys.size()),
               static_cast<uint32_t>(r.size()),
               static_cast<uint64_t>(r.front().lo >> 64),
               static_cast<uint64_t>(r.front().lo)};
  const auto s = slices(r, bk, first);
  for (size_t b = 0; b < s.size(); b++)
    e[kHeader + b / DT_LIST_V6_SLICES_PER_ELEM].slice[b % DT_LIST_V6_SLICES_PER_ELEM] = {s[b].first, s[b].second};
  e.reserve(first + r.size());
  for (const Range6 &x : r) {
    dt_list_v6_elem v{};
    v.range = {static_cast<uint64_t>(x.lo >> 64), static_cast<uint64_t>(x.lo), static_cast<uint64_t>(x.hi >> 64),
               static_cast<uint64_t>(x.hi)};
    e.push_back(v);
  }
  return e;
}

namespace {

// Elements before the ranges, or 0 if the header is malformed.
uint32_t first_range(const dt_list_v4_elem *e, size_t n) {
  if (n == 0 || e[0].a < 1 || e[0].a > DT_LIST_INDEX_BITS_MAX) return 0;
  const uint32_t first = kHeader + (1u << e[0].a);
  return first <= n ? first : 0;
}

uint32_t first_range(const dt_list_v6_elem *e, size_t n) {
  if (n == 0 || e[0].head.bits < 1 || e[0].head.bits > DT_LIST_INDEX_BITS_MAX || e[0].head.skip > 127) return 0;
  const uint32_t first =
      kHeader + ((1u << e[0].head.bits) + DT_LIST_V6_SLICES_PER_ELEM - 1) / DT_LIST_V6_SLICES_PER_ELEM;
  return first + e[0].head.ranges == n ? first : 0;
}

}  // namespace

std::vector<Range4> range_set_ranges(const dt_list_v4_elem *e, size_t n) {
  std::vector<Range4> r;
  for (size_t i = first_range(e, n); i > 0 && i < n; i++) r.push_back({e[i].a, e[i].b});
  return r;
}

std::vector<Range6> range_set_ranges(const dt_list_v6_elem *e, size_t n) {
  std::vector<Range6> r;
  for (size_t i = first_range(e, n); i > 0 && i < n; i++)
    r.push_back({addr6(e[i].range.lo_hi, e[i].range.lo_lo), addr6(e[i].range.hi_hi, e[i].range.hi_lo)});
  return r;
}

uint32_t range_set_prefixes(const dt_list_v4_elem *e, size_t n) { return first_range(e, n) ? e[0].b : 0; }
uint32_t range_set_prefixes(const dt_list_v6_elem *e, size_t n) { return first_range(e, n) ? e[0].head.prefixes : 0; }

bool range_set_holds(const dt_list_v4_elem *e, size_t n, uint32_t addr) {
  if (first_range(e, n) == 0) return false;
  const dt_list_v4_elem &ix = e[kHeader + Bucketing{e[0].a, 0}.of(addr)];
  if (ix.b <= ix.a) return false;
  return search(
      ix.a, ix.b - ix.a, n, addr, [&](uint32_t k) { return e[k].a; }, [&](uint32_t k) { return e[k].b; });
}

bool range_set_holds(const dt_list_v6_elem *e, size_t n, Addr6 addr) {
  if (first_range(e, n) == 0) return false;
  const dt_list_v6_head &h = e[0].head;
  const Addr6 base = addr6(h.base_hi, h.base_lo);
  if (h.skip > 0 && ((addr ^ base) >> (128 - h.skip)) != 0) return false;
  const uint64_t b = Bucketing{h.bits, h.skip}.of(addr);
  const dt_list_v6_slice &s = e[kHeader + b / DT_LIST_V6_SLICES_PER_ELEM].slice[b % DT_LIST_V6_SLICES_PER_ELEM];
  if (s.end <= s.start) return false;
  return search(
      s.start, s.end - s.start, n, addr, [&](uint32_t k) { return addr6(e[k].range.lo_hi, e[k].range.lo_lo); },
      [&](uint32_t k) { return addr6(e[k].range.hi_hi, e[k].range.hi_lo); });
}

}  // namespace dt
