// test_ban_sync.cpp - what a host does with its peers' bans (agent/bans/ban_sync.h) over
// real ban maps: the policy (min prefix, never-ban set, per-peer cap and rate, duration
// cut, credible times), lifts honoured only from a ban's origin, and tombstones bounded,
// re-announced by their origin only, ending kBanTombstoneNs after the lift at the origin;
// and the bouncer's never-ban set read from an agent's pins (bans/never_ban.h).
#include <bpf/bpf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "ban_fixture.h"
#include "bans/ban_sync.h"
#include "cluster/cluster_exempt.h"
#include "common/address.h"
#include "common/clock.h"
#include "rules/list_file.h"

namespace dt::test {
namespace {

constexpr uint64_t kSecond = 1'000'000'000ull;
constexpr uint64_t kUnix = 1'800'000'000'000ull;  // the peers' clock (unix ms) in these tests

class BanSyncTest : public BanMapsFixture {
 protected:
  void SetUp() override {
    BanMapsFixture::SetUp();
    if (HasFatalFailure()) return;
    sync_ = std::make_unique<BanSync>(*store_, "me");
    now_ = mono_now_ns();
  }

  BanNotice set(const std::string &text, uint64_t remaining_ms = 600'000, uint64_t unix_ms = kUnix) {
    BanNotice n;
    std::string err;
    EXPECT_TRUE(parse_ban_prefix(text, &n.prefix, &err)) << err;
    n.remaining_ms = remaining_ms;
    n.unix_ms = unix_ms;
    n.reason = "test";
    n.origin = "local";
    n.who = "test";
    return n;
  }
  BanNotice lift(const std::string &text, uint64_t unix_ms = kUnix + 1000) {
    BanNotice n = set(text);
    n.remove = true;
    n.unix_ms = unix_ms;
    return n;
  }
  void from(const std::string &peer, const std::vector<BanNotice> &n, uint64_t peer_now = kUnix + 2000) {
    sync_->apply(peer, n, now_, peer_now);
  }
  bool banned(const std::string &text) {
    BanPrefix p;
    std::string err;
    EXPECT_TRUE(parse_ban_prefix(text, &p, &err)) << err;
    return store_->find(p).has_value();
  }
  static size_t lifts_of(const std::vector<BanNotice> &out, const std::string &text) {
    size_t n = 0;
    for (const BanNotice &b : out) n += b.remove && ban_prefix_text(b.prefix) == text;
    return n;
  }
  const BanSyncCounters &c() { return sync_->counters(); }

  std::unique_ptr<BanSync> sync_;
  uint64_t now_ = 0;
};

TEST_F(BanSyncTest, WideBansAndTheNeverBanSetAreRefused) {
  dt_exempt_key peer{};
  dt_key k{};
  ASSERT_TRUE(key_from_string("198.18.0.2", &k));
  memcpy(peer.addr, k.addr, 16);
  sync_->set_cluster_addresses({peer});
  from("h2", {set("0.0.0.0/1"), set("128.0.0.0/1"), set("2001::/16"), set("198.18.0.0/16"), set("198.18.7.0/24")});
  EXPECT_FALSE(banned("0.0.0.0/1"));
  EXPECT_FALSE(banned("128.0.0.0/1"));
  EXPECT_FALSE(banned("2001::/16"));
  EXPECT_FALSE(banned("198.18.0.0/16")) << "it covers the peer 198.18.0.2";
  EXPECT_TRUE(banned("198.18.7.0/24"));
  EXPECT_EQ(c().refused_prefix, 3u);
  EXPECT_EQ(c().refused_never_ban, 1u);
  EXPECT_EQ(c().learned, 1u);
}

TEST_F(BanSyncTest, PeersNotListedMayNotBan) {
  PeerBanPolicy p;
  std::string err;
  ASSERT_TRUE(parse_peer_bans("h3", &p, &err)) << err;
  sync_->set_policy(p);
  from("h2", {set("198.18.7.0/24")});
  from("h3", {set("198.18.8.0/24")});
  EXPECT_FALSE(banned("198.18.7.0/24"));
  EXPECT_TRUE(banned("198.18.8.0/24"));
  EXPECT_EQ(c().refused_peer, 1u);
}

TEST_F(BanSyncTest, LongBansAreCutToTheMaximum) {
  from("h2", {set("198.18.7.0/24", 30ull * 86400 * 1000)});
  BanPrefix p;
  std::string err;
  ASSERT_TRUE(parse_ban_prefix("198.18.7.0/24", &p, &err));
  const auto b = store_->find(p);
  ASSERT_TRUE(b);
  EXPECT_LE(b->expires_ns, now_ + PeerBanPolicy{}.max_duration_ns) << "30 days from a peer, kept for more than a day";
  EXPECT_EQ(c().clamped, 1u);
  from("h2", {set("198.18.7.0/24", 30ull * 86400 * 1000)});
  EXPECT_EQ(c().updated, 0u) << "a re-announcement of a cut ban rewrote it";
}

TEST_F(BanSyncTest, OnePeerCannotFillTheLearnedBans) {
  PeerBanPolicy p;
  p.max_per_peer = 5;
  p.rate_per_s = 1;  // bursts of 10
  sync_->set_policy(p);
  std::vector<BanNotice> many;
  for (int i = 0; i < 8; i++) many.push_back(set("198.18." + std::to_string(i) + ".0/24"));
  from("h2", many);
  EXPECT_EQ(c().learned, 5u);
  EXPECT_EQ(c().refused_peer_cap, 3u);
  from("h3", many);
  EXPECT_EQ(c().ignored_held, 5u) << "h3's sets of the prefixes h2's bans hold";
  EXPECT_EQ(c().learned, 8u) << "h3's sets of the 3 others: its own bans";
  std::vector<BanNotice> more;
  for (int i = 0; i < 12; i++) more.push_back(set("198.19." + std::to_string(i) + ".0/24"));
  p.max_per_peer = 100;
  sync_->set_policy(p);
  from("h3", more);
  EXPECT_EQ(c().learned, 15u) << "h3's burst: 10 new bans (3 of them taken before)";
  EXPECT_EQ(c().refused_rate, 5u);
}

TEST_F(BanSyncTest, OnlyTheOriginLiftsABan) {
  ban("198.18.5.0/24");  // this host's own
  sync_->on_period(now_, kUnix);
  from("h2", {set("198.18.7.0/24")});
  from("h3", {lift("198.18.5.0/24"), lift("198.18.7.0/24")});
  EXPECT_TRUE(banned("198.18.5.0/24")) << "a peer lifted this host's own ban";
  EXPECT_TRUE(banned("198.18.7.0/24")) << "h3 lifted h2's ban";
  EXPECT_EQ(c().refused_origin, 2u);
  from("h2", {lift("198.18.5.0/24"), lift("198.18.7.0/24")});
  EXPECT_TRUE(banned("198.18.5.0/24")) << "h2 lifted this host's own ban";
  EXPECT_FALSE(banned("198.18.7.0/24")) << "h2 could not lift its own ban";
  EXPECT_EQ(c().lifted, 1u);
  from("h3", {set("198.18.5.0/24", 1000, kUnix + 1500)});
  EXPECT_EQ(store_->find(ban_of("198.18.5.0/24").prefix)->origin, "local")
      << "a peer's newer, shorter set replaced this host's ban (a lift in disguise)";
}

TEST_F(BanSyncTest, TimesAreBoundedByThePeersClock) {
  from("h2", {set("198.18.7.0/24", 600'000, kUnix + 60'000)});  // set a minute in the peer's future
  EXPECT_FALSE(banned("198.18.7.0/24"));
  from("h2", {lift("198.18.8.0/24", kUnix + 86'400'000ull * 365)});  // a lift for ever
  EXPECT_EQ(c().refused_time, 2u);
  from("h2", {set("198.18.8.0/24")});
  EXPECT_TRUE(banned("198.18.8.0/24")) << "a far-future lift kept the prefix out";
}

TEST_F(BanSyncTest, PeersTombstonesAreBoundedNotReannouncedAndEnd) {
  PeerBanPolicy p;
  p.max_per_peer = 10;
  sync_->set_policy(p);
  std::vector<BanNotice> flood;
  for (int i = 0; i < 50; i++) flood.push_back(lift("198.18." + std::to_string(i) + ".0/24", kUnix));
  from("h2", flood, kUnix + 30'000);  // lifted 30 s ago at h2
  EXPECT_EQ(c().refused_tombstones, 40u);
  auto out = sync_->on_period(now_, kUnix);
  EXPECT_EQ(c().tombstones, 10u);
  EXPECT_EQ(lifts_of(out, "198.18.0.0/24"), 0u) << "a peer's lift re-announced by this host";
  from("h2", flood, kUnix + 40'000);  // h2's re-announcement 10 s later extends nothing
  sync_->on_period(now_ + 29 * kSecond, kUnix);
  EXPECT_EQ(c().tombstones, 10u);
  sync_->on_period(now_ + 31 * kSecond, kUnix);
  EXPECT_EQ(c().tombstones, 0u) << "tombstones outlived 60 s from the lift at the origin";
}

TEST_F(BanSyncTest, OwnTombstonesAreAnnouncedForAMinute) {
  ban("198.18.5.0/24", 10 * kMinute);
  sync_->on_period(now_, kUnix);
  bool found = false;
  std::string err;
  ASSERT_TRUE(store_->remove(ban_of("198.18.5.0/24").prefix, &found, &err));
  EXPECT_EQ(lifts_of(sync_->on_period(now_ + kSecond, kUnix + 1000), "198.18.5.0/24"), 1u);
  EXPECT_EQ(lifts_of(sync_->on_period(now_ + 11 * kSecond, kUnix + 11'000), "198.18.5.0/24"), 1u);
  EXPECT_EQ(lifts_of(sync_->on_period(now_ + 62 * kSecond, kUnix + 62'000), "198.18.5.0/24"), 0u);
  EXPECT_EQ(c().tombstones, 0u);
}

TEST_F(BanSyncTest, AnUnbanHereOfAPeersBanStaysHere) {
  from("h2", {set("198.18.7.0/24")});
  sync_->on_period(now_, kUnix);
  bool found = false;
  std::string err;
  ASSERT_TRUE(store_->remove(ban_of("198.18.7.0/24").prefix, &found, &err));
  const auto out = sync_->on_period(now_ + kSecond, kUnix + 1000);
  EXPECT_EQ(lifts_of(out, "198.18.7.0/24"), 0u) << "the lift of h2's ban was announced to the peers";
  from("h2", {set("198.18.7.0/24")});
  EXPECT_FALSE(banned("198.18.7.0/24")) << "h2's re-announcement brought back the ban unbanned here";
  from("h2", {set("198.18.7.0/24", 600'000, kUnix + 1500)});
  EXPECT_TRUE(banned("198.18.7.0/24")) << "h2's new ban of the prefix was not learned";
}

// The bouncer's never-ban set, read from an agent's pins: its cluster_exempt entries and
// its allow list (read again once the agent puts a new one in force).
TEST_F(BanSyncTest, NeverBanSetFromThePins) {
  const std::string dir = "/sys/fs/bpf/dt-test-neverban-" + std::to_string(getpid());
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0) << dir << ": " << strerror(errno);
  const std::string names[] = {DT_MAP_CLUSTER_EXEMPT, DT_MAP_LISTS_V4, DT_MAP_LISTS_V6};
  for (const std::string &name : names)
    ASSERT_EQ(bpf_obj_pin(map_fd(name.c_str()), (dir + "/" + name).c_str()), 0) << name << ": " << strerror(errno);
  std::string err;
  const auto keys = cluster_exempt_keys({"tcp://198.18.9.9:7700"}, {}, "", &err);
  ASSERT_EQ(err, "");
  install_cluster_exempt(cluster_exempt_fd(), cluster_ports_fd(), keys, &err);
  ListPrefixes allow, deny;
  ASSERT_TRUE(parse_list_text("198.18.7.0/24\n2001:2:0:7::/64\n", "allow", &allow, &err)) << err;
  const ListMapFds lists{map_fd(DT_MAP_LISTS_V4), map_fd(DT_MAP_LISTS_V6)};
  ASSERT_EQ(publish_lists(lists, allow, deny, nullptr, nullptr, &err), 0) << err;
  NeverBanPins pins(dir);
  EXPECT_TRUE(pins.refresh(&err)) << err;
  std::string what;
  auto overlaps = [&](const std::string &text) {
    BanPrefix p;
    std::string e;
    EXPECT_TRUE(parse_ban_prefix(text, &p, &e)) << e;
    return pins.set().overlaps(p, &what);
  };
  EXPECT_TRUE(overlaps("198.18.9.0/24")) << "a range covering the peer 198.18.9.9";
  EXPECT_TRUE(overlaps("198.18.7.7")) << "an allowed address";
  EXPECT_TRUE(overlaps("2001:2::/48")) << "a range covering an allowed IPv6 prefix";
  EXPECT_FALSE(overlaps("198.18.8.0/24"));
  ASSERT_TRUE(parse_list_text("198.18.8.0/24\n", "allow", &allow, &err)) << err;
  ASSERT_EQ(publish_lists(lists, allow, deny, nullptr, nullptr, &err), 0) << err;
  EXPECT_TRUE(pins.refresh(&err)) << err;
  EXPECT_TRUE(overlaps("198.18.8.0/24")) << "the new allow list was not read";
  EXPECT_FALSE(overlaps("198.18.7.7")) << "the old allow list is still used";
  EXPECT_FALSE(overlaps("2001:2::/48")) << "the IPv6 allow list, now empty, is still used";
  for (const std::string &name : names) unlink((dir + "/" + name).c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace dt::test
