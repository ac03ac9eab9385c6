// list_maps.h - the allow and deny lists in the kernel (dthrottle/lists.h, docs/lists.md).
//
// A list is a set (is the source covered by any prefix?), not a longest-prefix match: each
// family's prefixes become one range set (dthrottle/lists.h, range_set.h): sorted disjoint
// ranges in an array, with an index, searched in a few array lookups whatever the size.
//
// Why a fresh set swapped into an ARRAY_OF_MAPS slot rather than the rules' two banks:
// a bank flip (config.bank) also happens on every adaptive policy change
// (publish_policies_only), so both banks would have to hold the same million prefixes
// at all times and every reload would rewrite one whole bank even for an unchanged list.
// A swapped slot costs nothing for a list that did not change, holds one copy (two
// while a new one is built), and the old set stays in force, untouched, until the new
// one is complete: the kernel frees it once no packet holds it any more.
//
// Loading: the set is built in memory, the array made with exactly its elements
// (BPF_F_MMAPABLE) and written through a mapping, in one copy: no syscall per prefix.
// The header keeps the number of prefixes loaded, which `agent stats` and the metrics
// report without walking the set.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dthrottle/lists.h"

namespace dt {

// A list's prefixes by family, sorted and without duplicates (rules/list_file.h reads them).
struct ListPrefixes {
  std::vector<dt_list_v4_key> v4;
  std::vector<dt_list_v6_key> v6;
  size_t size() const { return v4.size() + v6.size(); }
  bool operator==(const ListPrefixes &o) const;
};

// The two outer maps (lists_v4, lists_v6), by fd, not owned; -1: absent. `features`: the
// features map (dataplane/features.h), whose `lists` word publishing keeps true: a list's
// bit is set before its set is swapped in and cleared after its slot is emptied (the
// packet path looks at a slot only while its bit is on). -1 only where no program reads
// the slots (readers).
struct ListMapFds {
  int v4 = -1, v6 = -1, features = -1;
};

// "allow", "deny".
const char *list_name(uint32_t list);

// Makes the range sets of `next` (a list: DT_LIST_ALLOW or DT_LIST_DENY) and swaps them into
// their slots, with their bits in m.features; an empty family empties its slot. On failure
// nothing of that list has changed. 0 or -errno. One writer at a time (the daemon).
int publish_list(const ListMapFds &m, uint32_t list, const ListPrefixes &next);

// Both lists: built first, then swapped (a failure while building changes neither).
// A list equal to `*prev_*` (not null) is left as it is. 0 or -errno, *err says which.
int publish_lists(const ListMapFds &m, const ListPrefixes &allow, const ListPrefixes &deny,
                  const ListPrefixes *prev_allow, const ListPrefixes *prev_deny, std::string *err);

// Prefixes of list `list` in force per family (its set's header; 0: none).
struct ListSize {
  uint32_t v4 = 0, v6 = 0;
};
ListSize read_list_size(const ListMapFds &m, uint32_t list);

// Whether list `list` holds `addr` (16 bytes, IPv4 mapped): 1 yes, 0 no, -errno. The same
// search as the packet path's (range_set_holds).
int list_holds(const ListMapFds &m, uint32_t list, const uint8_t *addr);

// The prefixes of the range set `fd` (a slot's map, by fd): the fewest whose union is the
// set (overlapping and adjacent prefixes come back merged). False with errno.
bool read_set_prefixes(int fd, std::vector<dt_list_v4_key> *out);
bool read_set_prefixes(int fd, std::vector<dt_list_v6_key> *out);

}  // namespace dt
