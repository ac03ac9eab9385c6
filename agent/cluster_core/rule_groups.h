// rule_groups.h - a report's rule groups on both sides: named by rule on the way out,
// mapped to this node's rule ids and made debits on the way in (the cluster core: no I/O).
// Prefix and destination buckets' entries go in groups named by the rule (RULE::pBITS,
// RULE::dst: common/report_types.h); a peer's entries of rules or levels we do not have
// are left out, and a joiner's first debits carry a burst more (join_guard.h). Peers may
// number rules differently: names travel, ids do not. The agent's Cluster and the
// simulator (tools/sim) charge peers' hits with this one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cluster_core/join_guard.h"
#include "cluster_core/peer_protocol.h"
#include "cluster_core/report_router.h"
#include "dthrottle/common.h"

namespace dt {

// Puts the prefix buckets' entries of `body` in groups named RULE::pBITS (appended to
// body->rules; see prefix_group_name). Returns how many entries are prefix buckets.
size_t name_prefix_groups(ReportBody *body);
// Puts the destination buckets' entries of `body` (key.rule with DT_KEY_DEST) in groups
// named RULE::dst (appended to body->rules; see dest_group_name). Returns how many.
size_t name_dest_groups(ReportBody *body);

// An owner's relay (report_router.h) as blocks, one per member (ids[RelayEntry::from]),
// each naming its groups (rule_names: our rules by index) as a report does.
std::vector<RelayedReport> relay_blocks(const std::vector<RelayEntry> &relays, const std::vector<std::string> &ids,
                                        const std::vector<std::string> &rule_names);

// The rules this node throttles, as peers' reports name them.
struct LocalRules {
  std::vector<std::string> names{"default"};                     // by local index (they travel in reports)
  std::map<std::string, uint32_t> throttle_ids{{"default", 0}};  // throttle rules only: name -> id
  std::set<uint32_t> prefix_levels;  // prefix bucket key.rule values in force (prefix_level_keys)
  std::set<uint32_t> dest_rules;     // rule ids keyed by destination here (dest_rule_ids)
  std::vector<uint64_t> burst_hits;  // per rule id, its burst in hits (join_guard.h)
  // Hits for rules that are not `throttle` here are not debited.
  void set(const std::vector<std::string> &rule_names, const std::vector<bool> &throttles);
};

// A report's rule names (by index) as our rule ids, per kind of bucket; -1: not ours.
struct ReportRuleMap {
  std::vector<int64_t> local;     // a source bucket of our rule
  std::vector<int64_t> level;     // a prefix bucket: rule | bits << 16
  std::vector<int64_t> dest;      // a destination bucket (RULE::dst) of our rule
  std::vector<int64_t> adaptive;  // local, or dest: the rule an adaptive rule counts them for
};
// Plain names to our rules keyed as the sender keys them (by source), groups RULE::pBITS to
// prefix levels, groups RULE::dst to our rules keyed by destination.
ReportRuleMap map_report_rules(const LocalRules &rules, const std::vector<std::string> &names);

// A peer's entries as debits of our buckets (our rule ids); entries of rules or prefix
// levels we do not have are left out and counted in *unknown.
std::vector<dt_debit> report_debits(const LocalRules &rules, const ReportRuleMap &map,
                                    const std::vector<ReportEntry> &entries, uint64_t *unknown);

// What a joiner's guard added to debits (join_guard.h).
struct JoinExtra {
  uint64_t sources = 0, hits = 0;
};
// Joining a running cluster: while `guard` is active, the first debit of each source from
// `sender`'s message of period `epoch` carries a burst more (rules.burst_hits; a prefix
// bucket none).
JoinExtra add_join_extra(JoinGuard &guard, const LocalRules &rules, const std::string &sender, uint64_t epoch,
                         std::vector<dt_debit> *debits, uint64_t now_ns);

}  // namespace dt
