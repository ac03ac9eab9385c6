// rules.cpp - reading, checking and compiling the rules file.
#include "rules/rules.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <toml.hpp>

#include "common/address.h"
#include "common/parse_values.h"
#include "common/report_types.h"
#include "dataplane/policy.h"
#include "dthrottle/bucket.h"

namespace dt {
namespace {


using Value = toml::value;

std::string at(const RuleSet &rs, int line) { return rs.origin + ":" + std::to_string(line) + ": "; }

// Reads a number that TOML may hold as an integer or a float.
bool get_number(const Value &v, double *out) {
  if (v.is_integer()) *out = static_cast<double>(v.as_integer());
  else if (v.is_floating()) *out = v.as_floating();
  else return false;
  return true;
}

bool parse_cidr(const std::string &s, PacketRule *r, std::string *why) {
  std::string addr = s, len;
  size_t slash = s.find('/');
  if (slash != std::string::npos) {
    addr = s.substr(0, slash);
    len = s.substr(slash + 1);
  }
  uint8_t buf[16] = {};
  int max;
  if (inet_pton(AF_INET, addr.c_str(), &buf[12]) == 1) {
    memcpy(buf, kV4MappedPrefix, sizeof kV4MappedPrefix);
    r->v4 = true;
    max = 32;
  } else if (inet_pton(AF_INET6, addr.c_str(), buf) == 1) {
    r->v4 = false;
    max = 128;
  } else {
    *why = "'" + s + "' is not an IPv4 or IPv6 address or CIDR";
    return false;
  }
  int bits = max;
  if (slash != std::string::npos) {
    bool digits = !len.empty() && len.size() <= 3;
    for (char c : len) digits = digits && isdigit(static_cast<unsigned char>(c));
    bits = digits ? std::stoi(len) : -1;
    if (bits < 0 || bits > max) {
      *why = "'" + s + "': prefix length must be 0 to " + std::to_string(max);
      return false;
    }
  }
  const int full = r->v4 ? 96 + bits : bits;
  for (int i = full; i < 128; i++) {
    if (buf[i / 8] & (0x80 >> (i % 8))) {
      *why = "'" + s + "' has bits set past its /" + std::to_string(bits) + " prefix (did you mean the network address?)";
      return false;
    }
  }
  if (!r->v4 && full >= 96 && addr_is_v4(buf)) {
    *why = "'" + s + "' is an IPv4-mapped range: write it as an IPv4 CIDR";
    return false;
  }
  memcpy(r->addr, buf, 16);
  r->prefix_len = static_cast<uint8_t>(full);
  return true;
}

bool parse_ports(const std::string &s, uint16_t *lo, uint16_t *hi) {
  size_t dash = s.find('-');
  auto num = [](const std::string &t, uint16_t *out) {
    if (t.empty() || t.size() > 5) return false;
    for (char c : t)
      if (!isdigit(static_cast<unsigned char>(c))) return false;
    unsigned long v = std::stoul(t);
    if (v == 0 || v > 65535) return false;
    *out = static_cast<uint16_t>(v);
    return true;
  };
  if (dash == std::string::npos) return num(s, lo) && (*hi = *lo, true);
  return num(s.substr(0, dash), lo) && num(s.substr(dash + 1), hi) && *lo <= *hi;
}

// Checks that `table` has only the keys in `allowed`.
bool known_keys(const RuleSet &rs, const Value &table, const std::set<std::string> &allowed, const char *what,
                std::string *err) {
  for (const auto &[k, v] : table.as_table()) {
    if (!allowed.count(k)) {
      std::string list;
      for (const auto &a : allowed) list += (list.empty() ? "" : ", ") + a;
      *err = at(rs, static_cast<int>(v.location().line())) + "unknown key '" + k + "' in " + what +
             " (known: " + list + ")";
      return false;
    }
  }
  return true;
}

// A rate or burst value as written, for messages: 100, "10Mbit/s".
std::string written(const Value &v) {
  if (v.is_string()) return "\"" + v.as_string().str + "\"";
  if (v.is_integer()) return std::to_string(v.as_integer());
  if (v.is_floating()) {
    char buf[32];
    snprintf(buf, sizeof buf, "%g", v.as_floating());
    return buf;
  }
  return "?";
}

// 'rate': a number (packets per second) or a string: "10/m", "100kB/s", "10Mbit/s".
bool read_rate(const RuleSet &rs, const Value &r, double *rate, bool *bytes, std::string *err) {
  const int line = static_cast<int>(r.location().line());
  std::string why;
  if (r.is_string() && !parse_budget_rate(r.as_string().str, rate, bytes, &why))
    return *err = at(rs, line) + "'rate': " + why, false;
  if (r.is_string()) return true;
  *bytes = false;
  if (!get_number(r, rate))
    return *err = at(rs, line) + "'rate' must be a number of packets per second, or a string such as \"10Mbit/s\"",
           false;
  return true;
}

// 'burst': a whole number of packets, or a string with a byte unit: "15kB".
bool read_burst(const RuleSet &rs, const Value &b, uint64_t *burst, bool *bytes, std::string *err) {
  const int line = static_cast<int>(b.location().line());
  std::string why;
  if (b.is_string() && !parse_budget_burst(b.as_string().str, burst, bytes, &why))
    return *err = at(rs, line) + "'burst': " + why, false;
  if (b.is_string()) return true;
  *bytes = false;
  if (!b.is_integer() || b.as_integer() < 1)
    return *err = at(rs, line) + "'burst' must be a whole number of at least 1, or bytes such as \"15kB\"", false;
  *burst = static_cast<uint64_t>(b.as_integer());
  return true;
}

// A throttle's rate and burst. `bytes` null: a tag rule, which counts queries only.
bool rate_burst(const RuleSet &rs, const Value &t, int line, double *rate, uint64_t *burst, bool *bytes,
                std::string *err) {
  if (!t.contains("rate") || !t.contains("burst")) {
    *err = at(rs, line) + "a throttle needs both 'rate' (per second) and 'burst'";
    return false;
  }
  const Value &r = t.at("rate"), &b = t.at("burst");
  bool rate_bytes = false, burst_bytes = false;
  if (!read_rate(rs, r, rate, &rate_bytes, err) || !read_burst(rs, b, burst, &burst_bytes, err)) return false;
  if (!bytes && (rate_bytes || burst_bytes)) {
    *err = at(rs, line) + "tag rules count queries, not bytes: give 'rate' and 'burst' as numbers (rate = 100, burst = 50)";
    return false;
  }
  if (std::string m = budget_unit_mismatch(rate_bytes, burst_bytes, "rate = " + written(r), "burst = " + written(b));
      !m.empty())
    return *err = at(rs, line) + m, false;
  dt_policy p{};
  std::string why;
  if (!make_policy(*rate, *burst, &p, &why, rate_bytes)) {
    *err = at(rs, static_cast<int>(r.location().line())) + why;
    return false;
  }
  if (bytes) *bytes = rate_bytes;
  return true;
}

// `adaptive = true`, or a table of the controller's parameters (adaptive.h).
bool parse_adaptive(const RuleSet &rs, const Value &t, AdaptiveConfig *out, std::string *err) {
  if (!t.contains("adaptive")) return true;
  const Value &v = t.at("adaptive");
  const int line = static_cast<int>(v.location().line());
  if (v.is_boolean()) {
    out->enabled = v.as_boolean();
    return true;
  }
  if (!v.is_table()) {
    *err = at(rs, line) + "'adaptive' must be true, false or a table like { decrease = 0.5, recovery = 3 }";
    return false;
  }
  if (!known_keys(rs, v, {"decrease", "recovery", "floor", "scope", "listen_port"}, "'adaptive'", err)) return false;
  out->enabled = true;
  AdaptiveParams &p = out->params;
  for (auto [key, dst] : {std::pair{"decrease", &p.decrease}, {"recovery", &p.recovery}, {"floor", &p.floor}}) {
    if (v.contains(key) && !get_number(v.at(key), dst)) {
      *err = at(rs, static_cast<int>(v.at(key).location().line())) + "adaptive '" + key + "' must be a number";
      return false;
    }
  }
  if (v.contains("scope")) {
    const Value &s = v.at("scope");
    const std::string scope = s.is_string() ? s.as_string().str : "";
    if (scope != "cluster" && scope != "local") {
      *err = at(rs, static_cast<int>(s.location().line())) + "adaptive 'scope' must be \"cluster\" or \"local\"";
      return false;
    }
    p.cluster = scope == "cluster";
  }
  if (v.contains("listen_port")) {
    const Value &lp = v.at("listen_port");
    if (!lp.is_integer() || lp.as_integer() < 1 || lp.as_integer() > 65535) {
      *err = at(rs, static_cast<int>(lp.location().line())) + "adaptive 'listen_port' must be a TCP port, 1 to 65535";
      return false;
    }
    out->listen_port = static_cast<uint16_t>(lp.as_integer());
  }
  std::string why;
  if (!validate_adaptive_params(p, &why)) {
    *err = at(rs, line) + "adaptive: " + why;
    return false;
  }
  return true;
}

// The string value of key k in table t.
bool get_string(const RuleSet &rs, const Value &t, const char *k, std::string *out, std::string *err) {
  const Value &v = t.at(k);
  if (!v.is_string()) {
    *err = at(rs, static_cast<int>(v.location().line())) + "'" + k + "' must be a string";
    return false;
  }
  *out = v.as_string().str;
  return true;
}

// A [[rule]]'s name and the addresses it covers.
bool parse_rule_name_cidr(const RuleSet &rs, const Value &t, int line, PacketRule *r, std::string *err) {
  if (!t.contains("name") || !t.contains("cidr")) {
    *err = at(rs, line) + "a [[rule]] needs a 'name' and a 'cidr'";
    return false;
  }
  std::string cidr, why;
  if (!get_string(rs, t, "name", &r->name, err) || !get_string(rs, t, "cidr", &cidr, err)) return false;
  if (!valid_node_id(r->name) || r->name.size() > 47) {
    *err = at(rs, static_cast<int>(t.at("name").location().line())) + "rule name '" + r->name +
           "' must be 1 to 47 characters of A-Z a-z 0-9 . _ : -";
    return false;
  }
  std::string base;
  unsigned level_bits = 0;
  if (split_prefix_group_name(r->name, &base, &level_bits)) {
    *err = at(rs, static_cast<int>(t.at("name").location().line())) + "rule name '" + r->name +
           "' ends like a prefix level in peers' reports ('::p' and a length): choose another name";
    return false;
  }
  if (!parse_cidr(cidr, r, &why)) {
    *err = at(rs, static_cast<int>(t.at("cidr").location().line())) + why;
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
    *err = at(rs, static_cast<int>(t.at("action").location().line())) + "action '" + *action +
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
      *err = at(rs, static_cast<int>(t.at("proto").location().line())) + "proto '" + p + "' is not one of tcp, udp, icmp";
      return false;
    }
  }
  if (t.contains("dport")) {
    const Value &v = t.at("dport");
    std::string d = v.is_integer() ? std::to_string(v.as_integer()) : (v.is_string() ? v.as_string().str : "");
    if (r->proto != IPPROTO_TCP && r->proto != IPPROTO_UDP) {
      *err = at(rs, static_cast<int>(v.location().line())) + "'dport' needs proto = \"tcp\" or \"udp\"";
      return false;
    }
    if (!parse_ports(d, &r->dport_lo, &r->dport_hi)) {
      *err = at(rs, static_cast<int>(v.location().line())) + "dport must be a port (1-65535) or a range like \"8000-8080\"";
      return false;
    }
  }
  if (t.contains("syn")) {
    const Value &v = t.at("syn");
    if (!v.is_boolean() || (v.as_boolean() && r->proto != IPPROTO_TCP)) {
      *err = at(rs, static_cast<int>(v.location().line())) + "'syn' is true or false, and true needs proto = \"tcp\"";
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
    *err = at(rs, line) + "'" + action + "' rules take no rate or burst";
    return false;
  }
  const int max_bits = r->v4 ? 32 : 128;
  r->key_prefix = static_cast<uint8_t>(r->v4 ? 32 : 64);
  if (t.contains("key_prefix")) {
    const Value &v = t.at("key_prefix");
    if (!v.is_integer() || v.as_integer() < 1 || v.as_integer() > max_bits) {
      *err = at(rs, static_cast<int>(v.location().line())) + "key_prefix must be 1 to " + std::to_string(max_bits) +
             " for an IPv" + (r->v4 ? "4" : "6") + " rule";
      return false;
    }
    r->key_prefix = static_cast<uint8_t>(v.as_integer());
  }
  if (!parse_adaptive(rs, t, &r->adaptive, err)) return false;
  if (r->adaptive.enabled && r->action != RuleAction::Throttle) {
    *err = at(rs, line) + "only throttle rules can be adaptive ('" + action + "' has no rate to adapt)";
    return false;
  }
  return true;
}

// `dry_run = true`: the rule decides and counts as if enforcing, and drops nothing.
bool parse_rule_dry_run(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  if (!t.contains("dry_run")) return true;
  const Value &v = t.at("dry_run");
  if (!v.is_boolean()) {
    *err = at(rs, static_cast<int>(v.location().line())) +
           "'dry_run' must be true or false (without quotes): dry_run = true counts what the rule would drop "
           "and drops nothing";
    return false;
  }
  r->dry_run = v.as_boolean();
  return true;
}

// One element of `prefix_limits`: "v4/24=1000/s,burst=2000" or { prefix = "v4/24", rate = 1000, burst = 2000 }.
bool parse_prefix_limit_value(const RuleSet &rs, const Value &v, PrefixLimit *out, std::string *err) {
  const int line = static_cast<int>(v.location().line());
  std::string why;
  if (v.is_string()) {
    if (!parse_prefix_limit(v.as_string().str, out, &why)) return *err = at(rs, line) + "prefix_limits: " + why, false;
    return true;
  }
  if (!v.is_table())
    return *err = at(rs, line) + "each prefix limit is a table { prefix = \"v4/24\", rate = 1000, burst = 2000 } "
                                 "or a string \"v4/24=1000/s,burst=2000\"",
           false;
  if (!known_keys(rs, v, {"prefix", "rate", "burst"}, "a prefix limit", err)) return false;
  if (!v.contains("prefix") || !v.at("prefix").is_string())
    return *err = at(rs, line) + "a prefix limit needs 'prefix', a level such as \"v4/24\" or \"v6/48\"", false;
  if (!v.contains("rate") || !v.contains("burst"))
    return *err = at(rs, line) + "a prefix limit needs both 'rate' (per second) and 'burst'", false;
  double rate = 0;
  uint64_t burst = 0;
  bool rate_bytes = false, burst_bytes = false;
  if (!read_rate(rs, v.at("rate"), &rate, &rate_bytes, err) || !read_burst(rs, v.at("burst"), &burst, &burst_bytes, err))
    return false;
  if (std::string m = budget_unit_mismatch(rate_bytes, burst_bytes, "rate = " + written(v.at("rate")),
                                           "burst = " + written(v.at("burst")));
      !m.empty())
    return *err = at(rs, line) + m, false;
  unsigned bits = 0;
  if (!parse_prefix_level(v.at("prefix").as_string().str, &out->v4, &bits, &why))
    return *err = at(rs, static_cast<int>(v.at("prefix").location().line())) + "prefix limit " + why, false;
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
    return *err = at(rs, line) + "'prefix_limits' must be a list: prefix_limits = [{ prefix = \"v4/24\", rate = 1000, "
                                 "burst = 2000 }]",
           false;
  if (r->action != RuleAction::Throttle)
    return *err = at(rs, line) + "only throttle rules take prefix_limits ('" + rule_action_name(r->action) +
                  "' has no budget to share)",
           false;
  for (const Value &e : v.as_array()) {
    PrefixLimit l;
    if (!parse_prefix_limit_value(rs, e, &l, err)) return false;
    r->prefix_limits.push_back(l);
  }
  std::string why;
  const unsigned v4_key = r->v4 ? r->key_prefix : 32, v6_key = r->v4 ? 64 : r->key_prefix;
  if (!check_prefix_limits(r->prefix_limits, r->name, r->bytes, v4_key, v6_key, &why)) return *err = at(rs, line) + why, false;
  if (!r->prefix_limits.empty() && r->name.size() > kMaxRuleNameLen - kPrefixGroupSuffixMax)
    return *err = at(rs, line) + "rule '" + r->name + "' has prefix limits, so its name may have at most " +
                  std::to_string(kMaxRuleNameLen - kPrefixGroupSuffixMax) +
                  " characters (peers' reports name its levels as '" + prefix_group_name(r->name, 24) + "')",
           false;
  return true;
}

bool parse_rule(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  const int line = static_cast<int>(t.location().line());
  r->line = line;
  if (!t.is_table()) {
    *err = at(rs, line) + "each [[rule]] must be a table";
    return false;
  }
  if (!known_keys(rs, t,
                  {"name", "cidr", "action", "proto", "dport", "syn", "rate", "burst", "key_prefix", "adaptive",
                   "dry_run", "prefix_limits"},
                  "a [[rule]]", err))
    return false;
  std::string action;
  return parse_rule_name_cidr(rs, t, line, r, err) && parse_rule_action(rs, t, r, &action, err) &&
         parse_rule_match(rs, t, r, err) && parse_rule_limits(rs, t, line, action, r, err) &&
         parse_rule_dry_run(rs, t, r, err) && parse_rule_prefix_limits(rs, t, r, err);
}

// The [[rule]] tables, appended to rs.rules after the default rule with ids in file order.
bool parse_rule_tables(RuleSet &rs, const Value &root, std::string *err) {
  if (!root.contains("rule")) return true;
  const Value &arr = root.at("rule");
  if (!arr.is_array()) {
    *err = at(rs, static_cast<int>(arr.location().line())) + "'rule' must be written as [[rule]] tables";
    return false;
  }
  std::set<std::string> names = {"default"};
  for (const Value &t : arr.as_array()) {
    PacketRule r;
    if (!parse_rule(rs, t, &r, err)) return false;
    if (!names.insert(r.name).second) {
      *err = at(rs, r.line) + "rule name '" + r.name + "' is used twice" +
             (r.name == "default" ? " ('default' is the --rate/--burst rule)" : "");
      return false;
    }
    if (rs.rules.size() >= DT_MAX_RULES) {
      *err = at(rs, r.line) + "too many rules: at most " + std::to_string(DT_MAX_RULES - 1);
      return false;
    }
    r.id = static_cast<uint32_t>(rs.rules.size());
    rs.rules.push_back(r);
  }
  return true;
}

// A [[tag]]'s strict (Redis-held) budget and what to do when Redis fails.
bool parse_tag_strict(const RuleSet &rs, const Value &t, TagRule *tr, std::string *err) {
  if (t.contains("strict")) {
    if (!t.at("strict").is_boolean()) {
      *err = at(rs, tr->line) + "'strict' must be true or false";
      return false;
    }
    tr->strict = t.at("strict").as_boolean();
  }
  if (t.contains("on_redis_error")) {
    const Value &v = t.at("on_redis_error");
    const std::string s = v.is_string() ? v.as_string().str : "";
    if (s != "deny" && s != "local") {
      *err = at(rs, tr->line) + "'on_redis_error' must be \"deny\" or \"local\"";
      return false;
    }
    if (!tr->strict) {
      *err = at(rs, tr->line) + "'on_redis_error' applies to strict tags only (add strict = true)";
      return false;
    }
    tr->strict_fallback_local = s == "local";
  }
  return true;
}

// One [[tag]] table; `prefixes` holds the prefixes of the tags before it (each may appear once).
bool parse_tag(const RuleSet &rs, const Value &t, std::set<std::string> *prefixes, TagRule *tr, std::string *err) {
  tr->line = static_cast<int>(t.location().line());
  if (!t.is_table() ||
      !known_keys(rs, t, {"prefix", "rate", "burst", "strict", "on_redis_error", "adaptive"}, "a [[tag]]", err)) {
    if (err->empty()) *err = at(rs, tr->line) + "each [[tag]] must be a table";
    return false;
  }
  if (!t.contains("prefix") || !t.at("prefix").is_string()) {
    *err = at(rs, tr->line) + "a [[tag]] needs a 'prefix' string (\"\" matches every tag)";
    return false;
  }
  tr->prefix = t.at("prefix").as_string().str;
  if (tr->prefix.size() > 1024 || tr->prefix.find('\n') != std::string::npos) {
    *err = at(rs, tr->line) + "tag prefix must be at most 1024 bytes, without newlines";
    return false;
  }
  if (!prefixes->insert(tr->prefix).second) {
    *err = at(rs, tr->line) + "tag prefix '" + tr->prefix + "' is used twice";
    return false;
  }
  if (!rate_burst(rs, t, tr->line, &tr->rate, &tr->burst, nullptr, err)) return false;
  if (!parse_tag_strict(rs, t, tr, err)) return false;
  if (!parse_adaptive(rs, t, &tr->adaptive, err)) return false;
  if (tr->adaptive.enabled && tr->strict) {
    *err = at(rs, tr->line) + "a strict tag rule cannot be adaptive (Redis holds its one budget)";
    return false;
  }
  return true;
}

// The [[tag]] tables, into rs.tags in file order.
bool parse_tag_tables(RuleSet &rs, const Value &root, std::string *err) {
  if (!root.contains("tag")) return true;
  const Value &arr = root.at("tag");
  if (!arr.is_array()) {
    *err = at(rs, static_cast<int>(arr.location().line())) + "'tag' must be written as [[tag]] tables";
    return false;
  }
  std::set<std::string> prefixes;
  for (const Value &t : arr.as_array()) {
    TagRule tr;
    if (!parse_tag(rs, t, &prefixes, &tr, err)) return false;
    rs.tags.push_back(tr);
  }
  return true;
}

// The TOML document, or false with the first line of the parser's complaint.
bool parse_toml(const RuleSet &rs, const std::string &text, Value *root, std::string *err) {
  try {
    std::istringstream in(text);
    *root = toml::parse(in, rs.origin);
  } catch (const toml::syntax_error &e) {
    std::string first = e.what();
    first = first.substr(0, first.find('\n'));
    if (first.rfind("[error] ", 0) == 0) first = first.substr(8);
    *err = at(rs, static_cast<int>(e.location().line())) + "TOML syntax: " + first;
    return false;
  } catch (const std::exception &e) {
    *err = rs.origin + ": " + e.what();
    return false;
  }
  return true;
}

std::string prefix_text(const uint8_t *addr, int len) {
  char buf[INET6_ADDRSTRLEN];
  if (addr_is_v4(addr) && len >= 96) {
    inet_ntop(AF_INET, addr + 12, buf, sizeof buf);
    return std::string(buf) + "/" + std::to_string(len - 96);
  }
  inet_ntop(AF_INET6, addr, buf, sizeof buf);
  return std::string(buf) + "/" + std::to_string(len);
}

bool covers(const uint8_t *net, int len, const uint8_t *addr) {
  for (int i = 0; i < len; i++) {
    const uint8_t bit = 0x80 >> (i % 8);
    if ((net[i / 8] & bit) != (addr[i / 8] & bit)) return false;
  }
  return true;
}


// One policy per rule id, so the program finds a rule's policy at its id.
bool compile_policies(const RuleSet &rs, CompiledRules *c, std::string *err) {
  uint32_t max_id = 0;
  for (const auto &r : rs.rules) max_id = std::max(max_id, r.id);
  if (max_id >= DT_MAX_RULES) {
    *err = rs.origin + ": rule id " + std::to_string(max_id) + " out of range";
    return false;
  }
  c->policies.resize(max_id + 1);  // ids not in use: empty policies no prefix leads to
  for (size_t i = 0; i < rs.rules.size(); i++) {
    const PacketRule &r = rs.rules[i];
    dt_policy &p = c->policies[r.id];
    std::string why;
    if (r.action == RuleAction::Throttle && !make_policy(r.rate, r.burst, &p, &why, r.bytes)) {
      *err = (i == 0 ? "default rule: " : at(rs, r.line)) + why;
      return false;
    }
    p.action = static_cast<uint8_t>(r.action);
    p.flags = static_cast<uint8_t>(p.flags | (r.dry_run ? DT_POL_DRY_RUN : 0));
    p.v4_key_bits = r.key_prefix && r.v4 ? r.key_prefix : 32;
    p.v6_key_bits = r.key_prefix && !r.v4 ? r.key_prefix : 64;
    if (r.prefix_limits.empty()) continue;
    if (r.action != RuleAction::Throttle) {
      *err = (i == 0 ? std::string("default rule: ") : at(rs, r.line)) +
             "prefix limits need a throttle rule (for the default rule: --rate and --burst)";
      return false;
    }
    if (!check_prefix_limits(r.prefix_limits, r.name, r.bytes, p.v4_key_bits, p.v6_key_bits, &why)) {
      *err = (i == 0 ? "" : at(rs, r.line)) + why;
      return false;
    }
    c->prefix.resize(c->policies.size());
    c->prefix[r.id] = compile_prefix_limits(r.prefix_limits);
    p.flags = static_cast<uint8_t>(p.flags | DT_POL_PREFIX);
  }
  return true;
}

// A distinct rule prefix (or a family's root) and the indexes of the rules written with it.
struct Prefix {
  uint8_t addr[16];
  int len;
  std::vector<uint16_t> own;
};

// The family's root and every distinct prefix of its rules (IPv4 ones when v4), shortest first.
std::vector<Prefix> family_prefixes(const RuleSet &rs, bool v4) {
  std::vector<Prefix> prefixes;
  Prefix root{};
  if (v4) memcpy(root.addr, kV4MappedPrefix, sizeof kV4MappedPrefix);
  root.len = v4 ? 96 : 0;
  prefixes.push_back(root);
  for (size_t i = 1; i < rs.rules.size(); i++) {
    const PacketRule &r = rs.rules[i];
    if (r.v4 != v4) continue;
    auto it = std::find_if(prefixes.begin(), prefixes.end(), [&](const Prefix &p) {
      return p.len == r.prefix_len && memcmp(p.addr, r.addr, 16) == 0;
    });
    if (it == prefixes.end()) {
      Prefix p{};
      memcpy(p.addr, r.addr, 16);
      p.len = r.prefix_len;
      prefixes.push_back(p);
      it = prefixes.end() - 1;
    }
    it->own.push_back(static_cast<uint16_t>(i));
  }
  std::sort(prefixes.begin(), prefixes.end(), [](const Prefix &a, const Prefix &b) { return a.len < b.len; });
  return prefixes;
}

// The LPM value of a prefix: its candidate rules (indexes into rs.rules) in the order they are tried.
dt_rule_set rule_set_of(const RuleSet &rs, const std::vector<uint16_t> &cands) {
  dt_rule_set set{};
  set.count = static_cast<uint32_t>(cands.size());
  for (size_t m = 0; m < cands.size(); m++) {
    const PacketRule &r = rs.rules[cands[m]];
    dt_rule_match &mm = set.m[m];
    mm.rule = static_cast<uint16_t>(r.id);
    mm.proto = r.proto;
    mm.flags = static_cast<uint8_t>((r.syn_only ? DT_MATCH_SYN : 0) | (r.dport_lo ? DT_MATCH_PORTS : 0));
    mm.dport_lo = r.dport_lo;
    mm.dport_hi = r.dport_hi;
  }
  return set;
}

// One family's LPM entries: every rule prefix plus the family's root, each with its own
// candidates then its nearest covering prefix's candidates.
bool compile_family(const RuleSet &rs, bool v4, CompiledRules *c, std::string *err) {
  const std::vector<Prefix> prefixes = family_prefixes(rs, v4);
  std::vector<std::vector<uint16_t>> cands(prefixes.size());
  for (size_t i = 0; i < prefixes.size(); i++) {
    cands[i] = prefixes[i].own;
    int parent = -1;
    for (size_t j = 0; j < i; j++)
      if (prefixes[j].len < prefixes[i].len && covers(prefixes[j].addr, prefixes[j].len, prefixes[i].addr))
        parent = static_cast<int>(j);  // sorted by length: the last one is the nearest
    if (parent >= 0) cands[i].insert(cands[i].end(), cands[parent].begin(), cands[parent].end() - 1);
    cands[i].push_back(DT_RULE_DEFAULT);
    if (cands[i].size() > DT_MAX_CANDIDATES) {
      *err = rs.origin + ": too many rules apply to " + prefix_text(prefixes[i].addr, prefixes[i].len) + " (" +
             std::to_string(cands[i].size()) + " with the default; at most " + std::to_string(DT_MAX_CANDIDATES) + ")";
      return false;
    }
    dt_lpm_key k{};
    k.prefixlen = static_cast<uint32_t>(prefixes[i].len);
    memcpy(k.addr, prefixes[i].addr, 16);
    c->lpm.emplace_back(k, rule_set_of(rs, cands[i]));
  }
  return true;
}

}  // namespace

const char *rule_action_name(RuleAction a) {
  switch (a) {
    case RuleAction::Throttle: return "throttle";
    case RuleAction::Allow: return "allow";
    case RuleAction::Deny: return "deny";
  }
  return "?";
}

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

bool parse_rules(const std::string &text, const std::string &origin, RuleSet *out, std::string *err) {
  RuleSet rs = *out;
  rs.origin = origin;
  rs.rules.resize(1);  // keep the default rule only
  rs.tags.clear();
  Value root;
  if (!parse_toml(rs, text, &root, err)) return false;
  if (!known_keys(rs, root, {"version", "rule", "tag"}, "the file", err)) return false;
  if (!root.contains("version") || !root.at("version").is_integer() || root.at("version").as_integer() != 1) {
    const int line = root.contains("version") ? static_cast<int>(root.at("version").location().line()) : 1;
    *err = at(rs, line) + "the file needs 'version = 1' (the rules format version)";
    return false;
  }
  try {
    if (!parse_rule_tables(rs, root, err) || !parse_tag_tables(rs, root, err)) return false;
  } catch (const std::exception &e) {
    std::string first = e.what();
    *err = origin + ": " + first.substr(0, first.find('\n'));
    return false;
  }
  *out = std::move(rs);
  return true;
}

bool load_rules_file(const std::string &path, RuleSet *out, std::string *err) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot read rules file " + path + ": " + strerror(errno);
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_rules(ss.str(), path, out, err);
}

bool compile_rules(const RuleSet &rs, CompiledRules *out, std::string *err) {
  CompiledRules c;
  if (!compile_policies(rs, &c, err)) return false;
  if (rs.rules.size() > 1) {
    if (!compile_family(rs, false, &c, err) || !compile_family(rs, true, &c, err)) return false;
    if (c.lpm.size() > DT_MAX_PREFIXES) {
      *err = rs.origin + ": too many distinct prefixes (" + std::to_string(c.lpm.size()) + ", at most " +
             std::to_string(DT_MAX_PREFIXES) + ")";
      return false;
    }
  }
  *out = std::move(c);
  return true;
}

bool load_rules(double rate, uint64_t burst, bool bytes, const std::string &path, LoadedRules *out,
                std::string *err, const LoadedRules *previous, const std::vector<PrefixLimit> &prefix) {
  LoadedRules r;
  r.set = default_rules(rate, burst, bytes);
  r.set.rules[0].prefix_limits = prefix;
  if (!path.empty() && !load_rules_file(path, &r.set, err)) return false;
  if (previous) {
    // Same name, same id; the others take the lowest ids no kept rule uses.
    std::map<std::string, uint32_t> old_ids;
    for (const auto &p : previous->set.rules) old_ids[p.name] = p.id;
    std::vector<bool> used(DT_MAX_RULES, false);
    used[DT_RULE_DEFAULT] = true;
    for (auto &rule : r.set.rules)
      if (auto it = old_ids.find(rule.name); it != old_ids.end() && rule.name != "default") used[it->second] = true;
    uint32_t next_free = 1;
    for (size_t i = 1; i < r.set.rules.size(); i++) {
      PacketRule &rule = r.set.rules[i];
      if (auto it = old_ids.find(rule.name); it != old_ids.end()) {
        rule.id = it->second;
        continue;
      }
      while (next_free < DT_MAX_RULES && used[next_free]) next_free++;
      rule.id = next_free;
      used[next_free] = true;
    }
  }
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

std::set<uint32_t> prefix_level_keys(const LoadedRules &r) {
  std::set<uint32_t> out;
  for (const auto &rule : r.set.rules)
    if (rule.action == RuleAction::Throttle)
      for (const PrefixLimit &l : rule.prefix_limits) out.insert(dt_prefix_key_rule(rule.id, l.bits, !l.v4));
  return out;
}

void set_all_dry_run(LoadedRules *r) {
  for (auto &rule : r->set.rules) rule.dry_run = true;
  for (auto &p : r->compiled.policies) p.flags |= DT_POL_DRY_RUN;
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
  std::string levels;
  for (const auto &rule : r.set.rules)
    for (const PrefixLimit &l : rule.prefix_limits)
      levels += (levels.empty() ? "" : ", ") + rule.name + " " + format_prefix_limit(l);
  if (!levels.empty()) out += "; prefix budgets: " + levels;
  return out;
}

}  // namespace dt
