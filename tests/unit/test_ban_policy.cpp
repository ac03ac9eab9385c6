// test_ban_policy.cpp - what a host takes of bans it did not set (bans/ban_policy.h,
// bans/never_ban.h): the minimum prefix, which peers may ban, credible notice times, the
// per-peer rate of new bans, and the never-ban set (peers, hubs, allow list).
#include <gtest/gtest.h>

#include <cstring>

#include "bans/ban_policy.h"
#include "bans/never_ban.h"
#include "common/address.h"

namespace dt {
namespace {

BanPrefix prefix(const std::string &text) {
  BanPrefix p;
  std::string err;
  EXPECT_TRUE(parse_ban_prefix(text, &p, &err)) << err;
  return p;
}

TEST(BanPolicy, MinPrefixRefusesWideBans) {
  BanMinPrefix min;  // defaults 16,48
  EXPECT_TRUE(ban_too_wide(prefix("0.0.0.0/1"), min)) << "a member's /1 blacks out half of IPv4";
  EXPECT_TRUE(ban_too_wide(prefix("128.0.0.0/1"), min));
  EXPECT_TRUE(ban_too_wide(prefix("198.18.0.0/15"), min));
  EXPECT_FALSE(ban_too_wide(prefix("198.18.0.0/16"), min));
  EXPECT_FALSE(ban_too_wide(prefix("198.18.0.7"), min));
  EXPECT_TRUE(ban_too_wide(prefix("2001::/16"), min));
  EXPECT_TRUE(ban_too_wide(prefix("2001:2::/47"), min));
  EXPECT_FALSE(ban_too_wide(prefix("2001:2::/48"), min));
  std::string err;
  ASSERT_TRUE(parse_ban_min_prefix("24,64", &min, &err)) << err;
  EXPECT_TRUE(ban_too_wide(prefix("198.18.0.0/23"), min));
  EXPECT_TRUE(ban_too_wide(prefix("2001:2::/63"), min));
  EXPECT_EQ(ban_min_prefix_text(min), "24,64");
  for (const char *bad : {"", "16", "0,48", "33,48", "16,0", "16,129", "16,48,1", "a,b"})
    EXPECT_FALSE(parse_ban_min_prefix(bad, &min, &err)) << "'" << bad << "' was taken";
  EXPECT_EQ(ban_min_prefix_text(min), "24,64") << "a refused value changed the setting";
}

TEST(BanPolicy, WhichPeersMayBan) {
  PeerBanPolicy p;
  EXPECT_TRUE(p.allows_peer("h1")) << "default: every member";
  std::string err;
  ASSERT_TRUE(parse_peer_bans("none", &p, &err)) << err;
  EXPECT_FALSE(p.allows_peer("h1"));
  ASSERT_TRUE(parse_peer_bans("h1,bouncer-2", &p, &err)) << err;
  EXPECT_TRUE(p.allows_peer("h1"));
  EXPECT_TRUE(p.allows_peer("bouncer-2"));
  EXPECT_FALSE(p.allows_peer("h2"));
  EXPECT_FALSE(p.allows_peer("h"));
  ASSERT_TRUE(parse_peer_bans("all", &p, &err)) << err;
  EXPECT_TRUE(p.allows_peer("h2"));
  for (const char *bad : {"", "h1,", ",h1", "h1,,h2", "h/1", "h1 h2"})
    EXPECT_FALSE(parse_peer_bans(bad, &p, &err)) << "'" << bad << "' was taken";
}

TEST(BanPolicy, NoticeTimesAreBoundedByThePeersClock) {
  const uint64_t now = 1'800'000'000'000ull;  // the peer's clock, unix ms
  EXPECT_EQ(check_notice_time(now, now), NoticeTime::Ok);
  EXPECT_EQ(check_notice_time(now + kBanClockSlackMs, now), NoticeTime::Ok);
  EXPECT_EQ(check_notice_time(now + kBanClockSlackMs + 1, now), NoticeTime::Future);
  EXPECT_EQ(check_notice_time(UINT64_MAX / 2, now), NoticeTime::Future) << "a lift for ever";
  EXPECT_EQ(check_notice_time(now - kMaxBanNs / 1'000'000, now), NoticeTime::Ok);
  EXPECT_EQ(check_notice_time(now - kMaxBanNs / 1'000'000 - 1, now), NoticeTime::Past);
  EXPECT_EQ(check_notice_time(0, now), NoticeTime::Past);
}

TEST(BanPolicy, RateOfNewBansPerPeer) {
  PeerBanRate rate;
  const uint64_t t0 = 5'000'000'000ull;
  int taken = 0;
  for (int i = 0; i < 100; i++) taken += rate.take("h1", 5, t0);
  EXPECT_EQ(taken, 5 * static_cast<int>(kBanRateBurstSeconds)) << "a burst of 10 s worth, then nothing";
  EXPECT_TRUE(rate.take("h2", 5, t0)) << "another peer has its own bucket";
  EXPECT_FALSE(rate.take("h1", 5, t0 + 100'000'000)) << "0.5 tokens after 0.1 s";
  EXPECT_TRUE(rate.take("h1", 5, t0 + 200'000'000)) << "one token after 0.2 s at 5/s";
  EXPECT_FALSE(rate.take("h1", 5, t0 + 200'000'000));
}

TEST(BanPolicy, RateForgetsIdlePeersToStayBounded) {
  PeerBanRate rate;
  for (size_t i = 0; i < kMaxBanRatePeers; i++) ASSERT_TRUE(rate.take("p" + std::to_string(i), 1, 0));
  EXPECT_FALSE(rate.take("late", 1, 500'000'000)) << "no room: every tracked peer's bucket is still short";
  EXPECT_TRUE(rate.take("late", 1, 1'000'000'000)) << "full buckets are forgotten to make room";
}

dt_exempt_key exempt(const std::string &addr) {
  dt_exempt_key k{};
  dt_key key{};
  EXPECT_TRUE(key_from_string(addr, &key));
  memcpy(k.addr, key.addr, 16);
  k.port = 7700;
  k.side = DT_EXEMPT_FROM_PORT;
  return k;
}

TEST(NeverBan, PeersAndHubsAreNeverCovered) {
  NeverBan nb;
  nb.set_cluster({exempt("198.18.0.2"), exempt("198.18.0.2"), exempt("2001:2::3"), exempt("0.0.0.0")});
  EXPECT_EQ(nb.cluster_size(), 2u) << "duplicates merged, a wildcard address is none";
  std::string what;
  EXPECT_TRUE(nb.overlaps(prefix("128.0.0.0/1"), &what));
  EXPECT_EQ(what, "peer or hub 198.18.0.2");
  EXPECT_FALSE(nb.overlaps(prefix("0.0.0.0/1"), &what)) << "198.18.0.2 is in the other half";
  EXPECT_TRUE(nb.overlaps(prefix("198.18.0.0/24"), &what));
  EXPECT_TRUE(nb.overlaps(prefix("198.18.0.2"), &what));
  EXPECT_FALSE(nb.overlaps(prefix("198.18.0.3"), &what));
  EXPECT_FALSE(nb.overlaps(prefix("198.18.1.0/24"), &what));
  EXPECT_FALSE(nb.overlaps(prefix("0.0.0.0/8"), &what)) << "0.0.0.0 was a wildcard, not a peer";
  EXPECT_TRUE(nb.overlaps(prefix("2001:2::/48"), &what));
  EXPECT_EQ(what, "peer or hub 2001:2::3");
  EXPECT_FALSE(nb.overlaps(prefix("2001:3::/48"), &what));
}

TEST(NeverBan, AllowListOverlapsEitherWay) {
  auto allow = std::make_shared<ListPrefixes>();
  allow->v4 = {{24, {198, 18, 7, 0}}, {32, {198, 18, 9, 9}}};
  dt_list_v6_key k6{};
  k6.prefixlen = 64;
  k6.addr[0] = 0x20, k6.addr[1] = 0x01, k6.addr[3] = 0x02, k6.addr[7] = 0x07;
  allow->v6 = {k6};
  NeverBan nb;
  nb.set_allow(allow);
  std::string what;
  EXPECT_TRUE(nb.overlaps(prefix("198.18.0.0/16"), &what)) << "covers allowed prefixes";
  EXPECT_EQ(what, "allow list 198.18.7.0/24");
  EXPECT_TRUE(nb.overlaps(prefix("198.18.7.5"), &what)) << "lies within an allowed prefix";
  EXPECT_EQ(what, "allow list 198.18.7.0/24");
  EXPECT_TRUE(nb.overlaps(prefix("198.18.9.0/24"), &what));
  EXPECT_EQ(what, "allow list 198.18.9.9");
  EXPECT_FALSE(nb.overlaps(prefix("198.18.8.0/24"), &what));
  EXPECT_FALSE(nb.overlaps(prefix("198.18.6.255"), &what));
  EXPECT_TRUE(nb.overlaps(prefix("2001:2:0:7::1"), &what));
  EXPECT_EQ(what, "allow list 2001:2:0:7::/64");
  EXPECT_TRUE(nb.overlaps(prefix("2001:2::/48"), &what));
  EXPECT_FALSE(nb.overlaps(prefix("2001:2:0:8::/64"), &what));
  allow = std::make_shared<ListPrefixes>();
  allow->v4 = {{0, {0, 0, 0, 0}}};
  nb.set_allow(allow);
  EXPECT_TRUE(nb.overlaps(prefix("203.0.113.0/24"), &what)) << "an allow list of 0.0.0.0/0 allows everything";
  EXPECT_EQ(what, "allow list 0.0.0.0/0");
}

}  // namespace
}  // namespace dt
