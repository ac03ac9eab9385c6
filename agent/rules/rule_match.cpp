// rule_match.cpp - what a [[rule]] matches beside its source prefix: the CIDR syntax (cidr and
// dst), port ranges (dport and sport), tcp_flags, icmp_type and icmp_code, len. Each value is
// checked against the rule's proto, so that a condition no packet of the rule could meet
// (icmp_type on a tcp rule, sport on icmp) is refused at load, with what to write instead.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "common/address.h"
#include "rules/rules_toml.h"

namespace dt {

bool parse_rule_cidr(const std::string &s, uint8_t addr[16], uint8_t *prefix_len, bool *v4, std::string *why) {
  std::string a = s, len;
  const size_t slash = s.find('/');
  if (slash != std::string::npos) {
    a = s.substr(0, slash);
    len = s.substr(slash + 1);
  }
  uint8_t buf[16] = {};
  int max;
  if (inet_pton(AF_INET, a.c_str(), &buf[12]) == 1) {
    memcpy(buf, kV4MappedPrefix, sizeof kV4MappedPrefix);
    *v4 = true;
    max = 32;
  } else if (inet_pton(AF_INET6, a.c_str(), buf) == 1) {
    *v4 = false;
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
  const int full = *v4 ? 96 + bits : bits;
  for (int i = full; i < 128; i++) {
    if (buf[i / 8] & (0x80 >> (i % 8))) {
      *why =
          "'" + s + "' has bits set past its /" + std::to_string(bits) + " prefix (did you mean the network address?)";
      return false;
    }
  }
  if (!*v4 && full >= 96 && addr_is_v4(buf)) {
    *why = "'" + s + "' is an IPv4-mapped range: write it as an IPv4 CIDR";
    return false;
  }
  memcpy(addr, buf, 16);
  *prefix_len = static_cast<uint8_t>(full);
  return true;
}

bool parse_number_range(const std::string &s, uint32_t min, uint32_t max, uint32_t *lo, uint32_t *hi) {
  auto num = [&](const std::string &t, uint32_t *out) {
    if (t.empty() || t.size() > 10) return false;
    for (char c : t)
      if (!isdigit(static_cast<unsigned char>(c))) return false;
    const unsigned long long v = std::stoull(t);
    if (v < min || v > max) return false;
    *out = static_cast<uint32_t>(v);
    return true;
  };
  const size_t dash = s.find('-');
  if (dash == std::string::npos) return num(s, lo) && (*hi = *lo, true);
  return num(s.substr(0, dash), lo) && num(s.substr(dash + 1), hi) && *lo <= *hi;
}

bool parse_ports(const std::string &s, uint16_t *lo, uint16_t *hi) {
  uint32_t l = 0, h = 0;
  if (!parse_number_range(s, 1, 65535, &l, &h)) return false;
  *lo = static_cast<uint16_t>(l);
  *hi = static_cast<uint16_t>(h);
  return true;
}

namespace {

int line_of(const Value &v) { return static_cast<int>(v.location().line()); }

// A number or a string of it ("123", "1024-65535") as text, "" for anything else.
std::string range_text(const Value &v) {
  return v.is_integer() ? std::to_string(v.as_integer()) : (v.is_string() ? v.as_string().str : "");
}

bool is_icmp(const PacketRule &r) { return r.proto == IPPROTO_ICMP || r.proto == IPPROTO_ICMPV6; }

// `sport = 123` or `sport = "1024-65535"`: like dport, TCP or UDP only.
bool parse_sport(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  if (!t.contains("sport")) return true;
  const Value &v = t.at("sport");
  if (r->proto != IPPROTO_TCP && r->proto != IPPROTO_UDP)
    return *err = file_line(rs, line_of(v)) +
                  "'sport' needs proto = \"tcp\" or \"udp\" (ICMP and other protocols have "
                  "no ports)",
           false;
  if (!parse_ports(range_text(v), &r->sport_lo, &r->sport_hi))
    return *err = file_line(rs, line_of(v)) +
                  "sport must be a port (1-65535) or a range like \"1024-65535\", e.g. "
                  "sport = 123 for NTP reflection",
           false;
  return true;
}

// One byte of an ICMP header (icmp_type, icmp_code): 0 to 255, icmp rules only.
bool parse_icmp_byte(const RuleSet &rs, const Value &t, const char *key, const PacketRule &r, int *out,
                     std::string *err) {
  if (!t.contains(key)) return true;
  const Value &v = t.at(key);
  if (!is_icmp(r))
    return *err = file_line(rs, line_of(v)) + "'" + key +
                  "' needs proto = \"icmp\" (ICMP for an IPv4 rule, ICMPv6 for "
                  "an IPv6 one)",
           false;
  if (!v.is_integer() || v.as_integer() < 0 || v.as_integer() > 255)
    return *err = file_line(rs, line_of(v)) + "'" + key +
                  "' must be a number from 0 to 255, e.g. icmp_type = 8 (echo "
                  "request; 128 for ICMPv6)",
           false;
  *out = static_cast<int>(v.as_integer());
  return true;
}

// The DT_TCP_* bit of a flag's name, or 0.
uint8_t tcp_flag_bit(std::string name) {
  for (char &c : name) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  static const std::pair<const char *, uint8_t> kFlags[] = {
      {"FIN", DT_TCP_FIN}, {"SYN", DT_TCP_SYN}, {"RST", DT_TCP_RST}, {"PSH", DT_TCP_PSH},
      {"ACK", DT_TCP_ACK}, {"URG", DT_TCP_URG}, {"ECE", DT_TCP_ECE}, {"CWR", DT_TCP_CWR}};
  for (const auto &[n, bit] : kFlags)
    if (name == n) return bit;
  return 0;
}

}  // namespace

bool parse_tcp_flags(const std::string &s, uint8_t *mask, uint8_t *value, std::string *why) {
  *mask = *value = 0;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    const bool clear = !item.empty() && item[0] == '!';
    const uint8_t bit = tcp_flag_bit(clear ? item.substr(1) : item);
    if (!bit)
      return *why = "'" + item +
                    "' is not a TCP flag: write names of FIN SYN RST PSH ACK URG ECE CWR, each set (SYN) "
                    "or clear (!ACK), separated by commas: \"SYN,!ACK\"",
             false;
    if (*mask & bit) return *why = "'" + item + "': that flag is named twice", false;
    *mask |= bit;
    if (!clear) *value |= bit;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

namespace {

// `tcp_flags = "SYN,!ACK"`: TCP only, and not beside syn (which is the same thing).
bool parse_rule_tcp_flags(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  if (!t.contains("tcp_flags")) return true;
  const Value &v = t.at("tcp_flags");
  if (r->proto != IPPROTO_TCP) return *err = file_line(rs, line_of(v)) + "'tcp_flags' needs proto = \"tcp\"", false;
  if (r->syn_only)
    return *err = file_line(rs, line_of(v)) +
                  "write 'syn = true' or 'tcp_flags', not both (syn = true is tcp_flags = "
                  "\"SYN,!ACK\")",
           false;
  std::string why;
  if (!v.is_string() || !parse_tcp_flags(v.as_string().str, &r->tcp_mask, &r->tcp_value, &why))
    return *err = file_line(rs, line_of(v)) +
                  "tcp_flags: " + (why.empty() ? "must be a string such as \"SYN,!ACK\" (SYN set, ACK clear)" : why),
           false;
  return true;
}

// `len = "0-100"` or `len = 60`: the frame's length in bytes (Ethernet header included).
bool parse_rule_len(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  if (!t.contains("len")) return true;
  const Value &v = t.at("len");
  if (!parse_number_range(range_text(v), 0, 65535, &r->len_lo, &r->len_hi))
    return *err = file_line(rs, line_of(v)) +
                  "len must be a frame length in bytes (0-65535) or a range like \"0-100\" "
                  "(the frame as XDP sees it: Ethernet header included)",
           false;
  if (r->len_hi == 65535) r->len_hi = UINT32_MAX;  // at tc a GRO-merged skb may be longer
  r->has_len = true;
  return true;
}

// `dst = "203.0.113.0/24"`: the packet's destination prefix, of the rule's family.
bool parse_rule_dst(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  if (!t.contains("dst")) return true;
  const Value &v = t.at("dst");
  std::string why;
  bool v4 = true;
  if (!v.is_string())
    return *err = file_line(rs, line_of(v)) + "'dst' must be a CIDR in quotes, e.g. dst = \"203.0.113.0/24\"", false;
  if (!parse_rule_cidr(v.as_string().str, r->dst, &r->dst_len, &v4, &why))
    return *err = file_line(rs, line_of(v)) + "dst: " + why, false;
  if (v4 != r->v4)
    return *err = file_line(rs, line_of(v)) + "dst is IPv" + (v4 ? "4" : "6") + " but cidr is IPv" +
                  (r->v4 ? "4" : "6") +
                  ": a packet has one family (leave cidr out to match every source of dst's family)",
           false;
  r->has_dst = true;
  return true;
}

}  // namespace

bool parse_rule_conditions(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  if (!parse_sport(rs, t, r, err) || !parse_icmp_byte(rs, t, "icmp_type", *r, &r->icmp_type, err) ||
      !parse_icmp_byte(rs, t, "icmp_code", *r, &r->icmp_code, err) || !parse_rule_tcp_flags(rs, t, r, err) ||
      !parse_rule_len(rs, t, r, err) || !parse_rule_dst(rs, t, r, err))
    return false;
  if (r->icmp_code >= 0 && r->icmp_type < 0)
    return *err = file_line(rs, line_of(t.at("icmp_code"))) +
                  "'icmp_code' needs an 'icmp_type' (a code means something "
                  "only within its type)",
           false;
  if (r->syn_only) {
    r->tcp_mask = DT_TCP_SYN | DT_TCP_ACK;
    r->tcp_value = DT_TCP_SYN;
  }
  return true;
}

}  // namespace dt
