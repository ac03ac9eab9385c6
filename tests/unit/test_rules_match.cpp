// test_rules_match.cpp - the conditions beside cidr (dst, sport, tcp_flags, icmp_type,
// icmp_code, len): how they are read, refused (FILE:LINE and what to write instead),
// compiled into the trie's candidates and struct dt_rule_cond, and said back in words.
#include <gtest/gtest.h>
#include <netinet/in.h>

#include "commands/rule_conditions.h"
#include "rules/rules.h"
#include "rules/rules_toml.h"
#include "rules_test_util.h"

namespace dt {
namespace {

using rules_test::error_of;
using rules_test::parse;

std::string rule(const std::string &body) { return "version = 1\n[[rule]]\nname = \"r\"\n" + body + "\n"; }
const std::string kUdp = "cidr = \"198.18.0.0/15\"\nproto = \"udp\"\nrate = 10\nburst = 10\n";

// The one rule of `text`, parsed (a failure if it is refused).
PacketRule only_rule(const std::string &text) {
  RuleSet rs;
  std::string err;
  EXPECT_TRUE(parse(text, &rs, &err)) << err;
  return rs.rules.size() == 2 ? rs.rules[1] : PacketRule{};
}

TEST(RulesMatch, ReadsEveryCondition) {
  PacketRule r = only_rule(rule(kUdp + "sport = \"1024-65535\"\ndst = \"198.19.7.0/24\"\nlen = \"0-100\""));
  EXPECT_EQ(r.sport_lo, 1024);
  EXPECT_EQ(r.sport_hi, 65535);
  EXPECT_TRUE(r.has_dst);
  EXPECT_EQ(r.dst_len, 96 + 24);
  EXPECT_EQ(r.dst[12], 198);
  EXPECT_EQ(r.dst[14], 7);
  EXPECT_TRUE(r.has_len);
  EXPECT_EQ(r.len_lo, 0u);
  EXPECT_EQ(r.len_hi, 100u);
  r = only_rule(rule(kUdp + "sport = 123"));
  EXPECT_EQ(r.sport_lo, 123);
  EXPECT_EQ(r.sport_hi, 123);
  r = only_rule(rule("cidr = \"2001:2::/48\"\nproto = \"icmp\"\nicmp_type = 1\nicmp_code = 4\naction = \"deny\""));
  EXPECT_EQ(r.proto, IPPROTO_ICMPV6);
  EXPECT_EQ(r.icmp_type, 1);
  EXPECT_EQ(r.icmp_code, 4);
  r = only_rule(rule("cidr = \"198.18.0.0/15\"\nproto = \"tcp\"\ntcp_flags = \"syn, !ACK ,Fin\"\naction = \"deny\""));
  EXPECT_EQ(r.tcp_mask, DT_TCP_SYN | DT_TCP_ACK | DT_TCP_FIN);
  EXPECT_EQ(r.tcp_value, DT_TCP_SYN | DT_TCP_FIN);
  r = only_rule(rule("cidr = \"198.18.0.0/15\"\nproto = \"tcp\"\nsyn = true\naction = \"deny\""));
  EXPECT_EQ(r.tcp_mask, DT_TCP_SYN | DT_TCP_ACK) << "syn = true is SYN,!ACK";
  EXPECT_EQ(r.tcp_value, DT_TCP_SYN);
  r = only_rule(rule(kUdp + "len = \"1000-65535\""));
  EXPECT_EQ(r.len_hi, UINT32_MAX) << "65535 means any longer (GRO-merged skbs at tc)";
}

TEST(RulesMatch, DstWithoutCidrCoversItsFamily) {
  PacketRule r = only_rule(rule("dst = \"203.0.113.0/24\"\naction = \"deny\""));
  EXPECT_TRUE(r.v4);
  EXPECT_EQ(r.prefix_len, 96) << "0.0.0.0/0";
  r = only_rule(rule("dst = \"2001:db8::/32\"\naction = \"deny\""));
  EXPECT_FALSE(r.v4);
  EXPECT_EQ(r.prefix_len, 0) << "::/0";
}

TEST(RulesMatch, RefusesWithLineAndWhatToWrite) {
  const struct {
    std::string body, want;
  } cases[] = {
      {kUdp + "sport = 0", "r.toml:8: sport must be a port (1-65535) or a range like \"1024-65535\""},
      {kUdp + "sport = \"2000-1000\"", "r.toml:8: sport must be a port"},
      {"cidr = \"198.18.0.0/15\"\nproto = \"icmp\"\nsport = 123\naction = \"deny\"",
       "r.toml:6: 'sport' needs proto = \"tcp\" or \"udp\""},
      {"cidr = \"198.18.0.0/15\"\nsport = 123\naction = \"deny\"", "'sport' needs proto = \"tcp\" or \"udp\""},
      {"cidr = \"198.18.0.0/15\"\nproto = \"tcp\"\nicmp_type = 8\naction = \"deny\"",
       "r.toml:6: 'icmp_type' needs proto = \"icmp\""},
      {"cidr = \"198.18.0.0/15\"\nproto = \"icmp\"\nicmp_type = 256\naction = \"deny\"",
       "r.toml:6: 'icmp_type' must be a number from 0 to 255"},
      {"cidr = \"198.18.0.0/15\"\nproto = \"icmp\"\nicmp_code = 3\naction = \"deny\"",
       "r.toml:6: 'icmp_code' needs an 'icmp_type'"},
      {"cidr = \"198.18.0.0/15\"\nproto = \"udp\"\ntcp_flags = \"SYN\"\naction = \"deny\"",
       "r.toml:6: 'tcp_flags' needs proto = \"tcp\""},
      {"cidr = \"198.18.0.0/15\"\nproto = \"tcp\"\ntcp_flags = \"SYN,!NOPE\"\naction = \"deny\"",
       "r.toml:6: tcp_flags: '!NOPE' is not a TCP flag: write names of FIN SYN RST PSH ACK URG ECE CWR"},
      {"cidr = \"198.18.0.0/15\"\nproto = \"tcp\"\ntcp_flags = \"SYN,!SYN\"\naction = \"deny\"",
       "that flag is named twice"},
      {"cidr = \"198.18.0.0/15\"\nproto = \"tcp\"\nsyn = true\ntcp_flags = \"RST\"\naction = \"deny\"",
       "r.toml:7: write 'syn = true' or 'tcp_flags', not both"},
      {kUdp + "len = \"100-0\"", "r.toml:8: len must be a frame length in bytes (0-65535) or a range like \"0-100\""},
      {kUdp + "len = 70000", "r.toml:8: len must be"},
      {kUdp + "dst = \"2001:db8::/32\"", "r.toml:8: dst is IPv6 but cidr is IPv4: a packet has one family"},
      {kUdp + "dst = \"198.19.7.1/24\"", "r.toml:8: dst: '198.19.7.1/24' has bits set past its /24 prefix"},
      {kUdp + "dst = 5", "r.toml:8: 'dst' must be a CIDR in quotes"},
      {"proto = \"udp\"\naction = \"deny\"", "r.toml:2: a [[rule]] needs a 'name' and a 'cidr' (or a 'dst'"},
  };
  for (const auto &c : cases) {
    const std::string err = error_of(rule(c.body));
    EXPECT_NE(err.find(c.want), std::string::npos) << "rule:\n" << c.body << "\nerror: " << err;
  }
}

TEST(RulesMatch, CompilesCandidatesAndConditions) {
  const CompiledRules c = rules_test::compiled(
      rule(kUdp + "sport = 123\ndst = \"198.19.7.0/24\"\nlen = \"0-100\"") +
      "[[rule]]\nname = \"ping\"\ncidr = \"198.18.0.0/15\"\nproto = \"icmp\"\nicmp_type = 8\naction = \"deny\"\n");
  const dt_rule_set *set = nullptr;
  for (const auto &[k, s] : c.lpm)
    if (k.prefixlen == 96 + 15) set = &s;
  ASSERT_NE(set, nullptr) << "no entry for 198.18.0.0/15";
  ASSERT_EQ(set->count, 3u);
  EXPECT_EQ(set->m[0].flags, DT_MATCH_SPORT | DT_MATCH_DST | DT_MATCH_LEN);
  EXPECT_EQ(set->m[0].sport_lo, 123);
  EXPECT_EQ(set->m[1].flags, DT_MATCH_ICMP_TYPE);
  EXPECT_EQ(set->m[1].icmp_type, 8);
  EXPECT_EQ(set->m[2].rule, DT_RULE_DEFAULT);
  EXPECT_EQ(set->needs, DT_MATCH_SPORT | DT_MATCH_DST | DT_MATCH_LEN | DT_MATCH_ICMP_TYPE);
  ASSERT_GE(c.cond.size(), 2u);
  const dt_rule_cond &rc = c.cond[1];
  EXPECT_EQ(rc.dst_mask[11], 0xff);
  EXPECT_EQ(rc.dst_mask[14], 0xff);
  EXPECT_EQ(rc.dst_mask[15], 0x00);
  EXPECT_EQ(rc.dst[14], 7);
  EXPECT_EQ(rc.len_hi, 100u);
  EXPECT_EQ(match_text(set->m[0], &rc), "udp sport 123 dst 198.19.7.0/24 len 0-100");
  EXPECT_EQ(match_text(set->m[1], nullptr), "icmp type 8");
  const Json j = match_json(set->m[0], &rc);
  EXPECT_EQ(j.dump(), R"({"proto":"udp","sport":"123","dst":"198.19.7.0/24","len":"0-100"})");
}

TEST(RulesMatch, OldRuleSetsCompileWithoutNewConditions) {
  const CompiledRules c = rules_test::compiled(rule(kUdp + "dport = 53"));
  for (const auto &[k, s] : c.lpm)
    EXPECT_EQ(s.needs & ~(DT_MATCH_PORTS | DT_MATCH_TCP_FLAGS), 0u) << "only what the old conditions need";
  EXPECT_TRUE(c.cond.empty()) << "no rule_cond entries without dst or len";
}

TEST(RulesMatch, TcpFlagsText) {
  dt_rule_match m{};
  m.proto = IPPROTO_TCP;
  m.flags = DT_MATCH_TCP_FLAGS;
  m.tcp_mask = DT_TCP_RST | DT_TCP_ACK;
  m.tcp_value = DT_TCP_RST;
  EXPECT_EQ(match_text(m), "tcp flags RST,!ACK");
  EXPECT_EQ(match_json(m, nullptr).dump(), R"({"proto":"tcp","tcp_flags":"RST,!ACK"})");
}

}  // namespace
}  // namespace dt
