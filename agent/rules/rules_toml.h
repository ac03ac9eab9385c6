// rules_toml.h - the TOML readers of the rules file (rules.h), shared by its parts. The
// value readers (rules_toml.cpp) and the readers of the [[rule]] and [[tag]] tables
// (rule_tables.cpp, tag_tables.cpp). Errors are "FILE:LINE: what is wrong".
#pragma once

#include <functional>
#include <set>
#include <string>
#include <toml.hpp>

#include "rules/rules.h"

namespace dt {

using Value = toml::value;

// Reads a number that TOML may hold as an integer or a float.
bool get_number(const Value &v, double *out);
// Checks that `table` has only the keys in `allowed`.
bool known_keys(const RuleSet &rs, const Value &table, const std::set<std::string> &allowed, const char *what,
                std::string *err);
// A rate or burst value as written, for messages: 100, "10Mbit/s".
std::string written(const Value &v);
// 'rate': a number (packets per second) or a string: "10/m", "100kB/s", "10Mbit/s".
bool read_rate(const RuleSet &rs, const Value &r, double *rate, bool *bytes, std::string *err);
// 'burst': a whole number of packets, or a string with a byte unit: "15kB".
bool read_burst(const RuleSet &rs, const Value &b, uint64_t *burst, bool *bytes, std::string *err);
// A throttle's rate and burst. `bytes` null: a tag rule, which counts queries only.
bool rate_burst(const RuleSet &rs, const Value &t, int line, double *rate, uint64_t *burst, bool *bytes,
                std::string *err);
// `adaptive = true`, or a table of the controller's parameters (adaptive.h).
bool parse_adaptive(const RuleSet &rs, const Value &t, AdaptiveConfig *out, std::string *err);
// The string value of key k in table t.
bool get_string(const RuleSet &rs, const Value &t, const char *k, std::string *out, std::string *err);
// The boolean key k of table t into *out, if t has it (else *out is left as it is). Not a
// boolean: "FILE:LINE: " + `before` + "'k' must be true or false (without quotes)" + `after`.
bool get_bool(const RuleSet &rs, const Value &t, const char *k, bool *out, std::string *err,
              const std::string &before = "", const std::string &after = "");
// Each table of the array `key` of the document ([[rule]], [[tag]]), in file order, given to
// `one` (which fills *err when it returns false); none if the file has no `key`.
bool each_table(const RuleSet &rs, const Value &root, const char *key, std::string *err,
                const std::function<bool(const Value &table)> &one);

// rule_match.cpp: a CIDR ("198.18.0.0/15", "2001:db8::/32", an address alone) as the 16-byte
// form (IPv4 as ::ffff:a.b.c.d) and its length in that form; *why says what is wrong.
bool parse_rule_cidr(const std::string &s, uint8_t addr[16], uint8_t *prefix_len, bool *v4, std::string *why);
// "N" or "LO-HI" with min <= LO <= HI <= max.
bool parse_number_range(const std::string &s, uint32_t min, uint32_t max, uint32_t *lo, uint32_t *hi);
// A port or a range of ports, 1 to 65535.
bool parse_ports(const std::string &s, uint16_t *lo, uint16_t *hi);
// "SYN,!ACK": a mask of the flags named and the value they must have (DT_TCP_*).
bool parse_tcp_flags(const std::string &s, uint8_t *mask, uint8_t *value, std::string *why);
// The conditions beside proto/dport/syn (sport, icmp_type, icmp_code, tcp_flags, len, dst),
// checked against the rule's proto and family. Call after proto and syn are read.
bool parse_rule_conditions(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err);

// escalate_table.cpp: `escalate = { after = "30s", ban = "10m", ... }` (policy/escalate_config.h).
// Call after action, key_by and prefix_limits are read.
bool parse_rule_escalate(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err);

// The [[rule]] tables, appended to rs.rules after the default rule with ids in file order.
bool parse_rule_tables(RuleSet &rs, const Value &root, std::string *err);
// The [[tag]] tables, into rs.tags in file order.
bool parse_tag_tables(RuleSet &rs, const Value &root, std::string *err);

}  // namespace dt
