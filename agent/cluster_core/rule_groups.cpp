// rule_groups.cpp - a report's rule groups on both sides (see rule_groups.h).
#include "cluster_core/rule_groups.h"

#include <algorithm>

#include "common/address.h"
#include "common/report_types.h"
#include "dthrottle/bucket.h"

namespace dt {

// Prefix buckets' entries (key.rule with DT_KEY_PREFIX) go in groups of their own,
// named RULE::pBITS and appended to body->rules, so that peers map them by name.
size_t name_prefix_groups(ReportBody *body) {
  std::map<std::string, uint32_t> groups;
  size_t n = 0;
  for (auto &e : body->entries) {
    if (!dt_key_is_prefix(e.key.rule)) continue;
    const uint32_t id = dt_key_rule_id(e.key.rule);
    if (id >= body->rules.size() || body->rules[id].empty()) {
      e.hits = 0;  // a rule gone since: the encoder skips entries without hits
      continue;
    }
    const std::string name = prefix_group_name(body->rules[id], dt_key_prefix_bits(e.key.rule));
    auto [it, fresh] = groups.emplace(name, static_cast<uint32_t>(body->rules.size()));
    if (fresh) body->rules.push_back(name);
    e.key.rule = it->second;
    n++;
  }
  return n;
}

// Destination buckets' entries (key.rule with DT_KEY_DEST) go in groups RULE::dst,
// appended to body->rules, so that peers debit their destination bucket of RULE.
size_t name_dest_groups(ReportBody *body) {
  std::map<std::string, uint32_t> groups;
  size_t n = 0;
  for (auto &e : body->entries) {
    if (dt_key_is_prefix(e.key.rule) || !dt_key_is_dest(e.key.rule)) continue;
    const uint32_t id = dt_key_rule_id(e.key.rule);
    if (id >= body->rules.size() || body->rules[id].empty()) {
      e.hits = 0;  // a rule gone since: the encoder skips entries without hits
      continue;
    }
    auto [it, fresh] = groups.emplace(dest_group_name(body->rules[id]), static_cast<uint32_t>(body->rules.size()));
    if (fresh) body->rules.push_back(it->first);
    e.key.rule = it->second;
    n++;
  }
  return n;
}

std::vector<RelayedReport> relay_blocks(const std::vector<RelayEntry> &relays, const std::vector<std::string> &ids,
                                        const std::vector<std::string> &rule_names) {
  std::map<uint32_t, std::vector<ReportEntry>> by_member;
  for (const RelayEntry &r : relays) by_member[r.from].push_back(r.entry);
  std::vector<RelayedReport> blocks;
  for (auto &[member, entries] : by_member) {
    ReportBody named;
    named.rules = rule_names;
    named.entries = std::move(entries);
    name_prefix_groups(&named);
    name_dest_groups(&named);
    blocks.push_back(RelayedReport{ids[member], std::move(named.rules), std::move(named.entries)});
  }
  return blocks;
}

void LocalRules::set(const std::vector<std::string> &rule_names, const std::vector<bool> &throttles) {
  names = rule_names;
  throttle_ids.clear();
  for (size_t i = 0; i < rule_names.size() && i < throttles.size(); i++)
    if (throttles[i]) throttle_ids[rule_names[i]] = static_cast<uint32_t>(i);
}

// For the adaptive rules, any of a rule's buckets counts as the rule.
ReportRuleMap map_report_rules(const LocalRules &rules, const std::vector<std::string> &names) {
  ReportRuleMap m;
  m.local.assign(names.size(), -1);
  m.level.assign(names.size(), -1);
  m.dest.assign(names.size(), -1);
  const auto &ids = rules.throttle_ids;
  for (size_t i = 0; i < names.size(); i++) {
    std::string base;
    unsigned bits = 0;
    if (auto it = ids.find(names[i]); it != ids.end()) {
      if (!rules.dest_rules.count(it->second)) m.local[i] = it->second;  // else a peer keys it by source
    } else if (split_prefix_group_name(names[i], &base, &bits)) {
      if (auto b = ids.find(base); b != ids.end()) m.level[i] = b->second | bits << 16;
    } else if (split_dest_group_name(names[i], &base)) {
      if (auto b = ids.find(base); b != ids.end() && rules.dest_rules.count(b->second)) m.dest[i] = b->second;
    }
  }
  m.adaptive = m.local;
  for (size_t i = 0; i < names.size(); i++)
    if (m.dest[i] >= 0) m.adaptive[i] = m.dest[i];
  return m;
}

std::vector<dt_debit> report_debits(const LocalRules &rules, const ReportRuleMap &map,
                                    const std::vector<ReportEntry> &entries, uint64_t *unknown) {
  std::vector<dt_debit> debits;
  debits.reserve(entries.size());
  for (const auto &en : entries) {
    dt_debit d{};
    d.key = en.key;
    if (map.local[en.key.rule] >= 0) {
      d.key.rule = static_cast<uint32_t>(map.local[en.key.rule]);
    } else if (map.dest[en.key.rule] >= 0) {
      d.key.rule = static_cast<uint32_t>(map.dest[en.key.rule]) | DT_KEY_DEST;  // a destination bucket
    } else if (const int64_t l = map.level[en.key.rule]; l >= 0) {
      // A prefix bucket: the level of our rule with that length, in the entry's family.
      d.key.rule = dt_prefix_key_rule(static_cast<uint32_t>(l & 0xffff), static_cast<uint32_t>(l >> 16),
                                      !addr_is_v4(en.key.addr));
      if (!rules.prefix_levels.count(d.key.rule)) {
        ++*unknown;
        continue;
      }
    } else {
      ++*unknown;
      continue;
    }
    d.hits = static_cast<uint32_t>(en.hits);
    debits.push_back(d);
  }
  return debits;
}

JoinExtra add_join_extra(JoinGuard &guard, const LocalRules &rules, const std::string &sender, uint64_t epoch,
                         std::vector<dt_debit> *debits, uint64_t now_ns) {
  JoinExtra x;
  if (!guard.active(now_ns)) return x;
  const std::vector<uint64_t> &bursts = rules.burst_hits;
  for (dt_debit &d : *debits) {
    const uint64_t burst = dt_key_is_prefix(d.key.rule) || d.key.rule >= bursts.size() ? 0 : bursts[d.key.rule];
    const uint64_t extra = std::min<uint64_t>(guard.extra(sender, epoch, d.key, burst, now_ns), UINT32_MAX - d.hits);
    d.hits += static_cast<uint32_t>(extra);
    x.sources += extra > 0;
    x.hits += extra;
  }
  return x;
}

}  // namespace dt
