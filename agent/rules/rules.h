// rules.h - the rules file (--rules FILE): whom to throttle how.
//
// Format: TOML, version 1 (see docs/rules.md, man dthrottle-rules). TOML because it has comments, typed
// values and, through Debian's toml11, line-precise error messages; JSON has no
// comments and YAML's implicit typing turns `no` into false.
//
//   version = 1
//   [[rule]]                      # packet rules: longest prefix wins, then file order
//   name = "office"
//   cidr = "198.18.10.0/24"
//   action = "allow"              # throttle (default) | allow | deny
//   [[rule]]
//   name = "web-syn"
//   cidr = "0.0.0.0/0"
//   proto = "tcp"                 # tcp | udp | icmp (any if absent)
//   dport = "80-443"              # one port or a range (tcp/udp only)
//   syn = true                    # TCP SYN without ACK only (new connections)
//   dst = "203.0.113.0/24"        # the packet's destination (a VIP); without cidr: any source
//   sport = 123                   # source port or range (tcp/udp only)
//   tcp_flags = "SYN,!ACK"        # flags set (NAME) and clear (!NAME); tcp only
//   icmp_type = 8                 # ICMP / ICMPv6 type (icmp only), icmp_code = 0 too
//   len = "0-100"                 # frame length in bytes, Ethernet header included
//   rate = 20                     # packets per second, or bytes: rate = "10Mbit/s"
//   burst = 40                    # packets, or bytes with a byte rate: burst = "15kB"
//   key_prefix = 24               # one bucket per /24 (default: /32 IPv4, /64 IPv6)
//   key_by = "destination"        # one bucket per destination (a VIP's total); default "source"
//   adaptive = true               # back off on busy signals (default false), or a table:
//   adaptive = { decrease = 0.5, recovery = 3, floor = 0.01, scope = "cluster", listen_port = 443 }
//   dry_run = true                # decide and count, drop nothing (would_drop); default false
//   syn_cookies = true            # tcp with prefix_limits: answer SYNs they refuse with a cookie
//   escalate = { after = "30s", ban = "10m", factor = 2, max = "7d", forget = "14d" }
//                                 # over budget for `after`: banned, longer with each repeat
//   prefix_limits = [             # also cap the aggregate of the rule's sources per prefix
//     { prefix = "v4/24", rate = 1000, burst = 2000 },
//     "v4/16=5000/s,burst=10000",  # the --prefix-limit syntax works too
//   ]
//   allow_file = "allow.netset"   # top level: allow and deny lists (docs/lists.md),
//   deny_file = "/etc/dthrottle/deny.netset"  # relative to this file's folder
//   [[tag]]                       # query-socket tags: longest string prefix wins
//   prefix = "user:"
//   rate = 5
//   burst = 10
//   strict = true                 # decided by Redis (--redis); default false
//   on_redis_error = "deny"       # deny (default) | local: if Redis cannot answer
//
// --rate/--burst make rule 0, "default", which applies to sources no rule matches;
// without them unmatched traffic passes.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dthrottle/common.h"
#include "policy/escalate_config.h"
#include "rules/list_file.h"
#include "rules/prefix_limits.h"
#include "rules/tags.h"

namespace dt {

enum class RuleAction : uint8_t { Throttle = DT_ACT_THROTTLE, Allow = DT_ACT_ALLOW, Deny = DT_ACT_DENY };
const char *rule_action_name(RuleAction a);

struct PacketRule {
  std::string name;
  uint8_t addr[16] = {};   // network, IPv4 as ::ffff:a.b.c.d
  uint8_t prefix_len = 0;  // of the 128-bit form (IPv4 /24 is 120)
  bool v4 = true;
  uint8_t proto = 0;                    // 0 any, IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP (ICMPv6 for IPv6)
  uint16_t dport_lo = 0, dport_hi = 0;  // 0,0: any
  bool syn_only = false;                // syn = true: the same as tcp_flags = "SYN,!ACK"
  // Conditions beside cidr (docs/rules.md "Conditions"); the kernel's form: dt_rule_match, dt_rule_cond.
  uint16_t sport_lo = 0, sport_hi = 0;  // 0,0: any
  uint8_t tcp_mask = 0, tcp_value = 0;  // (TCP flags & mask) == value; mask 0: any
  int icmp_type = -1, icmp_code = -1;   // -1: any
  bool has_dst = false;                 // dst = "203.0.113.0/24"
  uint8_t dst[16] = {};                 // its network, IPv4 as ::ffff:a.b.c.d
  uint8_t dst_len = 0;                  // of the 128-bit form (IPv4 /24 is 120)
  bool has_len = false;                 // len = "0-100": the frame's length in bytes
  uint32_t len_lo = 0, len_hi = 0;
  RuleAction action = RuleAction::Throttle;
  double rate = 0;                         // per second: packets, or bytes with `bytes`
  uint64_t burst = 0;                      // packets, or bytes with `bytes`
  bool bytes = false;                      // a byte budget: rate = "100kB/s", burst = "15kB" (DT_POL_BYTES)
  uint8_t key_prefix = 0;                  // bucket granularity within the family (32/64 by default)
  bool key_by_dest = false;                // key_by = "destination" (DT_POL_KEY_DEST): buckets per destination
  AdaptiveConfig adaptive{};               // back off on busy signals (adaptive.h); throttle rules only
  bool dry_run = false;                    // DT_POL_DRY_RUN: decided and counted, never dropped (would_drop)
  bool syn_cookies = false;                // DT_POL_SYN_COOKIES: SYNs a prefix budget refuses get a cookie
  std::vector<PrefixLimit> prefix_limits;  // prefix budgets (DT_POL_PREFIX); throttle rules only
  EscalateConfig escalate{};               // ban sources over budget for long (policy/escalation.h); throttle rules
  int64_t attack_drops =
      -1;           // attack_drops = N: drops/s that make an attack event (docs/events.md); -1: --attack-drops
  int line = 0;     // where it is in the file
  uint32_t id = 0;  // the kernel's rule index (stable by name across reloads)
};

struct RuleSet {
  std::vector<PacketRule> rules;  // rules[0] is "default" (from --rate/--burst, or allow)
  std::vector<TagRule> tags;      // may be empty: tags then follow the default rate/burst
  std::string origin;             // file name, for messages
  // Top-level allow_file / deny_file (docs/lists.md): as written, and resolved against
  // the rules file's folder; "" for none.
  std::string allow_file, deny_file;
};

// The rule set with only the default rule (rate 0 means: no default, pass).
RuleSet default_rules(double rate, uint64_t burst, bool bytes = false);

// "FILE:LINE: ", the start of an error about a line of rs's file.
std::string file_line(const RuleSet &rs, int line);

// Parses TOML text into *out (whose rules[0] must already be the default rule).
// Errors name the file, the line and what is wrong; *out is untouched on error.
bool parse_rules(const std::string &text, const std::string &origin, RuleSet *out, std::string *err);
bool load_rules_file(const std::string &path, RuleSet *out, std::string *err);

// The kernel's view: policies by rule index and the LPM entries (per family, each
// prefix with its candidate rules: its own in file order, then those it inherits
// from shorter prefixes, ending with the default rule).
struct CompiledRules {
  std::vector<dt_policy> policies;
  std::vector<dt_prefix_policy> prefix;  // by rule id, beside policies (empty for rules without)
  std::vector<dt_rule_cond> cond;        // by rule id: dst prefix and len range (DT_MATCH_COND)
  std::vector<std::pair<dt_lpm_key, dt_rule_set>> lpm;
};
bool compile_rules(const RuleSet &rs, CompiledRules *out, std::string *err);
// A rule's dst prefix (address and mask) and len range in the kernel's form.
dt_rule_cond rule_cond_of(const PacketRule &r);

// Everything the agent needs of a rule set: the rules, their kernel form, the names
// by rule index and which of them throttle (peers' hits apply to those only).
struct LoadedRules {
  RuleSet set;
  CompiledRules compiled;
  std::vector<std::string> names;
  std::vector<bool> throttles;
  // The allow and deny lists (never null after load_rules; empty without a file).
  // Shared: a million prefixes are not copied with the rules.
  std::shared_ptr<const ListPrefixes> allow = std::make_shared<ListPrefixes>();
  std::shared_ptr<const ListPrefixes> deny = std::make_shared<ListPrefixes>();
};
// The default rule from rate/burst (rate 0: none; `bytes`: a byte budget; `prefix`: its
// prefix budgets, --prefix-limit), plus `path` if not empty. With
// `previous` (a reload), a rule keeps the id it had under the same name, so its
// buckets and counters stay its own; new rules take free ids.
bool load_rules(double rate, uint64_t burst, bool bytes, const std::string &path, LoadedRules *out, std::string *err,
                const LoadedRules *previous = nullptr, const std::vector<PrefixLimit> &prefix = {});
// The same with a default rule in packets.
inline bool load_rules(double rate, uint64_t burst, const std::string &path, LoadedRules *out, std::string *err,
                       const LoadedRules *previous = nullptr) {
  return load_rules(rate, burst, false, path, out, err, previous);
}
// The prefix levels in force, as the key.rule of their buckets (dt_prefix_key_rule):
// what the cluster accepts peers' prefix hits for.
std::set<uint32_t> prefix_level_keys(const LoadedRules &r);
// The ids of the rules keyed by destination (key_by = "destination"): whose destination
// buckets peers' reports may debit.
std::set<uint32_t> dest_rule_ids(const LoadedRules &r);
// --dry-run: every rule of `r` in dry run (its policy flagged DT_POL_DRY_RUN).
void set_all_dry_run(LoadedRules *r);
// The names of the rules with syn_cookies = true, in file order.
std::vector<std::string> syn_cookie_rule_names(const LoadedRules &r);
// The names of the rules in dry run that could drop (throttle and deny rules), in file order.
std::vector<std::string> dry_run_rule_names(const LoadedRules &r);
// One line: "3 packet rules (2 throttle, 1 allow, 0 deny), 2 tag rules, default 100/s burst 50"
// (then "; 1 adaptive", "; 2 in dry run", "; prefix budgets: default v4/24=1000/s,burst=2000"
// when there are).
// The tag rules counted are the file's, or `tag_rules` (the file's and --tag-rule flags').
std::string describe_rules(const LoadedRules &r);
std::string describe_rules(const LoadedRules &r, const std::vector<TagRule> &tag_rules);

}  // namespace dt
