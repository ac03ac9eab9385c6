// prefix_limits.h - prefix budgets of a throttle rule: "v4/24=1000/s,burst=2000" as
// written on the command line and in the files, the checks a rule's levels must
// pass, and their kernel form (struct dt_prefix_policy, see bpf/prefix.bpf.h).
//
// A level caps the aggregate of the rule's sources in each prefix of that length:
// with v4/24=1000/s,burst=2000 every IPv4 /24 may send 1000 packets per second
// (2000 at once) in total, whatever the number of addresses in it, on top of each
// source's own limit. Up to DT_PREFIX_LEVELS levels per family.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dthrottle/common.h"

namespace dt {

struct PrefixLimit {
  bool v4 = true;
  uint8_t bits = 0;    // prefix length within the family (24 for an IPv4 /24)
  double rate = 0;     // per second: packets, or bytes with `bytes`
  uint64_t burst = 0;  // packets, or bytes
  bool bytes = false;  // given with byte units
  std::string text;    // as written, for messages
};

// "v4/24", "v6/48".
std::string prefix_level_name(bool v4, unsigned bits);
// "v4/24=1000/s,burst=2000" (the flag's syntax; rate as the policy enforces it).
std::string format_prefix_limit(const PrefixLimit &l);

// A level: "v4/24" or "v6/48" (also ipv4/24, ipv6/48): IPv4 1..31, IPv6 1..127.
bool parse_prefix_level(const std::string &s, bool *v4, unsigned *bits, std::string *err);

// The flag's syntax: LEVEL=RATE,burst=BURST with LEVEL v4/N or v6/N (ipv4/N, ipv6/N
// too), RATE and BURST as --rate and --burst take them (packets, or bytes with a unit).
// Checks the values alone (make_policy); the rule's checks are check_prefix_limits.
bool parse_prefix_limit(const std::string &spec, PrefixLimit *out, std::string *err);

// The checks a rule's levels must pass: at most DT_PREFIX_LEVELS per family, no level
// twice, each shorter than the rule's key prefix of its family (v4_key_bits,
// v6_key_bits; a level as long as a source's bucket would only repeat it), and in the
// rule's unit (packets or bytes). `rule` names the rule in messages.
bool check_prefix_limits(const std::vector<PrefixLimit> &levels, const std::string &rule, bool rule_bytes,
                         unsigned v4_key_bits, unsigned v6_key_bits, std::string *err);

// The kernel form, each family's levels broadest first. Assumes check_prefix_limits passed.
dt_prefix_policy compile_prefix_limits(const std::vector<PrefixLimit> &levels);

}  // namespace dt
