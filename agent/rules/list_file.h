// list_file.h - allow and deny list files (rules file: allow_file, deny_file; docs/lists.md).
//
// One address or prefix a line, IPv4 or IPv6, in any of the forms operators get
// lists in:
//   198.18.0.1                     a plain address (a /32 or /128)
//   198.18.0.0/24                  a prefix: FireHOL netsets, Spamhaus DROP, ...
//   2001:2::/48
//   add SETNAME 198.18.0.0/24      `ipset save` output (hash:net, hash:ip)
//   create SETNAME hash:net ...    `ipset save` header: ignored
//   # comment, ; comment           whole lines, or after an entry; blank lines
// Refused, with "FILE:LINE: what is wrong" (one bad line refuses the whole file):
// anything else, ranges (a-b), ipset entry options (timeout, nomatch, ...), and a
// prefix with bits set past its length (198.18.0.1/24: a typo or a broken feed; the
// rules file refuses them too). Duplicates are merged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/list_maps.h"

namespace dt {

// Prefixes the allow and deny lists may hold together, both families, counted as the
// lines come (duplicates too): the unit's MemoryMax= (packaging/dthrottle@.service.in) is
// sized for this many in the kernel and the agent, twice over while a reload builds the
// new lists beside the old ones.
inline constexpr size_t kListsMaxPrefixes = DT_LIST_MAX_PREFIXES;
// The longest line read (a longer one is refused, not kept).
inline constexpr size_t kMaxListLineBytes = 4096;

// "the allow and deny lists hold at most N prefixes together ...": why a list is refused.
std::string list_cap_text();

// Parses the text of a list file; `origin` names it in messages. At most `max_entries`
// entries (a list's share of kListsMaxPrefixes). On error: false,
// *err = "ORIGIN:LINE: what is wrong", *out untouched.
bool parse_list_text(const std::string &text, const std::string &origin, ListPrefixes *out, std::string *err,
                     size_t max_entries = kListsMaxPrefixes);

// Reads the file at `path` a piece at a time, parsing as it goes: a line past the cap (or
// a bad one) stops the reading there.
bool load_list_file(const std::string &path, ListPrefixes *out, std::string *err,
                    size_t max_entries = kListsMaxPrefixes);

// "198.18.0.0/24", "2001:2::/48": a prefix as the file would give it.
std::string list_prefix_string(const dt_list_v4_key &k);
std::string list_prefix_string(const dt_list_v6_key &k);

}  // namespace dt
