// list_maps.h - the allow and deny lists in the kernel (dthrottle/lists.h, docs/lists.md).
//
// Why a fresh trie swapped into an ARRAY_OF_MAPS slot rather than the rules' two banks:
// a bank flip (config.bank) also happens on every adaptive policy change
// (publish_policies_only), so both banks would have to hold the same million prefixes
// at all times and every reload would rewrite one whole bank even for an unchanged list.
// A swapped slot costs nothing for a list that did not change, holds one copy (two
// while a new one is built), and the old trie stays in force, untouched, until the new
// one is complete: the kernel frees it once no packet holds it any more.
//
// Loading: one BPF_MAP_UPDATE_ELEM per prefix (LPM tries have no batch update, on 6.1
// or later kernels). Each trie is made with max_entries = its prefix count, so
// `bpftool map show` (and `agent stats`) tell a list's size without walking it.
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

// The two outer maps (lists_v4, lists_v6), by fd, not owned; -1: absent.
struct ListMapFds {
  int v4 = -1, v6 = -1;
};

// "allow", "deny".
const char *list_name(uint32_t list);

// Makes the tries of `next` (a list: DT_LIST_ALLOW or DT_LIST_DENY) and swaps them into
// their slots; an empty family empties its slot. On failure nothing of that list has
// changed. 0 or -errno.
int publish_list(const ListMapFds &m, uint32_t list, const ListPrefixes &next);

// Both lists: built first, then swapped (a failure while building changes neither).
// A list equal to `*prev_*` (not null) is left as it is. 0 or -errno, *err says which.
int publish_lists(const ListMapFds &m, const ListPrefixes &allow, const ListPrefixes &deny,
                  const ListPrefixes *prev_allow, const ListPrefixes *prev_deny, std::string *err);

// Prefixes of list `list` in force per family (its trie's max_entries; 0: none).
struct ListSize {
  uint32_t v4 = 0, v6 = 0;
};
ListSize read_list_size(const ListMapFds &m, uint32_t list);

// Whether list `list` holds `addr` (16 bytes, IPv4 mapped): 1 yes, 0 no, -errno.
int list_holds(const ListMapFds &m, uint32_t list, const uint8_t *addr);

}  // namespace dt
