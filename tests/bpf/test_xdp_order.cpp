// test_xdp_order.cpp - the order of the checks before the rules, where bans (bpf/bans.bpf.h)
// and the allow and deny lists (bpf/lists.bpf.h) meet in dt_decide: the cluster's own
// traffic, then the allow list, then bans, then the deny list, then the rules
// (docs/lists.md "Order"). An allow-listed source passes even when banned, its ban counting
// nothing; a banned source on the deny list is dropped by the ban, and counted there alone.
#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <string>
#include <vector>

#include "frames/packet_builder.h"
#include "ban_fixture.h"
#include "prog_maps.h"
#include "dataplane/list_maps.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"
#include "rules/list_file.h"

namespace dt::test {
using namespace frames;
namespace {

std::vector<uint8_t> v4(const std::string &src) { return PacketBuilder().ipv4(src).udp().build(); }
std::vector<uint8_t> v6(const std::string &src) { return PacketBuilder().ipv6(src).udp().build(); }

class XdpCheckOrder : public BanMapsFixture {
 protected:
  uint64_t ban_dropped(const std::string &text) { return ban_of(text).dropped; }

  void lists(const std::string &allow, const std::string &deny) {
    ListPrefixes a, d;
    std::string err;
    ASSERT_TRUE(parse_list_text(allow, "allow.txt", &a, &err)) << err;
    ASSERT_TRUE(parse_list_text(deny, "deny.txt", &d, &err)) << err;
    ASSERT_EQ(publish_lists(ListMapFds{map_fd(DT_MAP_LISTS_V4), map_fd(DT_MAP_LISTS_V6)}, a, d, nullptr, nullptr, &err),
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

}  // namespace
}  // namespace dt::test
