// range_set.h - a list's prefixes as the kernel's range set (dthrottle/lists.h): sorted,
// disjoint [lo, hi] ranges (overlapping and adjacent prefixes merged), an index over the
// address bits past the set's common prefix, and the header. Pure: no map, no syscall
// (list_maps.h writes and reads the maps). The search here is the one bpf/lists.bpf.h does,
// step for step, so that `agent explain` answers what the packet path decides.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dthrottle/lists.h"

namespace dt {

using Addr6 = unsigned __int128;

template <class U>
struct AddrRange {
  U lo, hi;
  bool operator==(const AddrRange &o) const { return lo == o.lo && hi == o.hi; }
};
using Range4 = AddrRange<uint32_t>;
using Range6 = AddrRange<Addr6>;

// The prefixes as ranges, sorted, overlapping and adjacent ones merged.
std::vector<Range4> merge_prefixes(const std::vector<dt_list_v4_key> &keys);
std::vector<Range6> merge_prefixes(const std::vector<dt_list_v6_key> &keys);

// The fewest prefixes whose union is `ranges` (sorted and disjoint), in list_file.h's order.
std::vector<dt_list_v4_key> range_prefixes(const std::vector<Range4> &ranges);
std::vector<dt_list_v6_key> range_prefixes(const std::vector<Range6> &ranges);

// Index bits for a set of `ranges` ranges: about one bucket per range, 1..DT_LIST_INDEX_BITS_MAX.
uint32_t range_index_bits(size_t ranges);

// The elements of the array that holds the set (empty for no prefix).
std::vector<dt_list_v4_elem> build_range_set(const std::vector<dt_list_v4_key> &keys);
std::vector<dt_list_v6_elem> build_range_set(const std::vector<dt_list_v6_key> &keys);

// The ranges of a set's elements `e` (`n` of them), as built above; empty if malformed.
std::vector<Range4> range_set_ranges(const dt_list_v4_elem *e, size_t n);
std::vector<Range6> range_set_ranges(const dt_list_v6_elem *e, size_t n);

// Prefixes a set was built from (its header), 0 if malformed or empty.
uint32_t range_set_prefixes(const dt_list_v4_elem *e, size_t n);
uint32_t range_set_prefixes(const dt_list_v6_elem *e, size_t n);

// Whether the set's elements `e` (`n` of them) hold the address, as bpf/lists.bpf.h decides.
bool range_set_holds(const dt_list_v4_elem *e, size_t n, uint32_t addr);
bool range_set_holds(const dt_list_v6_elem *e, size_t n, Addr6 addr);

// Network-order bytes <-> host-order integers.
uint32_t addr4_of(const uint8_t *b);
Addr6 addr6_of(const uint8_t *b);

}  // namespace dt
