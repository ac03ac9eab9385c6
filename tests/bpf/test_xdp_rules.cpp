// test_xdp_rules.cpp - packet rules (--rules FILE) as the XDP program applies them.
//
// Each test writes a rules file as text, parses and compiles it with the agent's own
// code (parse_rules, compile_rules) and publishes it with publish_rules, exactly as
// `agent --rules` does. Which rule decided a packet is read from the per-rule
// counters (rule_stats): exactly one rule's counters move per packet.
//
// The fixture exposes no fds for the rules maps; the ones the XDP program uses
// (policy, rules0, rules1, rule_stats) are found through the program's map ids.
// rule_names is used by no program, so names are not published here (names_fd -1,
// which publish_rules allows); the netns test covers them through `agent stats`.
//
// Rates of 0.001/s make refill negligible (a token per 1000 s), so counts are exact.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bpf_fixture.h"
#include "common/address.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"
#include "frames/packet_builder.h"
#include "prog_maps.h"
#include "rules/rules.h"

namespace dt::test {
using namespace frames;  // PacketBuilder, Ipv6Ext
namespace {

constexpr double kNoRefill = 0.001;  // tokens per second: < 0.001 token per test

// ---- Frames ----------------------------------------------------------------------
// Ethernet + IPv4/IPv6 (+ IPv6 extension headers) + the L4 header fields the rules
// look at, built by the shared PacketBuilder (test addresses only).

constexpr uint8_t kSyn = 0x02, kAck = 0x10;
constexpr uint8_t kProtoOther = 253;  // experimental: no L4 fields

struct L4 {
  uint8_t proto;
  uint16_t dport = 0;
  uint8_t tcp_flags = 0;
};
L4 tcp(uint16_t dport, uint8_t flags) { return {IPPROTO_TCP, dport, flags}; }
L4 udp(uint16_t dport) { return {IPPROTO_UDP, dport, 0}; }

std::vector<uint8_t> with_l4(PacketBuilder p, const L4 &l4) {
  switch (l4.proto) {
    case IPPROTO_TCP: p.tcp(l4.dport, l4.tcp_flags); break;
    case IPPROTO_UDP: p.udp(8).ports(40000, l4.dport); break;
    case IPPROTO_ICMP: p.icmp_echo(); break;
    case IPPROTO_ICMPV6: p.icmpv6(128).hop_limit(64); break;  // echo; not 255: never neighbour discovery
    default: p.other_l4(l4.proto, 16);
  }
  return p.build();
}

// `frag` is the IPv4 flags+offset field: 0x4000 DF, 0x2000 MF (first fragment), an
// offset in 8-byte units for a later fragment.
std::vector<uint8_t> ipv4(const std::string &src, const L4 &l4, uint16_t frag = 0x4000) {
  return with_l4(PacketBuilder().ipv4(src).ipv4_frag_field(frag), l4);
}

using Ext = Ipv6Ext;

std::vector<uint8_t> ipv6(const std::string &src, const L4 &l4, const std::vector<Ext> &exts = {}) {
  PacketBuilder p;
  p.ipv6(src);
  for (Ext e : exts) p.ipv6_ext(e);
  return with_l4(p, l4);
}

// ---- Fixture ---------------------------------------------------------------------

using Outcome = RuleOutcome;  // prog_maps.h

Outcome pass_by(int rule) { return {XDP_PASS, rule}; }
Outcome drop_by(int rule) { return {XDP_DROP, rule}; }

class XdpRules : public RuleMapsFixture {
 protected:
  // Parses, compiles and publishes `toml` over the default rule (rate, burst; rate 0:
  // none), the way the agent's --rules and reload do.
  void publish(const std::string &toml, double rate, uint64_t burst) { publish_toml(toml, rate, burst, &rules_); }

  // One packet: its verdict and the one rule whose counters it moved.
  Outcome send(const std::vector<uint8_t> &frame) { return run_counted(frame, std::max<size_t>(rules_, 1)); }

  // `n` packets; how many passed.
  int passes(const std::vector<uint8_t> &frame, int n) {
    int p = 0;
    for (int i = 0; i < n; i++) p += run(frame) == XDP_PASS;
    return p;
  }

  // Every bucket as "address#rule", for messages.
  std::string bucket_list() {
    std::string s;
    for_each_bucket(buckets_fd(), [&](const dt_key &k, const dt_bucket &) {
      s += (s.empty() ? "" : " ") + key_to_string(k) + "#" + std::to_string(k.rule);
    });
    return s.empty() ? "(none)" : s;
  }

  // The global counters summed straight from the per-CPU map. (The fixture's stats()
  // goes through the agent's read_stats; AllowAndDenyNeedNoBucketAndAreCounted checks
  // that the two agree.)
  dt_stats kernel_stats() {
    dt_stats sum{};
    for (const dt_stats &c : per_cpu_values<dt_stats>(stats_fd(), 0)) {
      const uint64_t *from = reinterpret_cast<const uint64_t *>(&c);
      uint64_t *to = reinterpret_cast<uint64_t *>(&sum);
      for (size_t i = 0; i < sizeof sum / sizeof(uint64_t); i++) to[i] += from[i];
    }
    return sum;
  }

  uint32_t config_flags() {
    uint32_t zero = 0;
    dt_config cfg{};
    EXPECT_EQ(bpf_map_lookup_elem(config_fd(), &zero, &cfg), 0);
    return cfg.flags;
  }

  size_t rules_ = 1;  // rules in force, the default included
};

std::string rule(const std::string &name, const std::string &cidr, const std::string &rest) {
  return "[[rule]]\nname = \"" + name + "\"\ncidr = \"" + cidr + "\"\n" + rest + "\n";
}
const std::string kDeny = "action = \"deny\"";
const std::string kAllow = "action = \"allow\"";

// ---- Tests -----------------------------------------------------------------------

TEST_F(XdpRules, NoRulesEverythingUnderRuleZero) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 2));
  EXPECT_EQ(config_flags() & DT_CFG_RULES, 0u) << "publish_policies must not turn rules on";
  const std::string s = "198.18.1.1";
  EXPECT_EQ(send(ipv4(s, tcp(80, kSyn))), pass_by(0));
  EXPECT_EQ(send(ipv4(s, udp(53))), pass_by(0));
  EXPECT_EQ(send(ipv4(s, {IPPROTO_ICMP})), drop_by(0)) << "one bucket per source whatever the protocol";
  // IPv6: one bucket per /64.
  EXPECT_EQ(send(ipv6("2001:2:0:1::1", udp(53))), pass_by(0));
  EXPECT_EQ(send(ipv6("2001:2:0:1:ffff::2", tcp(443, kSyn))), pass_by(0));
  EXPECT_EQ(send(ipv6("2001:2:0:1:1:2:3:4", {IPPROTO_ICMPV6})), drop_by(0));
  EXPECT_EQ(send(ipv6("2001:2:0:2::1", udp(53))), pass_by(0));

  auto b = bucket_of(s, 0);
  ASSERT_TRUE(b) << "no bucket " << s << "#0; buckets: " << bucket_list();
  EXPECT_EQ(b->passed, 2u);
  EXPECT_EQ(b->dropped, 1u);
  EXPECT_EQ(b->rule, 0u);
  auto b6 = bucket_of("2001:2:0:1::", 0);
  ASSERT_TRUE(b6) << "no bucket 2001:2:0:1::/64#0; buckets: " << bucket_list();
  EXPECT_EQ(b6->passed, 2u);
  EXPECT_EQ(bucket_count(), 3) << bucket_list();
  const dt_rule_stats r0 = rule_stats(0);
  EXPECT_EQ(r0.passed, 5u);
  EXPECT_EQ(r0.dropped, 2u);
  const dt_stats st = kernel_stats();
  EXPECT_EQ(st.passed, 5u) << stats_to_string(st);
  EXPECT_EQ(st.dropped, 2u) << stats_to_string(st);
  EXPECT_EQ(st.allowed + st.denied + st.fail_open, 0u) << stats_to_string(st);
}

TEST_F(XdpRules, PublishingPoliciesAfterRulesTurnsRulesOff) {
  ASSERT_NO_FATAL_FAILURE(publish("version = 1\n" + rule("no", "198.18.2.0/24", kDeny), kNoRefill, 5));
  EXPECT_NE(config_flags() & DT_CFG_RULES, 0u) << "publish_rules with prefixes must turn rules on";
  const auto f = ipv4("198.18.2.1", udp(9));
  EXPECT_EQ(send(f), drop_by(1));
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 5));
  rules_ = 2;  // rule 1's counters must not move any more
  EXPECT_EQ(config_flags() & DT_CFG_RULES, 0u);
  EXPECT_EQ(send(f), pass_by(0)) << "without rules every packet is under rule 0";
  EXPECT_TRUE(bucket_of("198.18.2.1", 0)) << bucket_list();
}

TEST_F(XdpRules, LongestPrefixWinsOverFileOrder) {
  ASSERT_NO_FATAL_FAILURE(publish("version = 1\n" + rule("wide", "198.18.0.0/16", kDeny) +  // 1
                                      rule("narrow", "198.18.5.0/24", kAllow) +             // 2
                                      rule("host", "198.18.5.7/32", kDeny) +                // 3
                                      rule("wide6", "2001:2::/48", kDeny) +                 // 4
                                      rule("narrow6", "2001:2:0:5::/64", kAllow),           // 5
                                  kNoRefill, 100));
  EXPECT_EQ(send(ipv4("198.18.5.1", udp(9))), pass_by(2));
  EXPECT_EQ(send(ipv4("198.18.5.7", udp(9))), drop_by(3));
  EXPECT_EQ(send(ipv4("198.18.5.8", udp(9))), pass_by(2));
  EXPECT_EQ(send(ipv4("198.18.9.1", udp(9))), drop_by(1));
  EXPECT_EQ(send(ipv4("198.19.0.1", udp(9))), pass_by(0)) << "no rule covers 198.19.0.0/16";
  EXPECT_EQ(send(ipv6("2001:2:0:5::1", udp(9))), pass_by(5));
  EXPECT_EQ(send(ipv6("2001:2:0:6::1", udp(9))), drop_by(4));
}

TEST_F(XdpRules, FirstMatchingCandidateByProtoPortSyn) {
  const std::string net = "198.18.7.0/24", wide = "198.18.0.0/16";
  ASSERT_NO_FATAL_FAILURE(publish("version = 1\n" +
                                      rule("web-syn", net, "proto = \"tcp\"\ndport = 80\nsyn = true\n" + kDeny) +   // 1
                                      rule("web", net, "proto = \"tcp\"\ndport = \"80-81\"\n" + kAllow) +           // 2
                                      rule("udp-range", net, "proto = \"udp\"\ndport = \"5000-5010\"\n" + kDeny) +  // 3
                                      rule("ping", net, "proto = \"icmp\"\n" + kAllow) +                            // 4
                                      rule("wide-udp", wide, "proto = \"udp\"\n" + kAllow) +                        // 5
                                      rule("wide-syn", wide, "proto = \"tcp\"\nsyn = true\n" + kDeny),              // 6
                                  kNoRefill, 1000));
  const std::string s = "198.18.7.1";
  struct Case {
    const char *what;
    std::vector<uint8_t> frame;
    Outcome want;
  };
  std::vector<uint8_t> cut_tcp = ipv4(s, tcp(80, kSyn));
  cut_tcp.resize(cut_tcp.size() - 20 + 10);  // 10 bytes of TCP: no room for the flags
  const std::vector<Case> cases = {
      {"TCP SYN to 80", ipv4(s, tcp(80, kSyn)), drop_by(1)},
      {"TCP SYN+ACK to 80", ipv4(s, tcp(80, kSyn | kAck)), pass_by(2)},
      {"TCP ACK to 80", ipv4(s, tcp(80, kAck)), pass_by(2)},
      {"TCP SYN to 81", ipv4(s, tcp(81, kSyn)), pass_by(2)},
      {"TCP SYN to 82: inherited /16 rule", ipv4(s, tcp(82, kSyn)), drop_by(6)},
      {"TCP ACK to 82", ipv4(s, tcp(82, kAck)), pass_by(0)},
      {"UDP to 5000", ipv4(s, udp(5000)), drop_by(3)},
      {"UDP to 5010", ipv4(s, udp(5010)), drop_by(3)},
      {"UDP to 4999", ipv4(s, udp(4999)), pass_by(5)},
      {"UDP to 5011", ipv4(s, udp(5011)), pass_by(5)},
      {"UDP to 80", ipv4(s, udp(80)), pass_by(5)},
      {"ICMP echo", ipv4(s, {IPPROTO_ICMP}), pass_by(4)},
      {"another protocol", ipv4(s, {kProtoOther}), pass_by(0)},
      {"first fragment, TCP SYN to 80", ipv4(s, tcp(80, kSyn), 0x2000), drop_by(1)},
      {"later fragment looking like TCP SYN to 80", ipv4(s, tcp(80, kSyn), 100), pass_by(0)},
      {"later fragment looking like UDP to 5000", ipv4(s, udp(5000), 100), pass_by(0)},
      {"TCP header cut short", cut_tcp, pass_by(0)},
      {"other /24, TCP SYN to 80", ipv4("198.18.8.1", tcp(80, kSyn)), drop_by(6)},
      {"other /24, UDP to 5000", ipv4("198.18.8.1", udp(5000)), pass_by(5)},
      {"other /24, ICMP", ipv4("198.18.8.1", {IPPROTO_ICMP}), pass_by(0)},
  };
  for (const Case &c : cases) EXPECT_EQ(send(c.frame), c.want) << c.what;
}

TEST_F(XdpRules, IPv6ExtensionHeaders) {
  const std::string net = "2001:2:0:6::/64";
  ASSERT_NO_FATAL_FAILURE(publish("version = 1\n" + rule("https", net, "proto = \"tcp\"\ndport = 443\n" + kDeny) +  // 1
                                      rule("dns", net, "proto = \"udp\"\ndport = 53\n" + kAllow) +                  // 2
                                      rule("ping", net, "proto = \"icmp\"\n" + kAllow),                             // 3
                                  kNoRefill, 1000));
  const std::string s = "2001:2:0:6::1";
  using E = Ext;
  struct Case {
    const char *what;
    std::vector<uint8_t> frame;
    Outcome want;
  };
  const std::vector<Case> cases = {
      {"TCP 443", ipv6(s, tcp(443, kAck)), drop_by(1)},
      {"hop-by-hop, TCP 443", ipv6(s, tcp(443, kAck), {E::HopByHop}), drop_by(1)},
      {"hop-by-hop, first fragment, TCP 443", ipv6(s, tcp(443, kSyn), {E::HopByHop, E::FragFirst}), drop_by(1)},
      {"first fragment, UDP 53", ipv6(s, udp(53), {E::FragFirst}), pass_by(2)},
      {"later fragment looking like TCP 443", ipv6(s, tcp(443, kSyn), {E::FragLater}), pass_by(0)},
      {"hop-by-hop, later fragment looking like UDP 53", ipv6(s, udp(53), {E::HopByHop, E::FragLater}), pass_by(0)},
      {"four extension headers, TCP 443",
       ipv6(s, tcp(443, kAck), {E::HopByHop, E::DestOpts, E::FragFirst, E::DestOpts}), drop_by(1)},
      {"five extension headers: past the parser's limit",
       ipv6(s, tcp(443, kAck), {E::HopByHop, E::DestOpts, E::DestOpts, E::DestOpts, E::DestOpts}), pass_by(0)},
      {"hop-by-hop, TCP 80", ipv6(s, tcp(80, kSyn), {E::HopByHop}), pass_by(0)},
      {"ICMPv6 echo", ipv6(s, {IPPROTO_ICMPV6}), pass_by(3)},
      {"destination options, ICMPv6 echo", ipv6(s, {IPPROTO_ICMPV6}, {E::DestOpts}), pass_by(3)},
      {"another /64, TCP 443", ipv6("2001:2:0:7::1", tcp(443, kAck)), pass_by(0)},
  };
  for (const Case &c : cases) EXPECT_EQ(send(c.frame), c.want) << c.what;
}

TEST_F(XdpRules, AllowAndDenyNeedNoBucketAndAreCounted) {
  // A default burst of 1 would drop the second packet of any throttled source.
  ASSERT_NO_FATAL_FAILURE(publish("version = 1\n" + rule("ok", "198.18.10.0/24", kAllow) +  // 1
                                      rule("no", "198.18.20.0/24", kDeny) +                 // 2
                                      rule("ok6", "2001:2:0:10::/64", kAllow),              // 3
                                  kNoRefill, 1));
  for (int i = 0; i < 5; i++) {
    EXPECT_EQ(send(ipv4("198.18.10." + std::to_string(i + 1), udp(9))), pass_by(1));
    EXPECT_EQ(send(ipv4("198.18.20.1", udp(9))), drop_by(2));
  }
  for (int i = 0; i < 3; i++) EXPECT_EQ(send(ipv6("2001:2:0:10::1", tcp(80, kSyn))), pass_by(3));
  EXPECT_EQ(bucket_count(), 0) << "allow and deny must not create buckets: " << bucket_list();
  const dt_stats st = kernel_stats();
  EXPECT_EQ(st.allowed, 8u) << stats_to_string(st);
  EXPECT_EQ(st.denied, 5u) << stats_to_string(st);
  EXPECT_EQ(st.passed + st.dropped + st.new_sources + st.fail_open, 0u)
      << "bucket counters moved: " << stats_to_string(st);
  EXPECT_EQ(rule_stats(1).passed, 5u);
  EXPECT_EQ(rule_stats(1).dropped, 0u);
  EXPECT_EQ(rule_stats(2).passed, 0u);
  EXPECT_EQ(rule_stats(2).dropped, 5u);
  EXPECT_EQ(rule_stats(3).passed, 3u);
  EXPECT_EQ(rule_stats(0).passed + rule_stats(0).dropped, 0u);
  // What the agent reads (agent stats, metrics) must agree with the kernel.
  const dt_stats read = stats();
  EXPECT_EQ(read.allowed, st.allowed) << "read_stats does not sum 'allowed'";
  EXPECT_EQ(read.denied, st.denied) << "read_stats does not sum 'denied'";
}

TEST_F(XdpRules, WithoutRateUnmatchedSourcesAreAllowed) {
  ASSERT_NO_FATAL_FAILURE(publish("version = 1\n" + rule("no", "198.18.20.0/24", kDeny), 0, 0));
  EXPECT_EQ(send(ipv4("198.18.30.1", udp(9))), pass_by(0));
  EXPECT_EQ(send(ipv6("2001:2:0:30::1", udp(9))), pass_by(0));
  EXPECT_EQ(send(ipv4("198.18.20.1", udp(9))), drop_by(1));
  EXPECT_EQ(bucket_count(), 0) << bucket_list();
  EXPECT_EQ(kernel_stats().allowed, 2u) << stats_to_string(kernel_stats());
}

TEST_F(XdpRules, KeyPrefixSetsTheBucketGranularity) {
  ASSERT_NO_FATAL_FAILURE(
      publish("version = 1\n" + rule("net24", "198.18.40.0/24", "rate = 0.001\nburst = 4\nkey_prefix = 24") +  // 1
                  rule("net56", "2001:2:0:100::/56", "rate = 0.001\nburst = 3\nkey_prefix = 56"),              // 2
              kNoRefill, 2));
  // Rule 1: every source of the /24 draws on one bucket of 4.
  for (int i = 1; i <= 4; i++) EXPECT_EQ(send(ipv4("198.18.40." + std::to_string(i), udp(9))), pass_by(1));
  EXPECT_EQ(send(ipv4("198.18.40.200", udp(9))), drop_by(1)) << "the /24's bucket is empty";
  auto b24 = bucket_of("198.18.40.0", 1);
  ASSERT_TRUE(b24) << "no bucket 198.18.40.0/24#1; buckets: " << bucket_list();
  EXPECT_EQ(b24->passed, 4u);
  EXPECT_EQ(b24->dropped, 1u);
  EXPECT_EQ(b24->rule, 1u);
  // Rule 2: one bucket for the IPv6 /56.
  for (const char *src : {"2001:2:0:101::1", "2001:2:0:1ff::2", "2001:2:0:180::3"})
    EXPECT_EQ(send(ipv6(src, udp(9))), pass_by(2)) << src;
  EXPECT_EQ(send(ipv6("2001:2:0:1aa::4", udp(9))), drop_by(2));
  EXPECT_TRUE(bucket_of("2001:2:0:100::", 2)) << bucket_list();
  // The default rule: IPv6 per /64, IPv4 per address.
  EXPECT_EQ(send(ipv6("2001:2:0:5::1", udp(9))), pass_by(0));
  EXPECT_EQ(send(ipv6("2001:2:0:5:1::2", udp(9))), pass_by(0));
  EXPECT_EQ(send(ipv6("2001:2:0:5:ffff::3", udp(9))), drop_by(0)) << "the /64's bucket of 2 is empty";
  EXPECT_EQ(send(ipv6("2001:2:0:6::1", udp(9))), pass_by(0)) << "another /64, another bucket";
  EXPECT_EQ(passes(ipv4("198.18.41.1", udp(9)), 3), 2);
  EXPECT_EQ(send(ipv4("198.18.41.2", udp(9))), pass_by(0)) << "another address, another bucket";
  EXPECT_TRUE(bucket_of("2001:2:0:5::", 0)) << bucket_list();
  EXPECT_TRUE(bucket_of("2001:2:0:6::", 0)) << bucket_list();
  EXPECT_TRUE(bucket_of("198.18.41.1", 0)) << bucket_list();
  EXPECT_EQ(bucket_count(), 6) << bucket_list();
}

TEST_F(XdpRules, SameSourceUnderTwoRulesHasTwoBuckets) {
  ASSERT_NO_FATAL_FAILURE(
      publish("version = 1\n" + rule("web", "198.18.50.0/24", "proto = \"tcp\"\ndport = 80\nrate = 0.001\nburst = 2"),
              kNoRefill, 3));
  const std::string s = "198.18.50.1";
  EXPECT_EQ(send(ipv4(s, tcp(80, kSyn))), pass_by(1));
  EXPECT_EQ(send(ipv4(s, tcp(80, kAck))), pass_by(1));
  EXPECT_EQ(send(ipv4(s, tcp(80, kAck))), drop_by(1)) << "rule 1's bucket of 2 is empty";
  for (int i = 0; i < 3; i++) EXPECT_EQ(send(ipv4(s, udp(9))), pass_by(0)) << "rule 0's bucket is another one";
  EXPECT_EQ(send(ipv4(s, udp(9))), drop_by(0));
  auto web = bucket_of(s, 1), def = bucket_of(s, 0);
  ASSERT_TRUE(web && def) << "buckets: " << bucket_list();
  EXPECT_EQ(web->passed, 2u);
  EXPECT_EQ(web->dropped, 1u);
  EXPECT_EQ(web->rule, 1u);
  EXPECT_EQ(def->passed, 3u);
  EXPECT_EQ(def->dropped, 1u);
  EXPECT_EQ(def->rule, 0u);
  EXPECT_EQ(bucket_count(), 2) << bucket_list();
}

TEST_F(XdpRules, BucketsSurviveAReloadAndTheNewLimitApplies) {
  const std::string t3 = rule("t", "198.18.60.0/24", "rate = 0.001\nburst = 3");
  ASSERT_NO_FATAL_FAILURE(publish("version = 1\n" + t3, kNoRefill, 100));
  const auto f = ipv4("198.18.60.1", udp(9));
  EXPECT_EQ(passes(f, 4), 3);
  EXPECT_EQ(send(ipv4("198.18.61.1", udp(9))), pass_by(0));

  // Same rule 1, one rule more: the bucket is kept, still empty.
  ASSERT_NO_FATAL_FAILURE(publish("version = 1\n" + t3 + rule("extra", "198.18.62.0/24", kDeny), kNoRefill, 100));
  EXPECT_EQ(bucket_count(), 2) << bucket_list();
  auto b = bucket_of("198.18.60.1", 1);
  ASSERT_TRUE(b) << bucket_list();
  EXPECT_EQ(b->passed, 3u);
  EXPECT_EQ(b->dropped, 1u);
  EXPECT_EQ(send(f), drop_by(1)) << "a reload must not refill buckets";
  EXPECT_EQ(send(ipv4("198.18.62.1", udp(9))), drop_by(2)) << "the new rule is in force";

  // Burst 3 -> 6: the same bucket now has 3 more tokens.
  ASSERT_NO_FATAL_FAILURE(
      publish("version = 1\n" + rule("t", "198.18.60.0/24", "rate = 0.001\nburst = 6"), kNoRefill, 100));
  EXPECT_EQ(passes(f, 5), 3) << "burst raised from 3 to 6 on a bucket that passed 3";
  b = bucket_of("198.18.60.1", 1);
  ASSERT_TRUE(b) << bucket_list();
  EXPECT_EQ(b->passed, 6u);
  auto other = bucket_of("198.18.61.1", 0);
  ASSERT_TRUE(other) << bucket_list();
  EXPECT_EQ(other->passed, 1u);
  EXPECT_EQ(rule_stats(1).passed, 6u) << "per-rule counters continue across reloads";
}

// Two rule sets under which the source is denied, by rule 1 in one and by rule 2 in
// the other; in each, the other rule allows. A packet that took its rule from one
// set and its policy from the other would pass: while the sets are swapped under a
// stream of packets, none may pass. First through publish_rules (each swap waits its
// grace period, so there are few), then by flipping config.bank alone as fast as
// the syscall goes, with both banks filled: the very store publish_rules ends with.
TEST_F(XdpRules, ReloadIsAtomicForEveryPacket) {
  const std::string a = "version = 1\n" + rule("x", "198.18.5.0/24", kDeny) + rule("y", "198.18.6.0/24", kAllow);
  const std::string b = "version = 1\n" + rule("x", "198.18.6.0/24", kAllow) + rule("y", "198.18.5.0/24", kDeny);
  const auto f = ipv4("198.18.5.1", udp(9));
  ASSERT_NO_FATAL_FAILURE(publish(a, kNoRefill, 1));
  ASSERT_EQ(send(f), drop_by(1));
  ASSERT_NO_FATAL_FAILURE(publish(b, kNoRefill, 1));
  ASSERT_EQ(send(f), drop_by(2));

  // One packet per BPF_PROG_TEST_RUN: a repeat > 1 costs far more per call here.
  std::atomic<bool> done{false};
  uint64_t sent = 2, passed = 0;
  int error = 0;
  std::thread hammer([&] {
    while (!done.load() && error == 0) {
      uint32_t verdict = 0;
      error = test_run_xdp(xdp_fd(), f, 1, &verdict);
      sent += error == 0;
      passed += error == 0 && verdict == XDP_PASS;
    }
  });
  constexpr int kReloads = 20, kFlips = 200000;
  for (int i = 0; i < kReloads && !HasFailure(); i++) publish(i % 2 ? b : a, kNoRefill, 1);
  uint32_t zero = 0;
  dt_config cfg{};
  int flip_error = bpf_map_lookup_elem(config_fd(), &zero, &cfg) == 0 ? 0 : errno;
  for (int i = 0; i < kFlips && flip_error == 0; i++) {
    cfg.bank ^= 1;
    if (bpf_map_update_elem(config_fd(), &zero, &cfg, BPF_ANY) != 0) flip_error = errno;
  }
  done = true;
  hammer.join();
  ASSERT_EQ(error, 0) << "BPF_PROG_TEST_RUN: " << strerror(-error);
  ASSERT_EQ(flip_error, 0) << "config update: " << strerror(flip_error);
  printf("reload atomicity: %llu packets during %d reloads and %d bank flips\n", static_cast<unsigned long long>(sent),
         kReloads, kFlips);
  const dt_stats st = kernel_stats();
  EXPECT_EQ(passed, 0u) << "packets passed: they saw half of a reload (the rule of one set, the policy of the other)";
  EXPECT_EQ(st.allowed, 0u) << "of " << sent << " packets: " << stats_to_string(st);
  EXPECT_EQ(st.denied, sent) << "every packet must be denied by one set or the other: " << stats_to_string(st);
  EXPECT_EQ(rule_stats(1).passed + rule_stats(2).passed, 0u);
  EXPECT_EQ(st.fail_open, 0u) << stats_to_string(st);
}

}  // namespace
}  // namespace dt::test
