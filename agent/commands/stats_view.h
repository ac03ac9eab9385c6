// stats_view.h - what `agent stats` and `agent top` show: one read of the pinned maps
// (counters, live policy, every bucket) and, for top, the rates between two reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/list_maps.h"
#include "dataplane/map_reader.h"
#include "dthrottle/common.h"

namespace dt {

struct SourceRow {
  dt_key key;
  dt_bucket b;
};

// One read of the maps of a pin directory.
// A rule in force (it has a name in the rule_names map).
struct RuleRow {
  uint32_t id = 0;
  std::string name;
  dt_policy policy{};
  uint64_t passed = 0, dropped = 0;
  uint64_t would_drop = 0;                      // dry run: what enforcing would have dropped
  dt_prefix_policy prefix{};                    // its prefix budgets (n_v4 = n_v6 = 0: none)
  uint64_t prefix_drops[DT_PREFIX_SLOTS] = {};  // drops per level (IPv6 levels from DT_PREFIX_LEVELS)
  // What it matches, from the live rules trie (has_match false: the default rule, or no --rules).
  bool has_match = false, has_cond = false;
  std::string cidr{};
  dt_rule_match match{};
  dt_rule_cond cond{};  // its dst prefix and len range (has_cond)
  bool dry_run() const { return policy.flags & DT_POL_DRY_RUN; }
};

// The allow and deny lists (docs/lists.md): prefixes in force and what they decided.
struct ListsRow {
  ListSize allow, deny;    // prefixes per family (0: no list)
  dt_list_stats counts{};  // summed over CPUs
};

struct StatsSnapshot {
  dt_stats counters{};
  dt_policy policy{};                    // the live rule 0 (interval_ns 0: no policy set)
  std::vector<dt_policy> policies;       // live policy by rule id
  std::vector<RuleRow> rules;            // the named rules, by id
  uint64_t would_drop = 0;               // dry run: every rule's would-drop, summed
  std::vector<dt_prefix_policy> prefix;  // live prefix budgets by rule id
  // The policy a bucket's tokens are counted under (a prefix bucket's: its level's).
  const dt_policy &policy_of(const dt_bucket &b) const;
  // The name of rule `id` ("rule N" if it has none); a prefix bucket's key.rule
  // names the rule and the level: "web v4/24".
  std::string rule_name(uint32_t id) const;
  ListsRow lists;                  // the allow and deny lists
  dt_capture_cpu capture{};        // agent capture's sampler: its counters summed over CPUs
  std::vector<SourceRow> sources;  // every bucket, unordered
  uint64_t taken_ns = 0;           // CLOCK_MONOTONIC right after the read
};

// A bucket's key as the views show it: its address, "dst 203.0.113.7" for a destination
// bucket (a rule keyed by destination: the address is where the packets went).
std::string bucket_key_text(const dt_key &k);

// Reads counters, policy and buckets. False with a sentence in *err.
bool read_snapshot(const PinnedMaps &maps, const std::string &pin_dir, StatsSnapshot *out, std::string *err);

// Tokens in a bucket at `now` (may be negative after debits).
double source_tokens(const dt_bucket &b, const dt_policy &pol, uint64_t now);

// A source that sent during the interval between two snapshots.
struct SourceRate {
  dt_key key;
  double passed_per_s = 0, dropped_per_s = 0;
  double tokens = 0;                 // at the end of the interval
  uint64_t passed = 0, dropped = 0;  // totals at the end of the interval
  double would_drop_per_s = 0;       // dry run
  uint64_t would_drop = 0;
  bool bytes = false;  // a byte budget's source: all of the above in bytes
};

struct TopFrame {
  double interval_s = 0;
  double passed_per_s = 0, dropped_per_s = 0, new_sources_per_s = 0, fail_open_per_s = 0;
  double would_drop_per_s = 0;
  std::string dry_run;  // "" or what is in dry run (dry_run_line)
  size_t sources_total = 0;
  std::vector<SourceRate> active;  // most (would-)dropped/s first, then most passed/s, then address
};

// "" when nothing is in dry run, else a plain line: "dry run: every rule (nothing is
// dropped...)" or "dry run: rules a, b (...)".
std::string dry_run_line(const StatsSnapshot &snap);

// Rates from `prev` to `cur`. A counter that went down (the map was recreated, or the
// source evicted and seen again) counts from zero.
TopFrame compute_top(const StatsSnapshot &prev, const StatsSnapshot &cur);

// The text of one frame: header, policy, totals, then up to `top` sources (0: all).
std::string render_top(const TopFrame &f, const dt_policy &pol, const std::string &pin_dir, size_t top);

}  // namespace dt
