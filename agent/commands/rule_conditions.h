// rule_conditions.h - a rule's conditions as the live maps hold them, in the words of `agent
// explain` and `agent stats` ("udp sport 123 dst 203.0.113.0/24"): read from the live rules
// trie (its candidates, struct dt_rule_match) and the rule_cond map (struct dt_rule_cond).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/json.h"
#include "dataplane/map_reader.h"
#include "dthrottle/common.h"

namespace dt {

// "198.18.0.0/15", "2001:2::/48": a rules trie key as written in a rules file.
std::string lpm_prefix_text(const dt_lpm_key &k);

// The conditions of one candidate as words: "any packet", "udp dport 53", "tcp syn dport 80-89",
// "udp sport 123 dst 203.0.113.0/24 len 0-100". `cond`: the rule's dt_rule_cond (null: not read;
// its conditions are then named without their values).
std::string match_text(const dt_rule_match &m, const dt_rule_cond *cond = nullptr);
// The same as a JSON object: {"proto": "udp", "sport": "123", "dst": "203.0.113.0/24", ...}
// with only the conditions the rule has.
Json match_json(const dt_rule_match &m, const dt_rule_cond *cond);

// The live dt_rule_cond of `rule` (the bank config says): 0 or -errno.
int read_live_rule_cond(int cond_fd, int config_fd, uint32_t rule, dt_rule_cond *out);

// Each rule of the live rules trie: its own prefix (the shortest that lists it) and conditions.
struct RuleConditions {
  std::string cidr;  // "" for the default rule
  dt_rule_match match{};
  dt_rule_cond cond{};
  bool has_cond = false;
};
// By rule id; empty without rules (or without the tries in the pins).
std::map<uint32_t, RuleConditions> read_rule_conditions(const MapFds &m);

}  // namespace dt
