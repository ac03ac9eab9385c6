// test_xdp_exempt.cpp - the cluster's own traffic (map cluster_exempt, struct
// dt_exempt_key) passes without a bucket; nothing else from a peer's address does.
//
// The entries are those the agent makes (cluster_exempt_keys) for one peer at
// 198.18.9.9 / 2001:2::9 reporting on port 7700 while we listen on 7710: TCP from
// (peer, sport 7700) and TCP to (peer, dport 7710). The policy (burst 1, no refill to
// speak of) drops every packet after a source's first, so a packet that passes after
// that was exempt, and stats.exempt says so.
#include <bpf/bpf.h>

#include <string>
#include <vector>

#include "frames/packet_builder.h"
#include "bpf_fixture.h"
#include "cluster/cluster_exempt.h"
#include "dataplane/policy.h"

namespace dt::test {
using namespace frames;  // PacketBuilder, Ipv6Ext
namespace {

constexpr uint16_t kPeerPort = 7700;    // the peer's --listen: its PUB
constexpr uint16_t kListenPort = 7710;  // ours: the peer's SUB connects to it
constexpr uint16_t kEphemeral = 45000;  // the other end of either connection
constexpr int kPackets = 20;

class XdpExempt : public BpfFixture {
 protected:
  void SetUp() override {
    BpfFixture::SetUp();
    if (HasFatalFailure()) return;
    set_policy(0.001, 1);
    std::string err;
    const auto keys = cluster_exempt_keys({"tcp://198.18.9.9:7700", "tcp://[2001:2::9]:7700"}, {},
                                          "tcp://*:7710", &err);
    ASSERT_EQ(err, "");
    ASSERT_EQ(keys.size(), 4u) << "from the peer's port and to ours, for each address";
    // As the agent writes them: the entries, then their ports' bitmaps.
    const auto before = install_cluster_exempt(cluster_exempt_fd(), cluster_ports_fd(), keys, &err);
    ASSERT_EQ(err, "");
    ASSERT_TRUE(before.empty());
    ASSERT_EQ(update_config_flags(config_fd(), DT_CFG_EXEMPT, 0), 0);
  }

  // Sends `frame` kPackets times: how many passed, and how many of them stats.exempt counted.
  struct Outcome {
    int passed = 0;
    uint64_t exempt = 0;
  };
  Outcome send(const std::vector<uint8_t> &frame) {
    Outcome o;
    const uint64_t before = stats().exempt;
    for (int i = 0; i < kPackets; i++) o.passed += run(frame) == XDP_PASS;
    o.exempt = stats().exempt - before;
    return o;
  }
  void expect_exempt(const std::vector<uint8_t> &frame, const std::string &src, const std::string &what) {
    const Outcome o = send(frame);
    EXPECT_EQ(o.passed, kPackets) << what << ": the cluster's traffic was throttled";
    EXPECT_EQ(o.exempt, static_cast<uint64_t>(kPackets)) << what << ": not counted as exempt";
    EXPECT_FALSE(bucket(src)) << what << ": an exempt packet made a bucket";
  }
  // Throttled like any source: the first packet of `src` (IPv6: of its /64) takes the one
  // token, every later one is dropped.
  void expect_throttled(const std::vector<uint8_t> &frame, const std::string &src, const std::string &what) {
    const int want = bucket(src) ? 0 : 1;
    const Outcome o = send(frame);
    EXPECT_EQ(o.passed, want) << what << ": passed " << o.passed << " of " << kPackets << " at burst 1";
    EXPECT_EQ(o.exempt, 0u) << what << ": counted as exempt";
  }
};

constexpr const char *kPeer4 = "198.18.9.9";
constexpr const char *kPeer6 = "2001:2::9";

PacketBuilder v4(const std::string &src = kPeer4) { return PacketBuilder().ipv4(src); }
PacketBuilder v6(const std::string &src = kPeer6) { return PacketBuilder().ipv6(src); }

TEST_F(XdpExempt, PeersReportsAndSubscriptionsPassIPv4) {
  expect_exempt(v4().tcp(kEphemeral, 0x10).ports(kPeerPort, kEphemeral).build(), kPeer4, "TCP from the peer's report port");
  expect_exempt(v4().tcp(kListenPort, 0x10).ports(kEphemeral, kListenPort).build(), kPeer4, "TCP to our --listen port");
  expect_exempt(v4().tcp(0x02, 0x10).ports(kEphemeral, 0x02).ports(kPeerPort, kEphemeral).build(), kPeer4, "a SYN from the report port");
  expect_exempt(v4().ipv4_options(2).tcp(kListenPort, 0x10).ports(kEphemeral, kListenPort).build(), kPeer4, "IPv4 options, then TCP");
  expect_exempt(v4().ipv4_frag_field(0x2000).tcp(kEphemeral, 0x10).ports(kPeerPort, kEphemeral).build(), kPeer4,
                "the first fragment of a segment from the report port");
  EXPECT_EQ(bucket_count(), 0) << "no bucket for the cluster's traffic";
}

TEST_F(XdpExempt, PeersReportsAndSubscriptionsPassIPv6) {
  expect_exempt(v6().tcp(kEphemeral, 0x10).ports(kPeerPort, kEphemeral).build(), kPeer6, "TCP from the peer's report port");
  expect_exempt(v6().tcp(kListenPort, 0x10).ports(kEphemeral, kListenPort).build(), kPeer6, "TCP to our --listen port");
  EXPECT_EQ(bucket_count(), 0) << "no bucket for the cluster's traffic";
}

TEST_F(XdpExempt, UdpFromAPeersAddressIsThrottled) {
  // Even between the cluster's ports: only TCP is the cluster's.
  expect_throttled(v4().udp().ports(kPeerPort, kListenPort).build(), kPeer4, "IPv4 UDP from the report port");
  expect_throttled(v6().udp().ports(kPeerPort, kListenPort).build(), kPeer6, "IPv6 UDP from the report port");
  const auto b = bucket(kPeer4);
  ASSERT_TRUE(b) << "the flood's source has a bucket like any other";
  EXPECT_EQ(b->dropped, static_cast<uint64_t>(kPackets - 1));
}

TEST_F(XdpExempt, OtherTrafficFromAPeersAddressIsThrottled) {
  expect_throttled(v4().tcp(80, 0x10).ports(kEphemeral, 80).build(), kPeer4, "TCP from the peer to port 80");
  expect_throttled(v6().tcp(80, 0x10).ports(kEphemeral, 80).build(), kPeer6, "IPv6 TCP from the peer to port 80");
  expect_throttled(v4().build(), kPeer4, "IPv4, another protocol");
}

TEST_F(XdpExempt, TheSideOfThePortMatters) {
  // The report port is exempt as a source port only, ours as a destination only.
  expect_throttled(v4().tcp(kPeerPort, 0x10).ports(kEphemeral, kPeerPort).build(), kPeer4, "TCP to the peer's report port");
  expect_throttled(v6().tcp(kEphemeral, 0x10).ports(kListenPort, kEphemeral).build(), kPeer6, "TCP from our --listen port");
}

TEST_F(XdpExempt, FragmentsAreNotExempt) {
  // A later fragment carries no ports (its first bytes are payload that may look like
  // them); an IPv6 fragment header hides the TCP header behind it.
  expect_throttled(v4().ipv4_frag_field(100).tcp(kEphemeral, 0x10).ports(kPeerPort, kEphemeral).build(), kPeer4,
                   "IPv4 later fragment looking like TCP from the report port");
  expect_throttled(v6().ipv6_ext(Ipv6Ext::FragLater).tcp(kEphemeral, 0x10).ports(kPeerPort, kEphemeral).build(), kPeer6,
                   "IPv6 later fragment looking like TCP from the report port");
  expect_throttled(v6("2001:2:0:1::9").ipv6_ext(Ipv6Ext::FragFirst).tcp(kEphemeral, 0x10).ports(kPeerPort, kEphemeral).build(), "2001:2:0:1::9",
                   "IPv6 first fragment (behind a fragment header), another /64");
}

TEST_F(XdpExempt, OtherAddressesOnTheClusterPortsAreThrottled) {
  expect_throttled(v4("198.18.9.10").tcp(kEphemeral, 0x10).ports(kPeerPort, kEphemeral).build(), "198.18.9.10",
                   "TCP from another address's port 7700");
  expect_throttled(v6("2001:2:0:1::9").tcp(kListenPort, 0x10).ports(kEphemeral, kListenPort).build(), "2001:2:0:1::9",
                   "IPv6 TCP to our port from another address");
}

TEST_F(XdpExempt, TheMapIsOnlyConsultedWithTheFlag) {
  // As the agent switches it: Collector::enable(true) at start, disable() at exit.
  ASSERT_EQ(update_config_flags(config_fd(), 0, DT_CFG_EXEMPT), 0);
  auto c = new_collector();
  ASSERT_EQ(c->enable(true), 0);
  expect_exempt(v4().tcp(kEphemeral, 0x10).ports(kPeerPort, kEphemeral).build(), kPeer4, "TCP from the report port, exemption on");
  c->disable();
  expect_throttled(v4().tcp(kEphemeral, 0x10).ports(kPeerPort, kEphemeral).build(), kPeer4, "TCP from the report port, exemption off");
}

TEST_F(XdpExempt, OnlyPortsWithTheirBitAreLookedUp) {
  // The bitmaps gate the lookups: an entry whose port bit is clear is never consulted.
  const dt_cluster_ports none{};
  const uint32_t zero = 0;
  ASSERT_EQ(bpf_map_update_elem(cluster_ports_fd(), &zero, &none, BPF_ANY), 0);
  expect_throttled(v4().tcp(kEphemeral, 0x10).ports(kPeerPort, kEphemeral).build(), kPeer4, "TCP from the report port, its bit clear");
}

TEST_F(XdpExempt, AReplacedSetLeavesNoOldEntry) {
  // A previous agent's entries (a take-over) or a reload's: install_cluster_exempt keeps
  // exactly the new set, whatever the map held, and says what that was.
  std::string err;
  const auto keys = cluster_exempt_keys({"tcp://198.18.9.20:7800"}, {}, "", &err);
  const auto before = install_cluster_exempt(cluster_exempt_fd(), cluster_ports_fd(), keys, &err);
  ASSERT_EQ(err, "");
  EXPECT_EQ(before.size(), 4u) << "the set of SetUp, read back from the map";
  expect_exempt(v4("198.18.9.20").tcp(kEphemeral, 0x10).ports(7800, kEphemeral).build(), "198.18.9.20", "TCP from the new peer's port");
  expect_throttled(v4().tcp(kEphemeral, 0x10).ports(kPeerPort, kEphemeral).build(), kPeer4, "TCP from the removed peer's port");
  expect_throttled(v6().tcp(kListenPort, 0x10).ports(kEphemeral, kListenPort).build(), kPeer6, "TCP to the port we no longer listen on");
}

TEST_F(XdpExempt, ATcpHeaderCutBeforeItsPortsIsNotExempt) {
  PacketBuilder b = v4().tcp(kEphemeral, 0x10).ports(kPeerPort, kEphemeral);
  b.truncate(b.l3_offset() + kIPv4HdrLen + 3);
  expect_throttled(b.build(), kPeer4, "3 bytes of TCP header");
}

}  // namespace
}  // namespace dt::test
