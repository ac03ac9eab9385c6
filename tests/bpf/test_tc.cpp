// test_tc.cpp - the tc entry point (dt_tc, --attach tc) on crafted skbs: the same
// decisions as the XDP program, in tc's verdict codes (TC_ACT_SHOT to drop, TC_ACT_UNSPEC
// to pass the packet on to whatever tc program or filter follows), from the same buckets; a byte
// rule charges skb->len (the frame as XDP sees it); a GRO-merged skb costs a packet
// rule its segments.
//
// Rates of 1/s keep refill out of the counts (a test lasts milliseconds).
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include <string>
#include <vector>

#include "bpf_fixture.h"
#include "frames/packet_builder.h"

namespace dt::test {
using namespace frames;  // PacketBuilder, the header lengths and TPIDs
namespace {

std::string tc_verdict(int v) {
  switch (v) {
    case TC_ACT_UNSPEC: return "TC_ACT_UNSPEC";
    case TC_ACT_OK: return "TC_ACT_OK";
    case TC_ACT_SHOT: return "TC_ACT_SHOT";
  }
  return "tc verdict " + std::to_string(v);
}

// The XDP verdict a tc verdict stands for (-1: none).
int as_xdp(int tc) { return tc == TC_ACT_UNSPEC ? XDP_PASS : tc == TC_ACT_SHOT ? XDP_DROP : -1; }

// A pass: not TC_ACT_OK, which would end classification before the next program.
constexpr int kPass = TC_ACT_UNSPEC;

class TcProgram : public BpfFixture {};

TEST_F(TcProgram, SameVerdictsAsXdpForPassAndDrop) {
  ASSERT_NO_FATAL_FAILURE(set_policy(1, 3));
  // Two sources, one through each program: the same sequence of verdicts.
  const auto via_xdp = PacketBuilder().ipv4("198.18.0.1").udp().build();
  const auto via_tc = PacketBuilder().ipv4("198.18.0.2").udp().build();
  for (int i = 0; i < 6; i++) {
    const int x = run(via_xdp);
    const int t = run_tc(via_tc);
    EXPECT_EQ(as_xdp(t), x) << "packet " << i + 1 << ": XDP said " << verdict_name(x) << ", tc said " << tc_verdict(t);
    EXPECT_EQ(t, i < 3 ? kPass : TC_ACT_SHOT) << "packet " << i + 1 << " of a burst of 3";
  }
  auto b = bucket("198.18.0.2");
  ASSERT_TRUE(b.has_value()) << "the tc program made no bucket";
  EXPECT_EQ(b->passed, 3u);
  EXPECT_EQ(b->dropped, 3u);
  const dt_stats st = stats();
  EXPECT_EQ(st.passed, 6u) << stats_to_string(st);
  EXPECT_EQ(st.dropped, 6u) << stats_to_string(st);
}

TEST_F(TcProgram, SharesBucketsWithXdp) {
  // One source through both hooks (an agent switching --attach): one budget.
  ASSERT_NO_FATAL_FAILURE(set_policy(1, 4));
  const auto f = PacketBuilder().ipv6("2001:2::1").udp().build();
  EXPECT_EQ(run(f), XDP_PASS);
  EXPECT_EQ(run_tc(f), kPass);
  EXPECT_EQ(run(f), XDP_PASS);
  EXPECT_EQ(run_tc(f), kPass);
  EXPECT_EQ(run_tc(f), TC_ACT_SHOT) << "the fifth packet of a burst of 4, whichever hook saw the others";
  EXPECT_EQ(run(f), XDP_DROP);
}

TEST_F(TcProgram, ByteRuleChargesTheFrameLength) {
  ASSERT_NO_FATAL_FAILURE(set_byte_policy(1, 2500));
  const auto f = PacketBuilder().ipv4("198.18.0.3").udp(1000 - 42).build();
  ASSERT_EQ(f.size(), 1000u);
  EXPECT_EQ(run_tc(f), kPass);
  EXPECT_EQ(run_tc(f), kPass);
  EXPECT_EQ(run_tc(f), TC_ACT_SHOT) << "2,500 B of burst hold two 1000-byte frames, not three";
  auto b = bucket("198.18.0.3");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->passed, 2000u) << "a byte bucket counts the frame length, Ethernet header included";
  EXPECT_EQ(b->dropped, 1000u);
  const auto small = PacketBuilder().ipv4("198.18.0.3").udp(400 - 42).build();
  EXPECT_EQ(run_tc(small), kPass) << "400 of the 500 bytes left";
}

TEST_F(TcProgram, GroMergedSkbCostsItsSegments) {
  ASSERT_NO_FATAL_FAILURE(set_policy(1, 5));
  const auto f = PacketBuilder().ipv4("198.18.0.4").udp().build();
  EXPECT_EQ(run_tc(f, 4), kPass) << "4 segments of a burst of 5";
  EXPECT_EQ(run_tc(f, 4), TC_ACT_SHOT) << "4 segments, 1 token left: all or nothing";
  EXPECT_EQ(run_tc(f, 1), kPass) << "the last token";
  auto b = bucket("198.18.0.4");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->passed, 5u);
  EXPECT_EQ(b->dropped, 4u);
}

TEST_F(TcProgram, FailsOpenLikeXdp) {
  // No policy yet: everything passes, counted; non-IP passes, counted.
  const auto ip = PacketBuilder().ipv4("198.18.0.5").udp().build();
  const auto arp = PacketBuilder().arp().build();
  EXPECT_EQ(run_tc(ip), kPass);
  EXPECT_EQ(run_tc(arp), kPass);
  const dt_stats st = stats();
  EXPECT_EQ(st.fail_open, 1u) << stats_to_string(st);
  EXPECT_EQ(st.non_ip, 1u) << stats_to_string(st);
  // A malformed IPv4 header (version 6) passes as a parse error, as at XDP.
  ASSERT_NO_FATAL_FAILURE(set_policy(1, 1));
  const auto bad = PacketBuilder().ipv4("198.18.0.6").ip_version_field(6).udp().build();
  EXPECT_EQ(run_tc(bad), kPass);
  EXPECT_EQ(run_tc(bad), kPass) << "no bucket charged: a burst of 1 would drop the second";
  EXPECT_EQ(stats().parse_errors, 2u);
}

}  // namespace
}  // namespace dt::test
