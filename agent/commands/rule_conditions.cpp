// rule_conditions.cpp - see rule_conditions.h.
#include "commands/rule_conditions.h"

#include <bpf/bpf.h>

#include <cstring>

#include "common/address.h"

namespace dt {
namespace {

std::string proto_text(uint8_t proto) {
  switch (proto) {
    case 0: return "";
    case 1: return "icmp";
    case 6: return "tcp";
    case 17: return "udp";
    case 58: return "icmpv6";
  }
  return "protocol " + std::to_string(proto);
}

std::string range_text(uint32_t lo, uint32_t hi) {
  if (hi == UINT32_MAX && lo) return std::to_string(lo) + "-";
  return hi == lo ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

// "SYN,!ACK": the flags of a mask and value, in the order of the header's bits.
std::string tcp_flags_text(uint8_t mask, uint8_t value) {
  static const char *const kNames[8] = {"FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"};
  std::string out;
  for (int bit = 0; bit < 8; bit++)
    if (mask & (1u << bit))
      out += std::string(out.empty() ? "" : ",") + ((value & (1u << bit)) ? "" : "!") + kNames[bit];
  return out;
}

bool is_syn_only(const dt_rule_match &m) {
  return m.tcp_mask == (DT_TCP_SYN | DT_TCP_ACK) && m.tcp_value == DT_TCP_SYN;
}

// A dt_rule_cond's destination as a prefix: the mask's leading ones are its length.
std::string dst_text(const dt_rule_cond &c) {
  dt_lpm_key k{};
  for (int i = 0; i < 16; i++)
    for (int b = 7; b >= 0 && (c.dst_mask[i] >> b) & 1; b--) k.prefixlen++;
  memcpy(k.addr, c.dst, 16);
  return lpm_prefix_text(k);
}

// The conditions as (key, value) pairs in the order the rules file writes them.
std::vector<std::pair<std::string, std::string>> conditions(const dt_rule_match &m, const dt_rule_cond *cond) {
  std::vector<std::pair<std::string, std::string>> out;
  if (m.proto) out.emplace_back("proto", proto_text(m.proto));
  if (m.flags & DT_MATCH_TCP_FLAGS) {
    if (is_syn_only(m)) out.emplace_back("syn", "");
    else out.emplace_back("tcp_flags", tcp_flags_text(m.tcp_mask, m.tcp_value));
  }
  if (m.flags & DT_MATCH_SPORT) out.emplace_back("sport", range_text(m.sport_lo, m.sport_hi));
  if (m.flags & DT_MATCH_PORTS) out.emplace_back("dport", range_text(m.dport_lo, m.dport_hi));
  if (m.flags & DT_MATCH_ICMP_TYPE) out.emplace_back("icmp_type", std::to_string(m.icmp_type));
  if (m.flags & DT_MATCH_ICMP_CODE) out.emplace_back("icmp_code", std::to_string(m.icmp_code));
  if (m.flags & DT_MATCH_DST) out.emplace_back("dst", cond ? dst_text(*cond) : "?");
  if (m.flags & DT_MATCH_LEN) out.emplace_back("len", cond ? range_text(cond->len_lo, cond->len_hi) : "?");
  return out;
}

}  // namespace

std::string lpm_prefix_text(const dt_lpm_key &k) {
  dt_key key{};
  memcpy(key.addr, k.addr, sizeof key.addr);
  const bool v4 = addr_is_v4(key.addr) && k.prefixlen >= 96;
  return key_to_string(key) + "/" + std::to_string(v4 ? k.prefixlen - 96 : k.prefixlen);
}

std::string match_text(const dt_rule_match &m, const dt_rule_cond *cond) {
  static const std::map<std::string, std::string> kWords = {
      {"tcp_flags", "flags"}, {"icmp_type", "type"}, {"icmp_code", "code"}};
  std::string out;
  for (const auto &[key, value] : conditions(m, cond)) {
    if (!out.empty()) out += " ";
    if (key == "proto") out += value;
    else if (key == "syn") out += m.proto ? "syn" : "tcp syn";
    else out += (kWords.count(key) ? kWords.at(key) : key) + " " + value;
  }
  return out.empty() ? "any packet" : out;
}

Json match_json(const dt_rule_match &m, const dt_rule_cond *cond) {
  Json j = Json::object();
  for (const auto &[key, value] : conditions(m, cond)) {
    if (key == "syn") j["tcp_flags"] = "SYN,!ACK";
    else if (key == "icmp_type" || key == "icmp_code") j[key] = std::stoi(value);
    else j[key] = value;
  }
  return j;
}

int read_live_rule_cond(int cond_fd, int config_fd, uint32_t rule, dt_rule_cond *out) {
  uint32_t zero = 0;
  dt_config cfg{};
  if (cond_fd < 0) return -EBADF;
  if (bpf_map_lookup_elem(config_fd, &zero, &cfg) != 0) return -errno;
  uint32_t slot = rule * 2 + (cfg.bank & 1);
  return bpf_map_lookup_elem(cond_fd, &slot, out) == 0 ? 0 : -errno;
}

std::map<uint32_t, RuleConditions> read_rule_conditions(const MapFds &m) {
  std::map<uint32_t, RuleConditions> out;
  std::map<uint32_t, uint32_t> shortest;  // rule id -> prefixlen of its prefix so far
  uint32_t zero = 0;
  dt_config cfg{};
  if (bpf_map_lookup_elem(m.config, &zero, &cfg) != 0 || !(cfg.flags & DT_CFG_RULES)) return out;
  const int trie = (cfg.bank & 1) ? m.rules1 : m.rules0;
  dt_lpm_key cur{}, next{};
  for (const dt_lpm_key *prev = nullptr; trie >= 0 && bpf_map_get_next_key(trie, prev, &next) == 0; prev = &cur) {
    cur = next;
    dt_rule_set set{};
    if (bpf_map_lookup_elem(trie, &cur, &set) != 0) continue;
    for (uint32_t i = 0; i < set.count && i < DT_MAX_CANDIDATES; i++) {
      const dt_rule_match &mm = set.m[i];
      if (mm.rule == DT_RULE_DEFAULT || (shortest.count(mm.rule) && shortest[mm.rule] <= cur.prefixlen)) continue;
      shortest[mm.rule] = cur.prefixlen;
      RuleConditions &rc = out[mm.rule];
      rc.cidr = lpm_prefix_text(cur);
      rc.match = mm;
      rc.has_cond = (mm.flags & DT_MATCH_COND) && read_live_rule_cond(m.rule_cond, m.config, mm.rule, &rc.cond) == 0;
    }
  }
  return out;
}

}  // namespace dt
