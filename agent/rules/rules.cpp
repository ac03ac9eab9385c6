// rules.cpp - the rule set's names, defaults and summaries (rules.h).
#include "rules/rules.h"

#include <cstdio>

#include "common/parse_values.h"
#include "dthrottle/bucket.h"

namespace dt {

const char *rule_action_name(RuleAction a) {
  switch (a) {
    case RuleAction::Throttle: return "throttle";
    case RuleAction::Allow: return "allow";
    case RuleAction::Deny: return "deny";
  }
  return "?";
}

std::string file_line(const RuleSet &rs, int line) { return rs.origin + ":" + std::to_string(line) + ": "; }

RuleSet default_rules(double rate, uint64_t burst, bool bytes) {
  RuleSet rs;
  PacketRule d;
  d.name = "default";
  d.prefix_len = 0;
  d.action = rate > 0 ? RuleAction::Throttle : RuleAction::Allow;
  d.rate = rate;
  d.burst = burst;
  d.bytes = bytes;
  d.key_prefix = 0;  // per family defaults: /32 and /64
  rs.rules.push_back(d);
  rs.origin = "command line";
  return rs;
}
std::set<uint32_t> prefix_level_keys(const LoadedRules &r) {
  std::set<uint32_t> out;
  for (const auto &rule : r.set.rules)
    if (rule.action == RuleAction::Throttle)
      for (const PrefixLimit &l : rule.prefix_limits) out.insert(dt_prefix_key_rule(rule.id, l.bits, !l.v4));
  return out;
}

std::set<uint32_t> dest_rule_ids(const LoadedRules &r) {
  std::set<uint32_t> out;
  for (const auto &rule : r.set.rules)
    if (rule.action == RuleAction::Throttle && rule.key_by_dest) out.insert(rule.id);
  return out;
}

void set_all_dry_run(LoadedRules *r) {
  for (auto &rule : r->set.rules) rule.dry_run = true;
  for (auto &p : r->compiled.policies) p.flags |= DT_POL_DRY_RUN;
}

std::vector<std::string> syn_cookie_rule_names(const LoadedRules &r) {
  std::vector<std::string> out;
  for (const auto &rule : r.set.rules)
    if (rule.syn_cookies) out.push_back(rule.name);
  return out;
}

std::vector<std::string> dry_run_rule_names(const LoadedRules &r) {
  std::vector<std::string> out;
  for (const auto &rule : r.set.rules)
    if (rule.dry_run && rule.action != RuleAction::Allow) out.push_back(rule.name);
  return out;
}

std::string describe_rules(const LoadedRules &r) { return describe_rules(r, r.set.tags); }

std::string describe_rules(const LoadedRules &r, const std::vector<TagRule> &tag_rules) {
  int n[3] = {0, 0, 0};
  for (size_t i = 1; i < r.set.rules.size(); i++) n[static_cast<int>(r.set.rules[i].action)]++;
  const PacketRule &d = r.set.rules[0];
  char def[64] = "none (unmatched sources pass)";
  if (d.action == RuleAction::Throttle && d.bytes)
    snprintf(def, sizeof def, "%s/s burst %s", format_bytes(d.rate).c_str(),
             format_bytes(static_cast<double>(d.burst)).c_str());
  else if (d.action == RuleAction::Throttle)
    snprintf(def, sizeof def, "%.6g/s burst %llu", d.rate, static_cast<unsigned long long>(d.burst));
  size_t adaptive = 0;
  for (const auto &rule : r.set.rules) adaptive += rule.adaptive.enabled;
  for (const auto &tag : tag_rules) adaptive += tag.adaptive.enabled;
  char buf[256];
  snprintf(buf, sizeof buf, "%zu packet rules (%d throttle, %d allow, %d deny), %zu tag rules, default %s",
           r.set.rules.size() - 1, n[DT_ACT_THROTTLE], n[DT_ACT_ALLOW], n[DT_ACT_DENY], tag_rules.size(), def);
  std::string out = buf;
  if (adaptive) out += "; " + std::to_string(adaptive) + " adaptive";
  if (const size_t dry = dry_run_rule_names(r).size()) out += "; " + std::to_string(dry) + " in dry run";
  std::string by_dest;
  for (const auto &rule : r.set.rules)
    if (rule.key_by_dest) by_dest += (by_dest.empty() ? "" : ", ") + rule.name;
  if (!by_dest.empty()) out += "; keyed by destination: " + by_dest;
  std::string levels;
  for (const auto &rule : r.set.rules)
    for (const PrefixLimit &l : rule.prefix_limits)
      levels += (levels.empty() ? "" : ", ") + rule.name + " " + format_prefix_limit(l);
  if (!levels.empty()) out += "; prefix budgets: " + levels;
  std::string escalating;
  for (const auto &rule : r.set.rules)
    if (rule.escalate.enabled) escalating += (escalating.empty() ? "" : ", ") + rule.name;
  if (!escalating.empty()) out += "; escalating: " + escalating;
  return out;
}

}  // namespace dt
