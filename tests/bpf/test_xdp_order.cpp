// test_xdp_order.cpp - the order of the checks before the rules, where bans (bpf/bans.bpf.h)
// and the allow and deny lists (bpf/lists.bpf.h) meet in dt_decide: segments of the
// cluster's own connections, then the allow list, then bans, then the deny list, then a
// peer's SYN to our --listen port (bpf/exempt.bpf.h), then the rules (docs/lists.md
// "Order"). An allow-listed source passes even when banned, its ban counting nothing; a
// banned source on the deny list is dropped by the ban, and counted there alone.
#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <string>
#include <vector>

#include "ban_fixture.h"
#include "cluster/cluster_exempt.h"
#include "dataplane/list_maps.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"
#include "frames/packet_builder.h"
#include "loopback_conn.h"
#include "prog_maps.h"
#include "rules/list_file.h"

namespace dt::test {
using namespace frames;
namespace {

class XdpCheckOrder : public BanMapsFixture {
 protected:
  uint64_t ban_dropped(const std::string &text) { return ban_of(text).dropped; }

  void lists(const std::string &allow, const std::string &deny) {
    ListPrefixes a, d;
    std::string err;
    ASSERT_TRUE(parse_list_text(allow, "allow.txt", &a, &err)) << err;
    ASSERT_TRUE(parse_list_text(deny, "deny.txt", &d, &err)) << err;
    ASSERT_EQ(publish_lists(ListMapFds{map_fd(DT_MAP_LISTS_V4), map_fd(DT_MAP_LISTS_V6), map_fd(DT_MAP_FEATURES)}, a, d,
                            nullptr, nullptr, &err),
              0)
        << err;
  }

  dt_list_stats list_counters() { return summed_per_cpu<dt_list_stats>(map_fd(DT_MAP_LIST_STATS), 0); }
};

TEST_F(XdpCheckOrder, AllowListBeatsABan) {
  ASSERT_NO_FATAL_FAILURE(lists("198.18.1.0/24\n2001:2::/64\n", ""));
  ASSERT_NO_FATAL_FAILURE(ban("198.18.1.1"));
  ASSERT_NO_FATAL_FAILURE(ban("198.18.2.2"));
  ASSERT_NO_FATAL_FAILURE(ban("2001:2::7"));
  EXPECT_EQ(run(v4("198.18.1.1")), XDP_PASS) << "banned, but on the allow list: the allow list comes first";
  EXPECT_EQ(run(v6("2001:2::7")), XDP_PASS) << "the same in IPv6";
  EXPECT_EQ(run(v4("198.18.2.2")), XDP_DROP) << "banned and not on the allow list";
  EXPECT_EQ(ban_dropped("198.18.1.1"), 0u) << "the allow-listed source's ban must count nothing";
  EXPECT_EQ(ban_dropped("2001:2::7"), 0u);
  EXPECT_EQ(ban_dropped("198.18.2.2"), 1u);
  EXPECT_EQ(list_counters().allowed, 2u) << "both passes are the allow list's";
  EXPECT_EQ(stats().ban_dropped, 1u) << stats_to_string(stats());
}

TEST_F(XdpCheckOrder, BansComeBeforeTheDenyList) {
  ASSERT_NO_FATAL_FAILURE(lists("", "198.18.5.0/24\n"));
  ASSERT_NO_FATAL_FAILURE(ban("198.18.5.5"));
  EXPECT_EQ(run(v4("198.18.5.5")), XDP_DROP) << "banned and deny-listed";
  EXPECT_EQ(run(v4("198.18.5.6")), XDP_DROP) << "deny-listed only";
  EXPECT_EQ(run(v4("198.18.6.6")), XDP_PASS) << "neither";
  EXPECT_EQ(ban_dropped("198.18.5.5"), 1u) << "the ban decided the banned source";
  EXPECT_EQ(list_counters().denied, 1u) << "the deny list decided only the other one";
}

// A real connection of the cluster's (the peer's PUB, our SUB: loopback_conn.h) and our
// --listen port, exempt as the agent writes it.
class XdpExemptOrder : public InScratchNetns<XdpCheckOrder> {
 protected:
  void SetUp() override {
    InScratchNetns::SetUp();
    if (HasFatalFailure()) return;
    std::string err;
    pub_ = LoopbackConn::open(false, &err);
    ASSERT_TRUE(pub_) << err;
    const auto keys = cluster_exempt_keys({std::string("tcp://") + kLoopV4 + ":" + std::to_string(pub_->server_port())},
                                          {}, "tcp://*:7710", &err);
    install_cluster_exempt(cluster_exempt_fd(), cluster_ports_fd(), keys, &err);
    ASSERT_EQ(err, "");
    ASSERT_EQ(update_config_flags(config_fd(), DT_CFG_EXEMPT, 0), 0);
  }
  void TearDown() override {
    pub_.reset();
    InScratchNetns::TearDown();
  }
  std::vector<uint8_t> seg(uint16_t sport, uint16_t dport, uint8_t flags) {
    return PacketBuilder().ipv4(kLoopV4, kLoopV4).tcp(dport, flags).ports(sport, dport).build();
  }
  std::vector<uint8_t> conn_ack() { return seg(pub_->server_port(), pub_->client_port(), 0x10); }
  std::vector<uint8_t> syn_to_listen() { return seg(45000, 7710, 0x02); }
  uint64_t exempt() { return stats().exempt; }

  std::unique_ptr<LoopbackConn> pub_;
};

TEST_F(XdpExemptOrder, AClusterConnectionPassesBeforeABanAndTheDenyList) {
  // A flood spoofing a peer's address may earn it a ban: the cluster's links must hold.
  ASSERT_NO_FATAL_FAILURE(lists("", std::string(kLoopV4) + "/32\n"));
  ASSERT_NO_FATAL_FAILURE(ban(kLoopV4));
  EXPECT_EQ(run(conn_ack()), XDP_PASS) << "a segment of the cluster's connection, its peer banned";
  EXPECT_EQ(exempt(), 1u) << stats_to_string(stats());
  EXPECT_EQ(ban_dropped(kLoopV4), 0u) << "the ban counted the cluster's segment";
  EXPECT_EQ(run(seg(pub_->server_port(), 22, 0x10)), XDP_DROP) << "from the peer's report port to port 22: the ban";
  EXPECT_EQ(run(syn_to_listen()), XDP_DROP) << "a SYN to our --listen port is no connection yet: the ban";
  EXPECT_EQ(ban_dropped(kLoopV4), 2u);
  EXPECT_EQ(exempt(), 1u) << stats_to_string(stats());
}

TEST_F(XdpExemptOrder, ASynToOurListenPortComesAfterTheDenyList) {
  ASSERT_NO_FATAL_FAILURE(lists("", std::string(kLoopV4) + "/32\n"));
  EXPECT_EQ(run(syn_to_listen()), XDP_DROP) << "a deny-listed peer address's SYN to our --listen port";
  EXPECT_EQ(list_counters().denied, 1u);
  EXPECT_EQ(run(conn_ack()), XDP_PASS) << "the connection's segments still pass";
  EXPECT_EQ(exempt(), 1u) << stats_to_string(stats());
  ASSERT_NO_FATAL_FAILURE(lists("", ""));
  EXPECT_EQ(run(syn_to_listen()), XDP_PASS) << "off the deny list, the SYN passes";
  EXPECT_EQ(exempt(), 2u) << "exempt, without a bucket: " << stats_to_string(stats());
  EXPECT_FALSE(bucket(kLoopV4)) << "an exempt SYN made a bucket";
}

}  // namespace
}  // namespace dt::test
