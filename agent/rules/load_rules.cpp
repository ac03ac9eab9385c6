// load_rules.cpp - the rule set the agent runs, each rule keeping its id across reloads.
// The default rule and the file, ids kept by name, compiled; its allow and deny lists read.
#include <map>

#include "rules/rules.h"

namespace dt {

namespace {

// A reload: a rule keeps the id it had under the same name, so its buckets and counters
// stay its own; the others take the lowest ids no kept rule uses.
void keep_rule_ids(const LoadedRules &previous, RuleSet *rs) {
  std::map<std::string, uint32_t> old_ids;
  for (const auto &p : previous.set.rules) old_ids[p.name] = p.id;
  std::vector<bool> used(DT_MAX_RULES, false);
  used[DT_RULE_DEFAULT] = true;
  for (auto &rule : rs->rules)
    if (auto it = old_ids.find(rule.name); it != old_ids.end() && rule.name != "default") used[it->second] = true;
  uint32_t next_free = 1;
  for (size_t i = 1; i < rs->rules.size(); i++) {
    PacketRule &rule = rs->rules[i];
    if (auto it = old_ids.find(rule.name); it != old_ids.end()) {
      rule.id = it->second;
      continue;
    }
    while (next_free < DT_MAX_RULES && used[next_free]) next_free++;
    rule.id = next_free;
    used[next_free] = true;
  }
}

// The lists the rule set names: each file read and parsed (one bad line refuses it), the
// deny list within what the allow list left of kListsMaxPrefixes.
bool load_lists(const RuleSet &rs, LoadedRules *r, std::string *err) {
  size_t left = kListsMaxPrefixes;
  auto one = [&](const std::string &path, std::shared_ptr<const ListPrefixes> *out) {
    auto p = std::make_shared<ListPrefixes>();
    if (!path.empty() && !load_list_file(path, p.get(), err, left)) return false;
    left -= p->size();
    *out = std::move(p);
    return true;
  };
  return one(rs.allow_file, &r->allow) && one(rs.deny_file, &r->deny);
}

}  // namespace

bool load_rules(double rate, uint64_t burst, bool bytes, const std::string &path, LoadedRules *out, std::string *err,
                const LoadedRules *previous, const std::vector<PrefixLimit> &prefix) {
  LoadedRules r;
  r.set = default_rules(rate, burst, bytes);
  r.set.rules[0].prefix_limits = prefix;
  if (!path.empty() && !load_rules_file(path, &r.set, err)) return false;
  if (previous) keep_rule_ids(*previous, &r.set);
  if (!load_lists(r.set, &r, err)) return false;
  if (!compile_rules(r.set, &r.compiled, err)) return false;
  r.names.assign(r.compiled.policies.size(), "");
  r.throttles.assign(r.compiled.policies.size(), false);
  for (const auto &rule : r.set.rules) {
    r.names[rule.id] = rule.name;
    r.throttles[rule.id] = rule.action == RuleAction::Throttle;
  }
  *out = std::move(r);
  return true;
}

}  // namespace dt
