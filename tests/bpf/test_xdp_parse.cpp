// test_xdp_parse.cpp - what the XDP program makes of each kind of frame.
//
// Table-driven (after katran's BPF_PROG_TEST_RUN tests): each case is a frame, a
// description and the expected outcome: the verdict, the one global counter that
// must move (and no other), and whether the frame charged a source's bucket.
// Everything the parser cannot decide about must pass: the throttle must never
// drop or charge a frame it did not understand.
#include <arpa/inet.h>
#include <linux/bpf.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "bpf_fixture.h"
#include "common/address.h"
#include "dataplane/map_reader.h"
#include "frames/packet_builder.h"

namespace dt::test {
using namespace frames;  // PacketBuilder, the header lengths and TPIDs
namespace {

enum class Outcome {
  Passed,      // admitted by the source's bucket (passed + 1, bucket created)
  NonIp,       // non_ip + 1
  NdExempt,    // nd_exempt + 1
  ParseError,  // parse_errors + 1
};

const char *outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Passed: return "admitted by its bucket";
    case Outcome::NonIp: return "non-IP";
    case Outcome::NdExempt: return "ND-exempt";
    case Outcome::ParseError: return "parse error";
  }
  return "?";
}

// Every counter with its name, for exact "this one moved, no other did" checks.
struct CounterField {
  const char *name;
  __u64 dt_stats::*field;
};
constexpr CounterField kCounters[] = {
    {"passed", &dt_stats::passed},           {"dropped", &dt_stats::dropped},
    {"new_sources", &dt_stats::new_sources}, {"parse_errors", &dt_stats::parse_errors},
    {"non_ip", &dt_stats::non_ip},           {"fail_open", &dt_stats::fail_open},
    {"contended", &dt_stats::contended},     {"debit_hits", &dt_stats::debit_hits},
    {"nd_exempt", &dt_stats::nd_exempt},
};

// The counters after one frame with outcome `o`; `new_source`: its bucket is new.
dt_stats expected_after(dt_stats s, Outcome o, bool new_source) {
  switch (o) {
    case Outcome::Passed:
      s.passed++;
      if (new_source) s.new_sources++;
      break;
    case Outcome::NonIp: s.non_ip++; break;
    case Outcome::NdExempt: s.nd_exempt++; break;
    case Outcome::ParseError: s.parse_errors++; break;
  }
  return s;
}

void expect_counters(const dt_stats &want, const dt_stats &got) {
  for (const auto &c : kCounters)
    EXPECT_EQ(want.*c.field, got.*c.field)
        << "global counter " << c.name << " (all counters: " << stats_to_string(got) << ")";
}

// The parse suite's fixture: a policy generous enough that every IP frame passes.
class XdpParse : public BpfFixture {
 protected:
  void SetUp() override {
    BpfFixture::SetUp();
    if (HasFatalFailure()) return;
    set_policy(1000, 1000000);
  }

  // Runs `frame` and checks verdict PASS, the counters and the bucket of `source`.
  void check_frame(const std::vector<uint8_t> &frame, Outcome o, const std::string &source) {
    const dt_stats before = stats();
    const auto b_before = o == Outcome::Passed ? bucket(source) : std::nullopt;
    const long n_before = bucket_count();

    const int verdict = run(frame);
    EXPECT_EQ(verdict, XDP_PASS) << "a " << frame.size() << "-byte frame expected to be " << outcome_name(o) << " got "
                                 << verdict_name(verdict);
    expect_counters(expected_after(before, o, !b_before), stats());
    if (o == Outcome::Passed) {
      auto b = bucket(source);
      ASSERT_TRUE(b) << "no bucket for source " << source << " after an admitted frame";
      EXPECT_EQ(b->passed, (b_before ? b_before->passed : 0) + 1)
          << "the frame did not debit the bucket of its source " << source;
      EXPECT_EQ(bucket_count(), n_before + (b_before ? 0 : 1)) << "a bucket other than " << source << "'s was created";
    } else {
      EXPECT_EQ(bucket_count(), n_before) << "a " << outcome_name(o) << " frame created a bucket";
    }
  }
};

// ---- Whole frames ---------------------------------------------------------------

struct ParseCase {
  std::string name;  // [A-Za-z0-9_]: a GoogleTest parameter name
  std::vector<uint8_t> frame;
  Outcome outcome;
  std::string source = "";  // the bucket it charges (Outcome::Passed only)
};

std::vector<ParseCase> whole_frame_cases() {
  using P = PacketBuilder;
  const std::string s4 = "198.18.0.1", s6 = "2001:2::1";
  std::vector<ParseCase> c = {
      {"ipv4_udp", P().ipv4(s4).udp().build(), Outcome::Passed, s4},
      {"ipv4_no_payload", P().ipv4(s4).build(), Outcome::Passed, s4},
      {"ipv6_udp", P().ipv6(s6).udp().build(), Outcome::Passed, s6},
      {"ipv6_no_next_header", P().ipv6(s6).build(), Outcome::Passed, s6},
      {"vlan_ipv4", P().vlan(100).ipv4(s4).udp().build(), Outcome::Passed, s4},
      {"vlan_8021ad_ipv4", P().vlan(100, kTpid8021AD).ipv4(s4).udp().build(), Outcome::Passed, s4},
      {"vlan_ipv6", P().vlan(100).ipv6(s6).udp().build(), Outcome::Passed, s6},
      {"qinq_ipv4", P().vlan(10, kTpid8021AD).vlan(20).ipv4(s4).udp().build(), Outcome::Passed, s4},
      {"qinq_ipv6", P().vlan(10, kTpid8021AD).vlan(20).ipv6(s6).udp().build(), Outcome::Passed, s6},
      {"double_8021q_ipv4", P().vlan(10).vlan(20).ipv4(s4).udp().build(), Outcome::Passed, s4},
      {"inverted_qinq_ipv4", P().vlan(10).vlan(20, kTpid8021AD).ipv4(s4).udp().build(), Outcome::Passed, s4},
      // A third tag is beyond DT_MAX_VLAN_DEPTH: malformed, whatever is inside.
      {"three_tags_ipv4", P().vlan(1).vlan(2).vlan(3).ipv4(s4).udp().build(), Outcome::ParseError},
      {"three_tags_ipv6", P().vlan(1, kTpid8021AD).vlan(2).vlan(3).ipv6(s6).build(), Outcome::ParseError},
      {"three_tags_arp", P().vlan(1).vlan(2).vlan(3).arp().build(), Outcome::ParseError},
      {"arp", P().arp().build(), Outcome::NonIp},
      {"vlan_arp", P().vlan(100).arp().build(), Outcome::NonIp},
      {"qinq_arp", P().vlan(10, kTpid8021AD).vlan(20).arp().build(), Outcome::NonIp},
      {"experimental_ethertype", P().build(), Outcome::NonIp},
      // Neighbour discovery (ICMPv6 133..137, hop limit 255) is exempt; the edges are not.
      {"icmpv6_132_hop255", P().ipv6(s6).icmpv6(132).build(), Outcome::Passed, s6},
      {"icmpv6_138_hop255", P().ipv6(s6).icmpv6(138).build(), Outcome::Passed, s6},
      {"icmpv6_echo_hop255", P().ipv6(s6).icmpv6(128).build(), Outcome::Passed, s6},
      {"nd_solicitation_hop64", P().ipv6(s6).icmpv6(135).hop_limit(64).build(), Outcome::Passed, s6},
      {"vlan_nd_solicitation", P().vlan(100).ipv6(s6).icmpv6(135).build(), Outcome::NdExempt},
      {"qinq_nd_advertisement", P().vlan(1, kTpid8021AD).vlan(2).ipv6(s6).icmpv6(136).build(), Outcome::NdExempt},
      // Invalid IP headers.
      {"ipv4_version6", P().ipv4(s4).ip_version_field(6).udp().build(), Outcome::ParseError},
      {"ipv4_version0", P().ipv4(s4).ip_version_field(0).udp().build(), Outcome::ParseError},
      {"ipv4_version15", P().ipv4(s4).ip_version_field(15).udp().build(), Outcome::ParseError},
      {"ipv6_version4", P().ipv6(s6).ip_version_field(4).udp().build(), Outcome::ParseError},
      // IHL 15 (60 bytes) claimed by a 20-byte header at the end of the frame.
      {"ipv4_ihl15_beyond_frame", P().ipv4(s4).ipv4_ihl_field(15).build(), Outcome::ParseError},
  };
  for (uint8_t ihl = 0; ihl < 5; ihl++)
    c.push_back(
        {"ipv4_ihl" + std::to_string(ihl), P().ipv4(s4).ipv4_ihl_field(ihl).udp().build(), Outcome::ParseError});
  for (unsigned words = 1; words <= 10; words++)
    c.push_back({"ipv4_options_ihl" + std::to_string(5 + words), P().ipv4(s4).ipv4_options(words).udp().build(),
                 Outcome::Passed, s4});
  for (uint8_t type = 133; type <= 137; type++)
    c.push_back({"nd_type" + std::to_string(type), P().ipv6(s6).icmpv6(type).build(), Outcome::NdExempt});
  return c;
}

void PrintTo(const ParseCase &c, std::ostream *os) { *os << c.name << " (" << c.frame.size() << " bytes)"; }

class XdpParseFrame : public XdpParse, public ::testing::WithParamInterface<ParseCase> {};

TEST_P(XdpParseFrame, VerdictCountersAndBucket) {
  check_frame(GetParam().frame, GetParam().outcome, GetParam().source);
}

INSTANTIATE_TEST_SUITE_P(Table, XdpParseFrame, ::testing::ValuesIn(whole_frame_cases()),
                         [](const auto &info) { return info.param.name; });

// ---- Truncation at every byte ----------------------------------------------------
//
// The frame cut to each length below `complete` (the first length at which the
// parser has everything it needs) must pass as a parse error and charge nobody; at
// exactly `complete` bytes it must parse as the whole frame would: this pins the
// bounds checks to the byte, in both directions. Lengths start at kMinTestFrame:
// BPF_PROG_TEST_RUN refuses anything shorter than an Ethernet header (see
// KernelRefusesFramesShorterThanEthernet), so the program's own "< 14 bytes"
// check cannot be reached from a test.

struct TruncCase {
  std::string name;
  std::vector<uint8_t> frame;
  size_t complete;
  Outcome outcome;  // at `complete` bytes
  std::string source;
};

std::vector<TruncCase> truncation_cases() {
  using P = PacketBuilder;
  const std::string s4 = "198.18.0.1", s6 = "2001:2::1";
  const auto ip4_end = [](const P &p) { return p.l3_offset() + p.l3_len(); };
  std::vector<TruncCase> c;
  auto add = [&](const std::string &name, const P &p, size_t complete, Outcome o, const std::string &src) {
    c.push_back({name, p.build(), complete, o, src});
  };

  add("ethernet_arp", P().arp(), kEthHdrLen, Outcome::NonIp, "");
  add("vlan_arp", P().vlan(7).arp(), kEthHdrLen + kVlanHdrLen, Outcome::NonIp, "");
  add("qinq_arp", P().vlan(7, kTpid8021AD).vlan(8).arp(), kEthHdrLen + 2 * kVlanHdrLen, Outcome::NonIp, "");
  {
    P p = P().ipv4(s4).udp();
    add("ipv4", p, ip4_end(p), Outcome::Passed, s4);
  }
  for (unsigned words = 1; words <= 10; words++) {
    P p = P().ipv4(s4).ipv4_options(words).udp();
    add("ipv4_options_ihl" + std::to_string(5 + words), p, ip4_end(p), Outcome::Passed, s4);
  }
  {
    P p = P().vlan(100).ipv4(s4).udp();
    add("vlan_ipv4", p, ip4_end(p), Outcome::Passed, s4);
  }
  {
    P p = P().vlan(10, kTpid8021AD).vlan(20).ipv4(s4).ipv4_options(10).udp();
    add("qinq_ipv4_ihl15", p, ip4_end(p), Outcome::Passed, s4);
  }
  {
    P p = P().ipv6(s6).udp();
    add("ipv6", p, p.l3_offset() + kIPv6HdrLen, Outcome::Passed, s6);
  }
  {
    P p = P().vlan(10, kTpid8021AD).vlan(20).ipv6(s6).udp();
    add("qinq_ipv6", p, p.l3_offset() + kIPv6HdrLen, Outcome::Passed, s6);
  }
  {
    // ND needs one byte more than the fixed header: the ICMPv6 type.
    P p = P().ipv6(s6).icmpv6(135);
    add("ipv6_nd", p, p.l3_offset() + kIPv6HdrLen + 1, Outcome::NdExempt, "");
  }
  {
    P p = P().vlan(100).ipv6(s6).icmpv6(135);
    add("vlan_ipv6_nd", p, p.l3_offset() + kIPv6HdrLen + 1, Outcome::NdExempt, "");
  }
  return c;
}

void PrintTo(const TruncCase &c, std::ostream *os) {
  *os << c.name << " (complete at " << c.complete << " of " << c.frame.size() << " bytes)";
}

class XdpTruncated : public XdpParse, public ::testing::WithParamInterface<TruncCase> {};

TEST_P(XdpTruncated, EveryShorterLengthIsAParseErrorAndCompleteParses) {
  const TruncCase &tc = GetParam();
  ASSERT_LE(tc.complete, tc.frame.size()) << "bad test case: frame shorter than its headers";
  for (size_t n = kMinTestFrame; n < tc.complete; n++) {
    SCOPED_TRACE("frame " + tc.name + " truncated to " + std::to_string(n) + " of " + std::to_string(tc.frame.size()) +
                 " bytes");
    check_frame(std::vector<uint8_t>(tc.frame.begin(), tc.frame.begin() + static_cast<long>(n)), Outcome::ParseError,
                "");
  }
  EXPECT_EQ(bucket_count(), 0) << "a truncated frame created a bucket";
  EXPECT_EQ(stats().parse_errors, tc.complete - kMinTestFrame) << "expected one parse error per truncated length";

  SCOPED_TRACE("frame " + tc.name + " cut right after the headers the parser needs, at " + std::to_string(tc.complete) +
               " bytes");
  check_frame(std::vector<uint8_t>(tc.frame.begin(), tc.frame.begin() + static_cast<long>(tc.complete)), tc.outcome,
              tc.source);
}

INSTANTIATE_TEST_SUITE_P(Table, XdpTruncated, ::testing::ValuesIn(truncation_cases()),
                         [](const auto &info) { return info.param.name; });

TEST_F(XdpParse, KernelRefusesFramesShorterThanEthernet) {
  // The limit the truncation tests start from. Should a kernel accept shorter test
  // input, this fails: lower kMinTestFrame and the table covers the Ethernet header too.
  const auto frame = PacketBuilder().ipv4("198.18.0.1").build();
  uint32_t verdict = 0;
  EXPECT_EQ(test_run_xdp(xdp_fd(), {frame.begin(), frame.begin() + kMinTestFrame - 1}, 1, &verdict), -EINVAL)
      << "BPF_PROG_TEST_RUN accepted a " << kMinTestFrame - 1 << "-byte frame";
}

// ---- Source keys -----------------------------------------------------------------

// Every bucket in the map, with its key.
std::vector<std::pair<dt_key, dt_bucket>> all_buckets(int fd) {
  std::vector<std::pair<dt_key, dt_bucket>> v;
  for_each_bucket(fd, [&](const dt_key &k, const dt_bucket &b) { v.emplace_back(k, b); });
  return v;
}

TEST_F(XdpParse, Ipv4SourceIsKeyedAsMappedIpv6) {
  // Two destinations, one source: one bucket, keyed by the source only.
  ASSERT_EQ(run(PacketBuilder().ipv4("198.18.0.1", "198.18.0.254").udp().build()), XDP_PASS);
  ASSERT_EQ(run(PacketBuilder().ipv4("198.18.0.1", "198.19.0.9").udp().build()), XDP_PASS);
  auto all = all_buckets(buckets_fd());
  ASSERT_EQ(all.size(), 1u) << "expected exactly the bucket of 198.18.0.1";
  const std::array<uint8_t, 16> want = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1};
  EXPECT_EQ(memcmp(all[0].first.addr, want.data(), 16), 0)
      << "IPv4 source not keyed as ::ffff:198.18.0.1 (got " << key_to_string(all[0].first) << ")";
  EXPECT_EQ(key_to_string(all[0].first), "198.18.0.1");
  EXPECT_EQ(all[0].second.passed, 2u);
}

TEST_F(XdpParse, Ipv6SourceIsKeyedByItsSlash64) {
  ASSERT_EQ(run(PacketBuilder().ipv6("2001:2:0:5:1:2:3:abcd", "2001:2::fe").udp().build()), XDP_PASS);
  auto all = all_buckets(buckets_fd());
  ASSERT_EQ(all.size(), 1u) << "expected exactly the bucket of 2001:2:0:5::/64";
  uint8_t want[16];
  ASSERT_EQ(inet_pton(AF_INET6, "2001:2:0:5::", want), 1);
  EXPECT_EQ(memcmp(all[0].first.addr, want, 16), 0)
      << "IPv6 source keyed as " << key_to_string(all[0].first) << ", not 2001:2:0:5:: (its /64)";
  EXPECT_EQ(all[0].first.rule, DT_RULE_DEFAULT);
  EXPECT_EQ(all[0].second.passed, 1u);
}

TEST_F(XdpParse, TaggedFramesChargeTheBucketOfTheirSource) {
  const std::string s = "198.18.0.7";
  ASSERT_EQ(run(PacketBuilder().ipv4(s).udp().build()), XDP_PASS);
  ASSERT_EQ(run(PacketBuilder().vlan(100).ipv4(s).udp().build()), XDP_PASS);
  ASSERT_EQ(run(PacketBuilder().vlan(10, kTpid8021AD).vlan(20).ipv4(s).udp().build()), XDP_PASS);
  auto b = bucket(s);
  ASSERT_TRUE(b) << "no bucket for " << s;
  EXPECT_EQ(b->passed, 3u) << "untagged, VLAN and QinQ frames of " << s << " must all charge the same bucket";
  EXPECT_EQ(bucket_count(), 1) << "a tagged frame charged a bucket other than its source's";
}

TEST_F(XdpParse, TaggedFramesAreThrottledLikeUntagged) {
  // Burst 2: the VLAN-tagged third frame of the source must be dropped.
  set_policy(0.001, 2);
  const std::string s = "198.18.0.8";
  EXPECT_EQ(run(PacketBuilder().ipv4(s).udp().build()), XDP_PASS);
  EXPECT_EQ(run(PacketBuilder().vlan(5).ipv4(s).udp().build()), XDP_PASS);
  EXPECT_EQ(run(PacketBuilder().vlan(5, kTpid8021AD).vlan(6).ipv4(s).udp().build()), XDP_DROP)
      << "a QinQ frame escaped its source's empty bucket";
  auto b = bucket(s);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->passed, 2u);
  EXPECT_EQ(b->dropped, 1u);
}

}  // namespace
}  // namespace dt::test
