// rules_compile.cpp - a rule set in the kernel's form: policies and LPM entries. One policy
// per rule id; per family, each prefix with its candidate rules in the order they are tried.
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "common/address.h"
#include "dataplane/policy.h"
#include "rules/rules.h"

namespace dt {
namespace {

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
      *err = (i == 0 ? "default rule: " : file_line(rs, r.line)) + why;
      return false;
    }
    p.action = static_cast<uint8_t>(r.action);
    p.flags = static_cast<uint8_t>(p.flags | (r.dry_run ? DT_POL_DRY_RUN : 0) | (r.key_by_dest ? DT_POL_KEY_DEST : 0) |
                                   (r.syn_cookies ? DT_POL_SYN_COOKIES : 0));
    p.v4_key_bits = r.key_prefix && r.v4 ? r.key_prefix : 32;
    p.v6_key_bits = r.key_prefix && !r.v4 ? r.key_prefix : 64;
    if (r.prefix_limits.empty()) continue;
    if (r.action != RuleAction::Throttle) {
      *err = (i == 0 ? std::string("default rule: ") : file_line(rs, r.line)) +
             "prefix limits need a throttle rule (for the default rule: --rate and --burst)";
      return false;
    }
    if (!check_prefix_limits(r.prefix_limits, r.name, r.bytes, p.v4_key_bits, p.v6_key_bits, &why)) {
      *err = (i == 0 ? "" : file_line(rs, r.line)) + why;
      return false;
    }
    c->prefix.resize(c->policies.size());
    c->prefix[r.id] = compile_prefix_limits(r.prefix_limits);
    p.flags = static_cast<uint8_t>(p.flags | DT_POL_PREFIX);
  }
  return true;
}

// The dst prefixes and len ranges by rule id (none when no rule has one).
void compile_conds(const RuleSet &rs, CompiledRules *c) {
  for (const PacketRule &r : rs.rules) {
    if (!r.has_dst && !r.has_len) continue;
    c->cond.resize(c->policies.size());
    c->cond[r.id] = rule_cond_of(r);
  }
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
    auto it = std::find_if(prefixes.begin(), prefixes.end(),
                           [&](const Prefix &p) { return p.len == r.prefix_len && memcmp(p.addr, r.addr, 16) == 0; });
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

// A rule's candidate entry: its protocol and the conditions a candidate holds itself.
dt_rule_match rule_match_of(const PacketRule &r) {
  dt_rule_match m{};
  m.rule = static_cast<uint16_t>(r.id);
  m.proto = r.proto;
  m.flags = static_cast<uint8_t>((r.tcp_mask ? DT_MATCH_TCP_FLAGS : 0) | (r.dport_lo ? DT_MATCH_PORTS : 0) |
                                 (r.sport_lo ? DT_MATCH_SPORT : 0) | (r.icmp_type >= 0 ? DT_MATCH_ICMP_TYPE : 0) |
                                 (r.icmp_code >= 0 ? DT_MATCH_ICMP_CODE : 0) | (r.has_dst ? DT_MATCH_DST : 0) |
                                 (r.has_len ? DT_MATCH_LEN : 0));
  m.dport_lo = r.dport_lo;
  m.dport_hi = r.dport_hi;
  m.sport_lo = r.sport_lo;
  m.sport_hi = r.sport_hi;
  m.tcp_mask = r.tcp_mask;
  m.tcp_value = r.tcp_value;
  m.icmp_type = static_cast<uint8_t>(r.icmp_type >= 0 ? r.icmp_type : 0);
  m.icmp_code = static_cast<uint8_t>(r.icmp_code >= 0 ? r.icmp_code : 0);
  return m;
}

// The LPM value of a prefix: its candidate rules (indexes into rs.rules) in the order they are tried.
dt_rule_set rule_set_of(const RuleSet &rs, const std::vector<uint16_t> &cands) {
  dt_rule_set set{};
  set.count = static_cast<uint32_t>(cands.size());
  for (size_t m = 0; m < cands.size(); m++) {
    const PacketRule &r = rs.rules[cands[m]];
    dt_rule_match &mm = set.m[m];
    mm = rule_match_of(r);
    set.needs |= mm.flags;
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

dt_rule_cond rule_cond_of(const PacketRule &r) {
  dt_rule_cond c{};
  if (r.has_dst) {
    for (int bit = 0; bit < r.dst_len; bit++) c.dst_mask[bit / 8] |= static_cast<uint8_t>(0x80 >> (bit % 8));
    for (int i = 0; i < 16; i++) c.dst[i] = r.dst[i] & c.dst_mask[i];
  }
  c.len_lo = r.has_len ? r.len_lo : 0;
  c.len_hi = r.has_len ? r.len_hi : UINT32_MAX;
  return c;
}

bool compile_rules(const RuleSet &rs, CompiledRules *out, std::string *err) {
  CompiledRules c;
  if (!compile_policies(rs, &c, err)) return false;
  compile_conds(rs, &c);
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

}  // namespace dt
