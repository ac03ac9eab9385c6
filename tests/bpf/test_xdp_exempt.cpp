// test_xdp_exempt.cpp - the cluster's own traffic (map cluster_exempt, struct
// dt_exempt_key, bpf/exempt.bpf.h) passes without a bucket; nothing else from a peer's
// address does.
//
// The entries are those the agent makes (cluster_exempt_keys). An entry alone exempts
// nothing: a segment passes if it belongs to a connection this host has (the socket
// lookup finds it), or if it is a SYN to our --listen port. The crafted frames from a
// peer at 198.18.9.9 / 2001:2::9 (reporting on port 7700, we listen on 7710) have no
// socket: only their SYNs to 7710 pass. The real connections are made on the loopback
// of a network namespace of the test's own (loopback_conn.h), where BPF_PROG_TEST_RUN
// looks sockets up. The policy (burst 1, no refill to speak of) drops every packet after a source's
// first, so a packet that passes after that was exempt, and stats.exempt says so.
#include <bpf/bpf.h>
#include <linux/pkt_cls.h>

#include <string>
#include <vector>

#include "bpf_fixture.h"
#include "cluster/cluster_exempt.h"
#include "dataplane/policy.h"
#include "frames/packet_builder.h"
#include "loopback_conn.h"

namespace dt::test {
using namespace frames;  // PacketBuilder, Ipv6Ext
namespace {

constexpr uint16_t kPeerPort = 7700;    // the peer's --listen: its PUB
constexpr uint16_t kListenPort = 7710;  // ours: the peer's SUB connects to it
constexpr uint16_t kEphemeral = 45000;  // the other end of either connection
constexpr uint16_t kSsh = 22;           // a local service the cluster has nothing to do with
constexpr uint8_t kSyn = 0x02, kAck = 0x10, kRst = 0x04, kPshAck = 0x18, kSynAck = 0x12, kFinAck = 0x11;
constexpr int kPackets = 20;

class XdpExempt : public BpfFixture {
 protected:
  void SetUp() override {
    BpfFixture::SetUp();
    if (HasFatalFailure()) return;
    set_policy(0.001, 1);
    ASSERT_NO_FATAL_FAILURE(install({"tcp://198.18.9.9:7700", "tcp://[2001:2::9]:7700"}, "tcp://*:7710", 4));
    ASSERT_EQ(update_config_flags(config_fd(), DT_CFG_EXEMPT, 0), 0);
  }

  // As the agent writes them: the entries of `peers` and `listen`, then their ports'
  // bitmaps, replacing whatever the map held. `want`: how many entries that makes.
  void install(const std::vector<std::string> &peers, const std::string &listen, size_t want) {
    std::string err;
    const auto keys = cluster_exempt_keys(peers, {}, listen, &err);
    ASSERT_EQ(err, "");
    ASSERT_EQ(keys.size(), want) << "from each peer's port and to ours, for each address";
    before_ = install_cluster_exempt(cluster_exempt_fd(), cluster_ports_fd(), keys, &err);
    ASSERT_EQ(err, "");
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
    const bool had_bucket = bucket(src).has_value();
    const Outcome o = send(frame);
    EXPECT_EQ(o.passed, kPackets) << what << ": the cluster's traffic was throttled";
    EXPECT_EQ(o.exempt, static_cast<uint64_t>(kPackets)) << what << ": not counted as exempt";
    EXPECT_EQ(bucket(src).has_value(), had_bucket) << what << ": an exempt packet made a bucket";
  }
  // Throttled like any source: the first packet of `src` (IPv6: of its /64) takes the one
  // token, every later one is dropped.
  void expect_throttled(const std::vector<uint8_t> &frame, const std::string &src, const std::string &what) {
    const int want = bucket(src) ? 0 : 1;
    const Outcome o = send(frame);
    EXPECT_EQ(o.passed, want) << what << ": passed " << o.passed << " of " << kPackets << " at burst 1";
    EXPECT_EQ(o.exempt, 0u) << what << ": counted as exempt";
  }

  std::vector<dt_exempt_key> before_;  // what the last install found in the map
};

constexpr const char *kPeer4 = "198.18.9.9";
constexpr const char *kPeer6 = "2001:2::9";

PacketBuilder v4(const std::string &src = kPeer4) { return PacketBuilder().ipv4(src); }
PacketBuilder v6(const std::string &src = kPeer6) { return PacketBuilder().ipv6(src); }
// A TCP segment of the peer's (or of `src`) from sport to dport.
PacketBuilder seg4(uint16_t sport, uint16_t dport, uint8_t flags, const std::string &src = kPeer4) {
  return v4(src).tcp(dport, flags).ports(sport, dport);
}
PacketBuilder seg6(uint16_t sport, uint16_t dport, uint8_t flags, const std::string &src = kPeer6) {
  return v6(src).tcp(dport, flags).ports(sport, dport);
}

// A peer's SUB connecting to our PUB: its first SYN has no socket to find yet.
TEST_F(XdpExempt, ASynToOurListenPortPasses) {
  expect_exempt(seg4(kEphemeral, kListenPort, kSyn).build(), kPeer4, "a SYN to our --listen port");
  expect_exempt(seg6(kEphemeral, kListenPort, kSyn).build(), kPeer6, "IPv6: a SYN to our --listen port");
  expect_exempt(v4().ipv4_options(2).tcp(kListenPort, kSyn).ports(kEphemeral, kListenPort).build(), kPeer4,
                "IPv4 options, then a SYN");
  expect_exempt(v4().ipv4_frag_field(0x2000).tcp(kListenPort, kSyn).ports(kEphemeral, kListenPort).build(), kPeer4,
                "the first fragment of a SYN");
  EXPECT_EQ(bucket_count(), 0) << "no bucket for the cluster's traffic";
}

// The hole this closes: segments from a peer's address and report port to any local port
// passed unthrottled, ahead of bans and the deny list.
TEST_F(XdpExempt, SpoofedSegmentsFromTheReportPortAreThrottled) {
  for (const uint8_t flags : {kSyn, kAck, kRst, kPshAck, kSynAck}) {
    const std::string f = " (TCP flags " + std::to_string(flags) + ")";
    expect_throttled(seg4(kPeerPort, kSsh, flags).build(), kPeer4, "from the report port to port 22" + f);
    expect_throttled(seg6(kPeerPort, kSsh, flags).build(), kPeer6, "IPv6: from the report port to port 22" + f);
    expect_throttled(seg4(kPeerPort, kEphemeral, flags).build(), kPeer4,
                     "from the report port to a port without a connection" + f);
  }
  const auto b = bucket(kPeer4);
  ASSERT_TRUE(b) << "the flood's source has a bucket like any other";
  EXPECT_EQ(b->dropped, static_cast<uint64_t>(10 * kPackets - 1));
}

TEST_F(XdpExempt, SegmentsToOurListenPortOfNoConnectionAreThrottled) {
  for (const uint8_t flags : {kAck, kRst, kPshAck, kSynAck, kFinAck}) {
    const std::string f = " (TCP flags " + std::to_string(flags) + ")";
    expect_throttled(seg4(kEphemeral, kListenPort, flags).build(), kPeer4, "to our --listen port" + f);
    expect_throttled(seg6(kEphemeral, kListenPort, flags).build(), kPeer6, "IPv6: to our --listen port" + f);
  }
}

// The real flows: our SUB connected to the peer's PUB (segments from its report port to
// our ephemeral port) and its SUB connected to our PUB (to our --listen port), on the
// loopback where the test run looks sockets up. Only their four-tuples pass.
class XdpExemptReal : public InScratchNetns<XdpExempt> {
 protected:
  void TearDown() override {
    pub_.reset(), sub_.reset(), svc_.reset();
    InScratchNetns::TearDown();
  }

  // Connections standing for the peer's PUB with our SUB (pub_) and for our PUB (--listen)
  // with the peer's SUB (sub_), and another local service (svc_), in the family `v6`; the
  // exemption as the agent would write it for that peer.
  void connect(bool v6) {
    std::string err;
    pub_ = LoopbackConn::open(v6, &err);
    ASSERT_TRUE(pub_) << err;
    sub_ = LoopbackConn::open(v6, &err);
    ASSERT_TRUE(sub_) << err;
    // Another connection: its client's port must not be our SUB's (the kernel may give two
    // connections to different servers one source port), or it would be that connection.
    for (int i = 0; i < 8 && (!svc_ || svc_->client_port() == pub_->client_port()); i++) {
      svc_ = LoopbackConn::open(v6, &err);
      ASSERT_TRUE(svc_) << err;
    }
    ASSERT_NE(svc_->client_port(), pub_->client_port()) << "8 connections in a row from our SUB's port";
    addr_ = pub_->addr();
    const std::string host = v6 ? std::string("[") + kLoopV6 + "]" : kLoopV4;
    ASSERT_NO_FATAL_FAILURE(install({"tcp://" + host + ":" + std::to_string(pub_->server_port())},
                                    "tcp://*:" + std::to_string(sub_->server_port()), 2));
  }
  PacketBuilder seg(uint16_t sport, uint16_t dport, uint8_t flags) const {
    PacketBuilder b;
    if (addr_ == kLoopV6) b.ipv6(addr_, addr_);
    else b.ipv4(addr_, addr_);
    return std::move(b.tcp(dport, flags).ports(sport, dport));
  }
  void expect_only_real_flows_pass() {
    const uint16_t report = pub_->server_port(), ours = pub_->client_port();
    const uint16_t listen = sub_->server_port(), theirs = sub_->client_port();
    for (const uint8_t flags : {kAck, kPshAck, kFinAck, kRst}) {
      const std::string f = " (TCP flags " + std::to_string(flags) + ")";
      expect_exempt(seg(report, ours, flags).build(), addr_, "the peer's PUB to our SUB" + f);
      expect_exempt(seg(theirs, listen, flags).build(), addr_, "the peer's SUB to our PUB" + f);
    }
    expect_exempt(seg(kEphemeral, listen, kSyn).build(), addr_, "a SYN to our --listen port");
    EXPECT_FALSE(bucket(addr_)) << "no bucket for the cluster's traffic";
    for (const uint8_t flags : {kSyn, kAck, kRst, kPshAck}) {
      const std::string f = " (TCP flags " + std::to_string(flags) + ")";
      expect_throttled(seg(report, kSsh, flags).build(), addr_, "from the report port to port 22" + f);
      expect_throttled(seg(report, svc_->server_port(), flags).build(), addr_,
                       "from the report port to another local service (a listener)" + f);
      expect_throttled(seg(report, svc_->client_port(), flags).build(), addr_,
                       "from the report port to another connection's port" + f);
      expect_throttled(seg(report, listen, flags == kSyn ? kAck : flags).build(), addr_,
                       "from the report port to our --listen port, no connection" + f);
    }
    expect_throttled(seg(report, ours, kSyn).build(), addr_, "a SYN from the report port to our SUB's port");
    expect_throttled(seg(kEphemeral, listen, kAck).build(), addr_, "an ACK to our --listen port of no connection");
    expect_throttled(seg(listen, theirs, kAck).build(), addr_, "from our --listen port (the wrong side)");
  }

  std::unique_ptr<LoopbackConn> pub_, sub_, svc_;
  std::string addr_;
};

TEST_F(XdpExemptReal, OnlyTheClustersConnectionsPassIPv4) {
  ASSERT_NO_FATAL_FAILURE(connect(false));
  expect_only_real_flows_pass();
}

TEST_F(XdpExemptReal, OnlyTheClustersConnectionsPassIPv6) {
  ASSERT_NO_FATAL_FAILURE(connect(true));
  expect_only_real_flows_pass();
}

TEST_F(XdpExemptReal, AClosedConnectionNoLongerPasses) {
  ASSERT_NO_FATAL_FAILURE(connect(false));
  const uint16_t report = pub_->server_port(), ours = pub_->client_port();
  expect_exempt(seg(report, ours, kAck).build(), addr_, "the peer's PUB to our SUB");
  // The accepted end closes first and keeps the TIME_WAIT; our SUB's socket is gone.
  pub_.reset();
  expect_throttled(seg(report, ours, kAck).build(), addr_, "the peer's PUB to our SUB, the connection closed");
}

TEST_F(XdpExemptReal, TheTcHookLooksTheSameSocketsUp) {
  ASSERT_NO_FATAL_FAILURE(connect(false));
  const uint16_t report = pub_->server_port(), ours = pub_->client_port();
  const uint64_t exempt = stats().exempt;
  for (int i = 0; i < 3; i++)
    EXPECT_EQ(run_tc(seg(report, ours, kPshAck).build()), TC_ACT_UNSPEC) << "the peer's PUB to our SUB, at tc";
  EXPECT_EQ(stats().exempt - exempt, 3u) << "counted as exempt at tc";
  EXPECT_EQ(run_tc(seg(report, kSsh, kAck).build()), TC_ACT_UNSPEC) << "the source's one token";
  EXPECT_EQ(run_tc(seg(report, kSsh, kAck).build()), TC_ACT_SHOT) << "from the report port to port 22, at tc";
  EXPECT_EQ(stats().exempt - exempt, 3u) << "a spoofed segment counted as exempt at tc";
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
  expect_throttled(seg4(kEphemeral, 80, kSyn).build(), kPeer4, "TCP from the peer to port 80");
  expect_throttled(seg6(kEphemeral, 80, kSyn).build(), kPeer6, "IPv6 TCP from the peer to port 80");
  expect_throttled(v4().build(), kPeer4, "IPv4, another protocol");
}

TEST_F(XdpExempt, TheSideOfThePortMatters) {
  // The report port is exempt as a source port only, ours as a destination only.
  expect_throttled(seg4(kEphemeral, kPeerPort, kSyn).build(), kPeer4, "a SYN to the peer's report port");
  expect_throttled(seg6(kListenPort, kEphemeral, kSyn).build(), kPeer6, "a SYN from our --listen port");
}

TEST_F(XdpExempt, FragmentsAreNotExempt) {
  // A later fragment carries no ports (its first bytes are payload that may look like
  // them); an IPv6 fragment header hides the TCP header behind it.
  expect_throttled(v4().ipv4_frag_field(100).tcp(kListenPort, kSyn).ports(kEphemeral, kListenPort).build(), kPeer4,
                   "IPv4 later fragment looking like a SYN to our --listen port");
  expect_throttled(v6().ipv6_ext(Ipv6Ext::FragLater).tcp(kListenPort, kSyn).ports(kEphemeral, kListenPort).build(),
                   kPeer6, "IPv6 later fragment looking like a SYN to our --listen port");
  expect_throttled(
      v6("2001:2:0:1::9").ipv6_ext(Ipv6Ext::FragFirst).tcp(kListenPort, kSyn).ports(kEphemeral, kListenPort).build(),
      "2001:2:0:1::9", "IPv6 first fragment (behind a fragment header), another /64");
}

TEST_F(XdpExempt, OtherAddressesOnTheClusterPortsAreThrottled) {
  expect_throttled(seg4(kEphemeral, kListenPort, kSyn, "198.18.9.10").build(), "198.18.9.10",
                   "a SYN to our port from another address");
  expect_throttled(seg6(kEphemeral, kListenPort, kSyn, "2001:2:0:1::9").build(), "2001:2:0:1::9",
                   "IPv6: a SYN to our port from another address");
}

TEST_F(XdpExempt, TheMapIsOnlyConsultedWithTheFlag) {
  // As the agent switches it: Collector::enable(true) at start, disable() at exit.
  ASSERT_EQ(update_config_flags(config_fd(), 0, DT_CFG_EXEMPT), 0);
  auto c = new_collector();
  ASSERT_EQ(c->enable(true), 0);
  expect_exempt(seg4(kEphemeral, kListenPort, kSyn).build(), kPeer4, "a SYN to our port, exemption on");
  c->disable();
  expect_throttled(seg4(kEphemeral, kListenPort, kSyn).build(), kPeer4, "a SYN to our port, exemption off");
}

TEST_F(XdpExempt, OnlyPortsWithTheirBitAreLookedUp) {
  // The bitmaps gate the lookups: an entry whose port bit is clear is never consulted.
  const dt_cluster_ports none{};
  const uint32_t zero = 0;
  ASSERT_EQ(bpf_map_update_elem(cluster_ports_fd(), &zero, &none, BPF_ANY), 0);
  expect_throttled(seg4(kEphemeral, kListenPort, kSyn).build(), kPeer4, "a SYN to our port, its bit clear");
}

TEST_F(XdpExempt, AReplacedSetLeavesNoOldEntry) {
  // A previous agent's entries (a take-over) or a reload's: install_cluster_exempt keeps
  // exactly the new set, whatever the map held, and says what that was.
  ASSERT_NO_FATAL_FAILURE(install({"tcp://198.18.9.20:7800"}, "tcp://*:7810", 2));
  EXPECT_EQ(before_.size(), 4u) << "the set of SetUp, read back from the map";
  expect_exempt(seg4(kEphemeral, 7810, kSyn, "198.18.9.20").build(), "198.18.9.20", "a SYN from the new peer");
  expect_throttled(seg4(kEphemeral, 7810, kSyn).build(), kPeer4, "a SYN from the removed peer");
  expect_throttled(seg6(kEphemeral, kListenPort, kSyn).build(), kPeer6, "a SYN to the port we no longer listen on");
}

TEST_F(XdpExempt, ATcpHeaderCutBeforeItsFlagsIsNotExempt) {
  PacketBuilder b = seg4(kEphemeral, kListenPort, kSyn);
  b.truncate(b.l3_offset() + kIPv4HdrLen + 13);
  expect_throttled(b.build(), kPeer4, "13 bytes of TCP header");
}

}  // namespace
}  // namespace dt::test
