// test_xdp_match.cpp - the conditions a [[rule]] adds beside its source prefix (dst, sport,
// tcp_flags, icmp_type, icmp_code, len) as the XDP program applies them: each one hit and
// missed, IPv4 and IPv6, and what happens when a packet cannot say (a cut header, a later
// fragment). Rules are parsed, compiled and published with the agent's own code, as
// test_xdp_rules.cpp does; which rule decided a packet is read from rule_stats.
//
// Every rule here is a deny rule and the default rule allows (no --rate): a packet a rule
// matches is dropped by that rule, one it does not is passed by rule 0.
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <netinet/in.h>

#include <cstring>
#include <string>
#include <vector>

#include "bpf_fixture.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"
#include "frames/packet_builder.h"
#include "prog_maps.h"
#include "rules/rules.h"

namespace dt::test {
using frames::PacketBuilder;
namespace {

constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10, kUrg = 0x20;

using Outcome = RuleOutcome;  // prog_maps.h
const Outcome kDefault{XDP_PASS, 0};
Outcome denied_by(int rule) { return {XDP_DROP, rule}; }

// Frames from `src` (to `dst`): IPv4 when src has no ':'.
PacketBuilder from(const std::string &src, const std::string &dst = "") {
  PacketBuilder p;
  const bool v6 = src.find(':') != std::string::npos;
  if (v6) p.ipv6(src, dst.empty() ? "2001:2::fe" : dst);
  else p.ipv4(src, dst.empty() ? "198.18.0.254" : dst);
  return p;
}
std::vector<uint8_t> udp(const std::string &src, uint16_t sport, uint16_t dport = 9, const std::string &dst = "") {
  return from(src, dst).udp(8).ports(sport, dport).build();
}
std::vector<uint8_t> tcp(const std::string &src, uint8_t flags) { return from(src).tcp(80, flags).build(); }
std::vector<uint8_t> icmp(const std::string &src, uint8_t type, uint8_t code = 0) {
  PacketBuilder p = from(src);
  if (src.find(':') != std::string::npos) p.icmpv6(type, code).hop_limit(64);
  else p.icmp(type, code);
  return p.build();
}

class XdpMatch : public RuleMapsFixture {
 protected:
  // Publishes `toml` (after "version = 1") over an allowing default rule.
  void publish(const std::string &toml) { publish_toml("version = 1\n" + toml, 0, 0, &rules_); }

  // One packet: its verdict and the one rule whose counters it moved.
  Outcome send(const std::vector<uint8_t> &frame) { return run_counted(frame, rules_); }

  size_t rules_ = 1;
};

// A deny rule named `name` of `cidr` with the conditions `rest` (TOML lines).
std::string deny(const std::string &name, const std::string &cidr, const std::string &rest) {
  return "[[rule]]\nname = \"" + name + "\"\ncidr = \"" + cidr + "\"\naction = \"deny\"\n" + rest + "\n";
}

TEST_F(XdpMatch, SourcePortIPv4AndIPv6) {
  ASSERT_NO_FATAL_FAILURE(publish(deny("ntp4", "198.18.0.0/15", "proto = \"udp\"\nsport = 123") +
                                  deny("hi6", "2001:2::/48", "proto = \"udp\"\nsport = \"1024-2048\"")));
  EXPECT_EQ(send(udp("198.18.1.1", 123)), denied_by(1)) << "UDP from port 123: the NTP reflection rule";
  EXPECT_EQ(send(udp("198.18.1.1", 124)), kDefault) << "another source port";
  EXPECT_EQ(send(udp("198.18.1.1", 40000, 123)), kDefault) << "port 123 as the destination is not the source";
  EXPECT_EQ(send(from("198.18.1.1").tcp(123, kAck).build()), kDefault) << "a udp rule: TCP never matches";
  EXPECT_EQ(send(udp("2001:2::1", 1024)), denied_by(2)) << "low end of the range";
  EXPECT_EQ(send(udp("2001:2::1", 2048)), denied_by(2)) << "high end of the range";
  EXPECT_EQ(send(udp("2001:2::1", 2049)), kDefault);
  EXPECT_EQ(send(udp("2001:2::1", 1023)), kDefault);
}

TEST_F(XdpMatch, SourcePortUnknownDoesNotMatch) {
  ASSERT_NO_FATAL_FAILURE(publish(deny("ntp", "198.18.0.0/15", "proto = \"udp\"\nsport = 123")));
  // The UDP header cut after its first two bytes: the source port is there, the rule still
  // needs the whole 4 bytes of ports (as dport does), so it does not match.
  std::vector<uint8_t> cut = udp("198.18.1.1", 123);
  cut.resize(14 + 20 + 2);
  EXPECT_EQ(send(cut), kDefault) << "a cut UDP header has no ports";
  EXPECT_EQ(send(from("198.18.1.1").ipv4_frag_field(0x0010).udp(8).ports(123, 9).build()), kDefault)
      << "a later fragment has no ports";
  EXPECT_EQ(send(from("198.18.1.1").ipv4_frag_field(0x2000).udp(8).ports(123, 9).build()), denied_by(1))
      << "a first fragment has them";
}

TEST_F(XdpMatch, IcmpTypeAndCodeIPv4AndIPv6) {
  ASSERT_NO_FATAL_FAILURE(publish(deny("ping4", "198.18.0.0/15", "proto = \"icmp\"\nicmp_type = 8") +
                                  deny("unreach", "198.19.0.0/16", "proto = \"icmp\"\nicmp_type = 3\nicmp_code = 3") +
                                  deny("ping6", "2001:2::/48", "proto = \"icmp\"\nicmp_type = 128")));
  EXPECT_EQ(send(icmp("198.18.1.1", 8)), denied_by(1)) << "echo request";
  EXPECT_EQ(send(icmp("198.18.1.1", 0)), kDefault) << "echo reply";
  EXPECT_EQ(send(udp("198.18.1.1", 8)), kDefault) << "not ICMP";
  EXPECT_EQ(send(icmp("198.19.1.1", 3, 3)), denied_by(2)) << "port unreachable";
  EXPECT_EQ(send(icmp("198.19.1.1", 3, 1)), kDefault) << "host unreachable: another code";
  EXPECT_EQ(send(icmp("198.19.1.1", 11, 3)), kDefault) << "the code of another type";
  EXPECT_EQ(send(icmp("2001:2::1", 128)), denied_by(3)) << "ICMPv6 echo request";
  EXPECT_EQ(send(icmp("2001:2::1", 129)), kDefault) << "ICMPv6 echo reply";
  std::vector<uint8_t> cut = icmp("198.18.1.1", 8);
  cut.resize(14 + 20 + 1);
  EXPECT_EQ(send(cut), kDefault) << "an ICMP header cut before its code";
}

TEST_F(XdpMatch, TcpFlagsIPv4AndIPv6) {
  ASSERT_NO_FATAL_FAILURE(publish(deny("syn", "198.18.0.0/15", "proto = \"tcp\"\ntcp_flags = \"SYN,!ACK\"") +
                                  deny("rst", "198.18.0.0/15", "proto = \"tcp\"\ntcp_flags = \"RST\"") +
                                  deny("xmas", "2001:2::/48", "proto = \"tcp\"\ntcp_flags = \"fin,psh,urg\"")));
  EXPECT_EQ(send(tcp("198.18.1.1", kSyn)), denied_by(1));
  EXPECT_EQ(send(tcp("198.18.1.1", kSyn | kAck)), kDefault) << "SYN-ACK: ACK must be clear";
  EXPECT_EQ(send(tcp("198.18.1.1", kAck)), kDefault);
  EXPECT_EQ(send(tcp("198.18.1.1", kRst | kAck)), denied_by(2)) << "RST with anything else";
  EXPECT_EQ(send(tcp("198.18.1.1", kRst)), denied_by(2));
  EXPECT_EQ(send(tcp("2001:2::1", kFin | kPsh | kUrg)), denied_by(3));
  EXPECT_EQ(send(tcp("2001:2::1", kFin | kPsh | kUrg | kAck)), denied_by(3)) << "ACK not named: any";
  EXPECT_EQ(send(tcp("2001:2::1", kFin | kPsh)), kDefault) << "URG missing";
  std::vector<uint8_t> cut = tcp("198.18.1.1", kSyn);
  cut.resize(14 + 20 + 13);
  EXPECT_EQ(send(cut), kDefault) << "a TCP header cut before its flags";
}

TEST_F(XdpMatch, SynTrueIsSynWithoutAck) {
  ASSERT_NO_FATAL_FAILURE(publish(deny("syn", "198.18.0.0/15", "proto = \"tcp\"\nsyn = true\ndport = 80")));
  EXPECT_EQ(send(tcp("198.18.1.1", kSyn)), denied_by(1));
  EXPECT_EQ(send(tcp("198.18.1.1", kSyn | kAck)), kDefault);
  EXPECT_EQ(send(tcp("198.18.1.1", kAck)), kDefault);
}

TEST_F(XdpMatch, DestinationIPv4AndIPv6) {
  ASSERT_NO_FATAL_FAILURE(publish(deny("vip4", "198.18.0.0/16", "dst = \"198.19.7.0/24\"") +
                                  deny("vip6", "2001:2::/48", "dst = \"2001:2:0:7::/64\"") +
                                  "[[rule]]\nname = \"host\"\ndst = \"198.19.8.8\"\naction = \"deny\"\n"));
  EXPECT_EQ(send(udp("198.18.1.1", 40000, 9, "198.19.7.9")), denied_by(1)) << "to the VIP's /24";
  EXPECT_EQ(send(udp("198.18.1.1", 40000, 9, "198.19.6.9")), kDefault) << "to another /24";
  EXPECT_EQ(send(from("198.18.1.1", "198.19.7.200").icmp(8, 0).build()), denied_by(1)) << "any protocol";
  EXPECT_EQ(send(udp("2001:2::1", 40000, 9, "2001:2:0:7::99")), denied_by(2));
  EXPECT_EQ(send(udp("2001:2::1", 40000, 9, "2001:2:0:8::99")), kDefault);
  // No cidr: every IPv4 source, to the one address.
  EXPECT_EQ(send(udp("198.19.200.5", 40000, 9, "198.19.8.8")), denied_by(3)) << "dst without cidr: any source";
  EXPECT_EQ(send(udp("198.19.200.5", 40000, 9, "198.19.8.9")), kDefault);
  EXPECT_EQ(send(udp("198.18.1.1", 40000, 9, "198.19.8.8")), denied_by(3)) << "inherited by the longer prefix";
  EXPECT_EQ(send(udp("2001:2::1", 40000, 9, "2001:2:0:8::8")), kDefault) << "an IPv6 packet: the IPv4 rule never";
}

TEST_F(XdpMatch, FrameLength) {
  ASSERT_NO_FATAL_FAILURE(publish(deny("small4", "198.18.0.0/15", "len = \"0-100\"") +
                                  deny("big6", "2001:2::/48", "len = \"1000-65535\"")));
  const std::vector<uint8_t> small = from("198.18.1.1").udp(8).build();
  ASSERT_LE(small.size(), 100u);
  EXPECT_EQ(send(small), denied_by(1)) << small.size() << "-byte frame";
  EXPECT_EQ(send(from("198.18.1.1").udp(58).build()), denied_by(1)) << "exactly 100 bytes: 14 + 20 + 8 + 58";
  EXPECT_EQ(send(from("198.18.1.1").udp(59).build()), kDefault) << "101 bytes";
  EXPECT_EQ(send(from("2001:2::1").udp(938).build()), denied_by(2)) << "1000 bytes: 14 + 40 + 8 + 938";
  EXPECT_EQ(send(from("2001:2::1").udp(937).build()), kDefault) << "999 bytes";
}

TEST_F(XdpMatch, EveryConditionOfOneRuleMustHold) {
  ASSERT_NO_FATAL_FAILURE(publish(
      deny("refl", "198.18.0.0/15", "proto = \"udp\"\nsport = 123\ndst = \"198.19.7.0/24\"\nlen = \"400-1500\"") +
      deny("dns", "198.18.0.0/15", "proto = \"udp\"\nsport = 53")));
  const auto ntp = [](size_t payload, const std::string &dst) {
    return from("198.18.1.1", dst).udp(payload).ports(123, 40000).build();
  };
  EXPECT_EQ(send(ntp(468, "198.19.7.1")), denied_by(1)) << "sport, dst and len all hold (510 bytes)";
  EXPECT_EQ(send(ntp(8, "198.19.7.1")), kDefault) << "too short";
  EXPECT_EQ(send(ntp(468, "198.19.9.1")), kDefault) << "another destination";
  EXPECT_EQ(send(from("198.18.1.1", "198.19.7.1").udp(468).ports(53, 40000).build()), denied_by(2))
      << "the first rule fails, the second decides";
}

TEST_F(XdpMatch, ReloadSwitchesTheDestinationWithTheBank) {
  ASSERT_NO_FATAL_FAILURE(publish(deny("vip", "198.18.0.0/15", "dst = \"198.19.7.0/24\"")));
  EXPECT_EQ(send(udp("198.18.1.1", 40000, 9, "198.19.7.1")), denied_by(1));
  ASSERT_NO_FATAL_FAILURE(publish(deny("vip", "198.18.0.0/15", "dst = \"198.19.9.0/24\"")));
  EXPECT_EQ(send(udp("198.18.1.1", 40000, 9, "198.19.7.1")), kDefault) << "the old VIP after the reload";
  EXPECT_EQ(send(udp("198.18.1.1", 40000, 9, "198.19.9.1")), denied_by(1));
  ASSERT_NO_FATAL_FAILURE(publish(deny("vip", "198.18.0.0/15", "proto = \"udp\"")));
  EXPECT_EQ(send(udp("198.18.1.1", 40000, 9, "198.19.3.1")), denied_by(1)) << "the dst condition is gone";
}

}  // namespace
}  // namespace dt::test
