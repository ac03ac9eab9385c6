// prefix_limits.cpp - parsing, checking and compiling prefix budgets.
#include "rules/prefix_limits.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "common/parse_values.h"
#include "dataplane/policy.h"

namespace dt {
bool parse_prefix_level(const std::string &s, bool *v4, unsigned *bits, std::string *err) {
  const size_t slash = s.find('/');
  const std::string fam = s.substr(0, slash), len = slash == std::string::npos ? "" : s.substr(slash + 1);
  if (fam == "v4" || fam == "ipv4") *v4 = true;
  else if (fam == "v6" || fam == "ipv6") *v4 = false;
  else return *err = "level '" + s + "' must be v4/N or v6/N (e.g. v4/24, v6/48)", false;
  const unsigned max = *v4 ? 31 : 127;
  bool digits = !len.empty() && len.size() <= 3;
  for (char c : len) digits = digits && isdigit(static_cast<unsigned char>(c));
  const unsigned v = digits ? static_cast<unsigned>(std::stoul(len)) : 0;
  if (v < 1 || v > max)
    return *err = "level '" + s + "': the prefix length must be 1 to " + std::to_string(max) + " for IPv" +
                  (*v4 ? "4" : "6") + " (a whole address is the source's own bucket)",
           false;
  *bits = v;
  return true;
}

std::string prefix_level_name(bool v4, unsigned bits) { return (v4 ? "v4/" : "v6/") + std::to_string(bits); }

std::string format_prefix_limit(const PrefixLimit &l) {
  char buf[160];
  if (l.bytes)
    snprintf(buf, sizeof buf, "%s=%s/s,burst=%s", prefix_level_name(l.v4, l.bits).c_str(), format_bytes(l.rate).c_str(),
             format_bytes(static_cast<double>(l.burst)).c_str());
  else
    snprintf(buf, sizeof buf, "%s=%.6g/s,burst=%llu", prefix_level_name(l.v4, l.bits).c_str(), l.rate,
             static_cast<unsigned long long>(l.burst));
  return buf;
}

bool parse_prefix_limit(const std::string &spec, PrefixLimit *out, std::string *err) {
  const std::string usage = "expected LEVEL=RATE,burst=BURST, e.g. v4/24=1000/s,burst=2000 or v6/48=10Mbit/s,burst=1MB";
  const size_t eq = spec.find('='), comma = spec.find(",burst=");
  if (eq == std::string::npos || comma == std::string::npos || comma < eq)
    return *err = "'" + spec + "': " + usage, false;
  PrefixLimit l;
  unsigned bits = 0;
  if (!parse_prefix_level(spec.substr(0, eq), &l.v4, &bits, err)) return false;
  l.bits = static_cast<uint8_t>(bits);
  const std::string rate = spec.substr(eq + 1, comma - eq - 1), burst = spec.substr(comma + 7);
  bool rate_bytes = false, burst_bytes = false;
  std::string why;
  if (!parse_budget_rate(rate, &l.rate, &rate_bytes, &why) || !parse_budget_burst(burst, &l.burst, &burst_bytes, &why))
    return *err = "'" + spec + "': " + why, false;
  if (std::string m = budget_unit_mismatch(rate_bytes, burst_bytes, "rate " + rate, "burst " + burst); !m.empty())
    return *err = "'" + spec + "': " + m, false;
  l.bytes = rate_bytes;
  dt_policy p{};
  if (!make_policy(l.rate, l.burst, &p, &why, l.bytes)) return *err = "'" + spec + "': " + why, false;
  l.text = spec;
  *out = l;
  return true;
}

bool check_prefix_limits(const std::vector<PrefixLimit> &levels, const std::string &rule, bool rule_bytes,
                         unsigned v4_key_bits, unsigned v6_key_bits, std::string *err) {
  unsigned n[2] = {0, 0};
  for (size_t i = 0; i < levels.size(); i++) {
    const PrefixLimit &l = levels[i];
    const std::string name = prefix_level_name(l.v4, l.bits);
    const std::string what = "rule '" + rule + "': prefix limit " + (l.text.empty() ? name : l.text) + ": ";
    if (++n[l.v4 ? 0 : 1] > DT_PREFIX_LEVELS)
      return *err = what + "at most " + std::to_string(DT_PREFIX_LEVELS) + " IPv" + (l.v4 ? "4" : "6") +
                    " levels per rule",
             false;
    for (size_t j = 0; j < i; j++)
      if (levels[j].v4 == l.v4 && levels[j].bits == l.bits)
        return *err = what + "level " + name + " is given twice", false;
    const unsigned key = l.v4 ? v4_key_bits : v6_key_bits;
    if (l.bits >= key)
      return *err = what + "the level must be shorter than the rule's source buckets (/" + std::to_string(key) +
                    " for IPv" + (l.v4 ? "4" : "6") + ")",
             false;
    if (l.bytes != rule_bytes)
      return *err = what + (rule_bytes ? "the rule counts bytes, so give the level's rate and burst in bytes too "
                                         "(e.g. 10Mbit/s,burst=1MB)"
                                       : "the rule counts packets, so give the level's rate and burst in packets too "
                                         "(e.g. 1000/s,burst=2000)"),
             false;
    dt_policy p{};
    std::string why;
    if (!make_policy(l.rate, l.burst, &p, &why, l.bytes)) return *err = what + why, false;
  }
  return true;
}

dt_prefix_policy compile_prefix_limits(const std::vector<PrefixLimit> &levels) {
  std::vector<PrefixLimit> sorted = levels;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const PrefixLimit &a, const PrefixLimit &b) { return a.bits < b.bits; });
  dt_prefix_policy pp{};
  for (const PrefixLimit &l : sorted) {
    dt_policy p{};
    std::string why;
    if (!make_policy(l.rate, l.burst, &p, &why, l.bytes)) continue;  // check_prefix_limits refused it already
    if (l.v4 && pp.n_v4 < DT_PREFIX_LEVELS) {
      p.v4_key_bits = l.bits;
      p.v6_key_bits = 0;
      pp.v4[pp.n_v4++] = p;
    } else if (!l.v4 && pp.n_v6 < DT_PREFIX_LEVELS) {
      p.v4_key_bits = 0;
      p.v6_key_bits = l.bits;
      pp.v6[pp.n_v6++] = p;
    }
  }
  return pp;
}

}  // namespace dt
