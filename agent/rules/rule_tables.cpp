// rule_tables.cpp - the [[rule]] tables of the rules file. Name, cidr, action, match
// conditions, rate and burst, key_prefix, adaptive, dry_run, prefix_limits, key_by
// (escalate: escalate_table.cpp).
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "common/address.h"
#include "common/parse_values.h"
#include "common/report_types.h"
#include "rules/rules_toml.h"

namespace dt {
namespace {

// A rule with a dst and no cidr covers every source of dst's family: "0.0.0.0/0" or "::/0".
bool dst_family_root(const RuleSet &rs, const Value &t, std::string *cidr, std::string *err) {
  std::string dst;
  if (!get_string(rs, t, "dst", &dst, err)) return false;
  *cidr = dst.find(':') == std::string::npos ? "0.0.0.0/0" : "::/0";
  return true;
}

// A [[rule]]'s name and the addresses it covers.
bool parse_rule_name_cidr(const RuleSet &rs, const Value &t, int line, PacketRule *r, std::string *err) {
  if (!t.contains("name") || (!t.contains("cidr") && !t.contains("dst"))) {
    *err = file_line(rs, line) + "a [[rule]] needs a 'name' and a 'cidr' (or a 'dst': then every source of its family)";
    return false;
  }
  std::string cidr, why;
  if (!get_string(rs, t, "name", &r->name, err)) return false;
  if (t.contains("cidr") ? !get_string(rs, t, "cidr", &cidr, err) : !dst_family_root(rs, t, &cidr, err)) return false;
  if (!valid_node_id(r->name) || r->name.size() > 47) {
    *err = file_line(rs, static_cast<int>(t.at("name").location().line())) + "rule name '" + r->name +
           "' must be 1 to 47 characters of A-Z a-z 0-9 . _ : -";
    return false;
  }
  std::string base;
  unsigned level_bits = 0;
  if (split_prefix_group_name(r->name, &base, &level_bits)) {
    *err = file_line(rs, static_cast<int>(t.at("name").location().line())) + "rule name '" + r->name +
           "' ends like a prefix level in peers' reports ('::p' and a length): choose another name";
    return false;
  }
  if (split_dest_group_name(r->name, &base)) {
    *err = file_line(rs, static_cast<int>(t.at("name").location().line())) + "rule name '" + r->name +
           "' ends like a rule's destination buckets in peers' reports ('::dst'): choose another name";
    return false;
  }
  if (!parse_rule_cidr(cidr, r->addr, &r->prefix_len, &r->v4, &why)) {
    *err = file_line(rs, static_cast<int>(t.at(t.contains("cidr") ? "cidr" : "dst").location().line())) + why;
    return false;
  }
  return true;
}

// A [[rule]]'s action; *action keeps its text for later messages.
bool parse_rule_action(const RuleSet &rs, const Value &t, PacketRule *r, std::string *action, std::string *err) {
  *action = "throttle";
  if (t.contains("action") && !get_string(rs, t, "action", action, err)) return false;
  if (*action == "throttle") r->action = RuleAction::Throttle;
  else if (*action == "allow") r->action = RuleAction::Allow;
  else if (*action == "deny") r->action = RuleAction::Deny;
  else {
    *err = file_line(rs, static_cast<int>(t.at("action").location().line())) + "action '" + *action +
           "' is not one of throttle, allow, deny";
    return false;
  }
  return true;
}

// What a [[rule]] matches within its CIDR: proto, dport, syn.
bool parse_rule_match(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  if (t.contains("proto")) {
    std::string p;
    if (!get_string(rs, t, "proto", &p, err)) return false;
    if (p == "tcp") r->proto = IPPROTO_TCP;
    else if (p == "udp") r->proto = IPPROTO_UDP;
    else if (p == "icmp") r->proto = static_cast<uint8_t>(r->v4 ? int{IPPROTO_ICMP} : int{IPPROTO_ICMPV6});
    else {
      *err = file_line(rs, static_cast<int>(t.at("proto").location().line())) + "proto '" + p +
             "' is not one of tcp, udp, icmp";
      return false;
    }
  }
  if (t.contains("dport")) {
    const Value &v = t.at("dport");
    std::string d = v.is_integer() ? std::to_string(v.as_integer()) : (v.is_string() ? v.as_string().str : "");
    if (r->proto != IPPROTO_TCP && r->proto != IPPROTO_UDP) {
      *err = file_line(rs, static_cast<int>(v.location().line())) + "'dport' needs proto = \"tcp\" or \"udp\"";
      return false;
    }
    if (!parse_ports(d, &r->dport_lo, &r->dport_hi)) {
      *err = file_line(rs, static_cast<int>(v.location().line())) +
             "dport must be a port (1-65535) or a range like \"8000-8080\"";
      return false;
    }
  }
  if (t.contains("syn")) {
    const Value &v = t.at("syn");
    if (!v.is_boolean() || (v.as_boolean() && r->proto != IPPROTO_TCP)) {
      *err = file_line(rs, static_cast<int>(v.location().line())) +
             "'syn' is true or false, and true needs proto = \"tcp\"";
      return false;
    }
    r->syn_only = v.as_boolean();
  }
  return true;
}

// How a [[rule]] throttles: rate and burst (throttle rules only), key_prefix, adaptive.
bool parse_rule_limits(const RuleSet &rs, const Value &t, int line, const std::string &action, PacketRule *r,
                       std::string *err) {
  if (r->action == RuleAction::Throttle) {
    if (!rate_burst(rs, t, line, &r->rate, &r->burst, &r->bytes, err)) return false;
  } else if (t.contains("rate") || t.contains("burst")) {
    *err = file_line(rs, line) + "'" + action + "' rules take no rate or burst";
    return false;
  }
  const int max_bits = r->v4 ? 32 : 128;
  r->key_prefix = static_cast<uint8_t>(r->v4 ? 32 : 64);
  if (t.contains("key_prefix")) {
    const Value &v = t.at("key_prefix");
    if (!v.is_integer() || v.as_integer() < 1 || v.as_integer() > max_bits) {
      *err = file_line(rs, static_cast<int>(v.location().line())) + "key_prefix must be 1 to " +
             std::to_string(max_bits) + " for an IPv" + (r->v4 ? "4" : "6") + " rule";
      return false;
    }
    r->key_prefix = static_cast<uint8_t>(v.as_integer());
  }
  if (!parse_adaptive(rs, t, &r->adaptive, err)) return false;
  if (r->adaptive.enabled && r->action != RuleAction::Throttle) {
    *err = file_line(rs, line) + "only throttle rules can be adaptive ('" + action + "' has no rate to adapt)";
    return false;
  }
  return true;
}

// `dry_run = true`: the rule decides and counts as if enforcing, and drops nothing.
bool parse_rule_dry_run(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  return get_bool(rs, t, "dry_run", &r->dry_run, err, "",
                  ": dry_run = true counts what the rule would drop and drops nothing");
}

// `attack_drops = N`: the rule's own threshold for attack events (docs/events.md), 0: none.
bool parse_rule_attack_drops(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  if (!t.contains("attack_drops")) return true;
  const Value &v = t.at("attack_drops");
  if (!v.is_integer() || v.as_integer() < 0) {
    *err = file_line(rs, static_cast<int>(v.location().line())) +
           "'attack_drops' must be a whole number of drops per second, 0 or more (0: no attack events for the rule)";
    return false;
  }
  r->attack_drops = v.as_integer();
  return true;
}

// `key_by = "destination"`: the rule's buckets are its packets' destinations (cut to
// key_prefix), whatever the sources: a VIP's or a service's total. Checked after
// prefix_limits, which it cannot be combined with.
bool parse_rule_key_by(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  if (!t.contains("key_by")) return true;
  const Value &v = t.at("key_by");
  const std::string at = file_line(rs, static_cast<int>(v.location().line()));
  const std::string by = v.is_string() ? v.as_string().str : "";
  if (by != "source" && by != "destination")
    return *err = at +
                  "key_by must be \"source\" (the default: a bucket per source) or \"destination\" (a bucket "
                  "per destination address: a VIP's total, whatever the sources)",
           false;
  if (by == "source") return true;
  if (r->action != RuleAction::Throttle)
    return *err = at + "only throttle rules take key_by = \"destination\" ('" + rule_action_name(r->action) +
                  "' has no bucket)",
           false;
  if (!r->prefix_limits.empty())
    return *err = at +
                  "key_by = \"destination\" cannot be combined with prefix_limits (they cap the sources' "
                  "prefixes, and this rule's buckets are destinations): use key_prefix for a bucket per "
                  "destination prefix, and a rule of its own for the sources' prefix budgets",
           false;
  if (r->name.size() > kMaxRuleNameLen - kDestGroupSuffix.size())
    return *err = at + "rule '" + r->name + "' is keyed by destination, so its name may have at most " +
                  std::to_string(kMaxRuleNameLen - kDestGroupSuffix.size()) +
                  " characters (peers' reports name its buckets as '" + dest_group_name(r->name) + "')",
           false;
  r->key_by_dest = true;
  return true;
}

// One element of `prefix_limits`: "v4/24=1000/s,burst=2000" or { prefix = "v4/24", rate = 1000, burst = 2000 }.
bool parse_prefix_limit_value(const RuleSet &rs, const Value &v, PrefixLimit *out, std::string *err) {
  const int line = static_cast<int>(v.location().line());
  std::string why;
  if (v.is_string()) {
    if (!parse_prefix_limit(v.as_string().str, out, &why))
      return *err = file_line(rs, line) + "prefix_limits: " + why, false;
    return true;
  }
  if (!v.is_table())
    return *err = file_line(rs, line) +
                  "each prefix limit is a table { prefix = \"v4/24\", rate = 1000, burst = 2000 } "
                  "or a string \"v4/24=1000/s,burst=2000\"",
           false;
  if (!known_keys(rs, v, {"prefix", "rate", "burst"}, "a prefix limit", err)) return false;
  if (!v.contains("prefix") || !v.at("prefix").is_string())
    return *err = file_line(rs, line) + "a prefix limit needs 'prefix', a level such as \"v4/24\" or \"v6/48\"", false;
  if (!v.contains("rate") || !v.contains("burst"))
    return *err = file_line(rs, line) + "a prefix limit needs both 'rate' (per second) and 'burst'", false;
  double rate = 0;
  uint64_t burst = 0;
  bool rate_bytes = false, burst_bytes = false;
  if (!read_rate(rs, v.at("rate"), &rate, &rate_bytes, err) ||
      !read_burst(rs, v.at("burst"), &burst, &burst_bytes, err))
    return false;
  if (std::string m = budget_unit_mismatch(rate_bytes, burst_bytes, "rate = " + written(v.at("rate")),
                                           "burst = " + written(v.at("burst")));
      !m.empty())
    return *err = file_line(rs, line) + m, false;
  unsigned bits = 0;
  if (!parse_prefix_level(v.at("prefix").as_string().str, &out->v4, &bits, &why))
    return *err = file_line(rs, static_cast<int>(v.at("prefix").location().line())) + "prefix limit " + why, false;
  out->bits = static_cast<uint8_t>(bits);
  out->rate = rate;
  out->burst = burst;
  out->bytes = rate_bytes;
  out->text = v.at("prefix").as_string().str + "=" + written(v.at("rate")) + ",burst=" + written(v.at("burst"));
  return true;
}

// `prefix_limits = [...]`: the rule's prefix budgets, checked against the rule.
bool parse_rule_prefix_limits(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  if (!t.contains("prefix_limits")) return true;
  const Value &v = t.at("prefix_limits");
  const int line = static_cast<int>(v.location().line());
  if (!v.is_array())
    return *err = file_line(rs, line) +
                  "'prefix_limits' must be a list: prefix_limits = [{ prefix = \"v4/24\", rate = 1000, "
                  "burst = 2000 }]",
           false;
  if (r->action != RuleAction::Throttle)
    return *err = file_line(rs, line) + "only throttle rules take prefix_limits ('" + rule_action_name(r->action) +
                  "' has no budget to share)",
           false;
  for (const Value &e : v.as_array()) {
    PrefixLimit l;
    if (!parse_prefix_limit_value(rs, e, &l, err)) return false;
    r->prefix_limits.push_back(l);
  }
  std::string why;
  const unsigned v4_key = r->v4 ? r->key_prefix : 32, v6_key = r->v4 ? 64 : r->key_prefix;
  if (!check_prefix_limits(r->prefix_limits, r->name, r->bytes, v4_key, v6_key, &why))
    return *err = file_line(rs, line) + why, false;
  if (!r->prefix_limits.empty() && r->name.size() > kMaxRuleNameLen - kPrefixGroupSuffixMax)
    return *err = file_line(rs, line) + "rule '" + r->name + "' has prefix limits, so its name may have at most " +
                  std::to_string(kMaxRuleNameLen - kPrefixGroupSuffixMax) +
                  " characters (peers' reports name its levels as '" + prefix_group_name(r->name, 24) + "')",
           false;
  return true;
}

// `syn_cookies = true`: a SYN only a prefix budget refuses is answered with a SYN cookie
// (bpf/syncookie.bpf.h). Checked after prefix_limits: a throttle rule of TCP with prefix
// budgets only (no other rule has a SYN to answer, or a budget to spare it).
bool parse_rule_syn_cookies(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  bool on = false;
  if (!get_bool(rs, t, "syn_cookies", &on, err, "rule '" + r->name + "': ")) return false;
  if (!on) return true;
  const std::string at =
      file_line(rs, static_cast<int>(t.at("syn_cookies").location().line())) + "rule '" + r->name + "': ";
  if (r->action != RuleAction::Throttle)
    return *err = at + "only throttle rules take syn_cookies ('" + rule_action_name(r->action) +
                  "' has no budget to answer for)",
           false;
  if (r->proto != IPPROTO_TCP)
    return *err =
               at + "syn_cookies answers TCP SYNs: the rule needs proto = \"tcp\" (and usually dport and syn = true)",
           false;
  if (r->prefix_limits.empty())
    return *err = at + "syn_cookies answers the SYNs a prefix budget refuses: the rule needs prefix_limits", false;
  r->syn_cookies = true;
  return true;
}

bool parse_rule(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  const int line = static_cast<int>(t.location().line());
  r->line = line;
  if (!t.is_table()) {
    *err = file_line(rs, line) + "each [[rule]] must be a table";
    return false;
  }
  if (!known_keys(rs, t, {"name",   "cidr",        "action",     "proto",       "dport",     "syn",
                          "rate",   "burst",       "key_prefix", "adaptive",    "dry_run",   "prefix_limits",
                          "dst",    "sport",       "tcp_flags",  "icmp_type",   "icmp_code", "len",
                          "key_by", "syn_cookies", "escalate",   "attack_drops"},
                  "a [[rule]]", err))
    return false;
  std::string action;
  return parse_rule_name_cidr(rs, t, line, r, err) && parse_rule_action(rs, t, r, &action, err) &&
         parse_rule_match(rs, t, r, err) && parse_rule_conditions(rs, t, r, err) &&
         parse_rule_limits(rs, t, line, action, r, err) && parse_rule_dry_run(rs, t, r, err) &&
         parse_rule_prefix_limits(rs, t, r, err) && parse_rule_key_by(rs, t, r, err) &&
         parse_rule_syn_cookies(rs, t, r, err) && parse_rule_escalate(rs, t, r, err) &&
         parse_rule_attack_drops(rs, t, r, err);
}

}  // namespace

// The [[rule]] tables, appended to rs.rules after the default rule with ids in file order.
bool parse_rule_tables(RuleSet &rs, const Value &root, std::string *err) {
  std::set<std::string> names = {"default"};
  return each_table(rs, root, "rule", err, [&](const Value &t) {
    PacketRule r;
    if (!parse_rule(rs, t, &r, err)) return false;
    if (!names.insert(r.name).second) {
      *err = file_line(rs, r.line) + "rule name '" + r.name + "' is used twice" +
             (r.name == "default" ? " ('default' is the --rate/--burst rule)" : "");
      return false;
    }
    if (rs.rules.size() >= DT_MAX_RULES) {
      *err = file_line(rs, r.line) + "too many rules: at most " + std::to_string(DT_MAX_RULES - 1);
      return false;
    }
    r.id = static_cast<uint32_t>(rs.rules.size());
    rs.rules.push_back(r);
    return true;
  });
}

}  // namespace dt
