// test_xdp_features.cpp - the "in force" bits (struct dt_features, agent/dataplane/features.h)
// that let the packet path skip an idle allow list, deny list or ban trie without a lookup.
//
// The writers keep them true: BanStore sets its family's bit before a ban is written and
// clears it once a removal or sweep leaves the trie empty; publish_lists sets a list's bit
// before its set is swapped in and clears it once the slot is emptied; a sweep turns on the
// bit of a trie that holds a ban written without it (a store of an older agent). And the
// program really skips what a clear bit says is idle: with the bit forced off, a ban or a
// list in the maps decides nothing (which is why the writers must never leave it off).
#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <string>

#include "ban_fixture.h"
#include "dataplane/features.h"
#include "dataplane/list_maps.h"
#include "frames/packet_builder.h"
#include "list_fixture.h"
#include "prog_maps.h"
#include "rules/list_file.h"

namespace dt::test {
using namespace frames;
namespace {

class XdpFeatures : public BanMapsFixture {
 protected:
  void SetUp() override {
    BanMapsFixture::SetUp();
    if (HasFatalFailure()) return;
    lists_ = ListMapFds{map_fd(DT_MAP_LISTS_V4), map_fd(DT_MAP_LISTS_V6), map_fd(DT_MAP_FEATURES)};
  }

  uint32_t ban_bits() const { return feature_bits(map_fd(DT_MAP_FEATURES), FeatureWord::kBans); }
  uint32_t list_bits() const { return feature_bits(map_fd(DT_MAP_FEATURES), FeatureWord::kLists); }

  void force(FeatureWord word, uint32_t bits, bool on) {
    ASSERT_EQ(set_feature_bits(map_fd(DT_MAP_FEATURES), word, bits, on), 0);
  }

  void unban(const std::string &text) {
    BanPrefix p;
    bool found = false;
    std::string err;
    ASSERT_TRUE(parse_ban_prefix(text, &p, &err)) << err;
    ASSERT_TRUE(store_->remove(p, &found, &err)) << err;
    ASSERT_TRUE(found) << "no ban of " << text << " to remove";
  }

  static ListPrefixes list(const std::string &text) { return parse_list_ok(text); }
  void lists(const std::string &allow, const std::string &deny) { publish_list_texts(lists_, allow, deny); }

  ListMapFds lists_;
};

TEST_F(XdpFeatures, NothingLoadedNothingInForce) {
  EXPECT_EQ(ban_bits(), 0u) << "a fresh object has no ban in force";
  EXPECT_EQ(list_bits(), 0u) << "a fresh object has no list in force";
  EXPECT_EQ(run(v4("198.18.0.7")), XDP_PASS);
  EXPECT_EQ(run(v6("2001:2::7")), XDP_PASS);
}

TEST_F(XdpFeatures, ABanWhileNothingElseIsLoadedDropsFromTheNextPacket) {
  EXPECT_EQ(run(v4("198.18.0.7")), XDP_PASS) << "before the ban";
  ASSERT_NO_FATAL_FAILURE(ban("198.18.0.7"));
  EXPECT_EQ(ban_bits(), DT_FEAT_BANS_V4) << "an IPv4 ban turns on the IPv4 trie only";
  EXPECT_EQ(run(v4("198.18.0.7")), XDP_DROP) << "the very next packet";
  EXPECT_EQ(stats().ban_dropped, 1u);
  ASSERT_NO_FATAL_FAILURE(ban("2001:2::/64"));
  EXPECT_EQ(ban_bits(), DT_FEAT_BANS_V4 | DT_FEAT_BANS_V6);
  EXPECT_EQ(run(v6("2001:2::9")), XDP_DROP);
  EXPECT_EQ(list_bits(), 0u) << "bans never touch the lists' word";
}

TEST_F(XdpFeatures, TheLastBanRemovedClearsItsFamilysBitAndPacketsPass) {
  ASSERT_NO_FATAL_FAILURE(ban("198.18.0.7"));
  ASSERT_NO_FATAL_FAILURE(ban("198.18.0.8"));
  ASSERT_NO_FATAL_FAILURE(ban("2001:2::8"));
  ASSERT_NO_FATAL_FAILURE(unban("198.18.0.7"));
  EXPECT_EQ(ban_bits(), DT_FEAT_BANS_V4 | DT_FEAT_BANS_V6) << "198.18.0.8 is still banned";
  EXPECT_EQ(run(v4("198.18.0.7")), XDP_PASS) << "lifted";
  EXPECT_EQ(run(v4("198.18.0.8")), XDP_DROP) << "still banned: the bit stayed on";
  ASSERT_NO_FATAL_FAILURE(unban("198.18.0.8"));
  EXPECT_EQ(ban_bits(), DT_FEAT_BANS_V6) << "the IPv4 trie is empty, the IPv6 one is not";
  EXPECT_EQ(run(v4("198.18.0.8")), XDP_PASS);
  EXPECT_EQ(run(v6("2001:2::8")), XDP_DROP);
  ASSERT_NO_FATAL_FAILURE(unban("2001:2::8"));
  EXPECT_EQ(ban_bits(), 0u);
  EXPECT_EQ(run(v6("2001:2::8")), XDP_PASS);
}

TEST_F(XdpFeatures, ASweepThatEmptiesATrieClearsItsBit) {
  ASSERT_NO_FATAL_FAILURE(ban("198.18.0.7", 1));  // expired by the time it is swept
  ASSERT_NO_FATAL_FAILURE(ban("2001:2::7", kMinute));
  EXPECT_EQ(store_->sweep(mono_now_ns() + 1'000'000), 1u);
  EXPECT_EQ(ban_bits(), DT_FEAT_BANS_V6);
}

TEST_F(XdpFeatures, ABanWrittenWithoutItsBitIsIgnoredUntilASweepTurnsItOn) {
  // A store over pins without the features map (an older agent's `agent ban`).
  auto old = BanStore::over(
      BanMapFds{map_fd(DT_MAP_BANS_V4), map_fd(DT_MAP_BANS_V6), map_fd(DT_MAP_BAN_INFO), map_fd(DT_MAP_BAN_COUNTS)});
  Ban b;
  std::string err;
  ASSERT_TRUE(parse_ban_prefix("198.18.0.9", &b.prefix, &err)) << err;
  b.expires_ns = mono_now_ns() + kMinute;
  b.origin = "local";
  ASSERT_TRUE(old->set(b, &err)) << err;
  EXPECT_EQ(ban_bits(), 0u);
  EXPECT_EQ(run(v4("198.18.0.9")), XDP_PASS) << "its bit is off: the trie is not looked at";
  EXPECT_EQ(store_->sweep(mono_now_ns()), 0u);
  EXPECT_EQ(ban_bits(), DT_FEAT_BANS_V4) << "the sweep turned on the bit of a trie holding a ban";
  EXPECT_EQ(run(v4("198.18.0.9")), XDP_DROP);
}

TEST_F(XdpFeatures, ABanBitForcedOffSkipsTheTrie) {
  ASSERT_NO_FATAL_FAILURE(ban("198.18.0.7"));
  ASSERT_NO_FATAL_FAILURE(force(FeatureWord::kBans, DT_FEAT_BANS_V4, false));
  EXPECT_EQ(run(v4("198.18.0.7")), XDP_PASS) << "bit off: the ban trie was looked up anyway";
  EXPECT_EQ(stats().ban_dropped, 0u);
  ASSERT_NO_FATAL_FAILURE(force(FeatureWord::kBans, DT_FEAT_BANS_V4, true));
  EXPECT_EQ(run(v4("198.18.0.7")), XDP_DROP);
}

TEST_F(XdpFeatures, EachListSetsItsOwnBitAndAnEmptyListClearsIt) {
  ASSERT_NO_FATAL_FAILURE(lists("", "198.18.5.0/24\n"));
  EXPECT_EQ(list_bits(), DT_FEAT_DENY_V4) << "an IPv4 deny list only";
  EXPECT_EQ(run(v4("198.18.5.1")), XDP_DROP);
  ASSERT_NO_FATAL_FAILURE(lists("2001:2::/48\n198.18.5.1\n", "198.18.5.0/24\n"));
  EXPECT_EQ(list_bits(), DT_FEAT_DENY_V4 | DT_FEAT_ALLOW_V4 | DT_FEAT_ALLOW_V6);
  EXPECT_EQ(run(v4("198.18.5.1")), XDP_PASS) << "the allow list comes first";
  EXPECT_EQ(run(v4("198.18.5.2")), XDP_DROP);
  ASSERT_NO_FATAL_FAILURE(lists("", "2001:2::/48\n"));
  EXPECT_EQ(list_bits(), DT_FEAT_DENY_V6) << "emptied slots clear their bits";
  EXPECT_EQ(run(v4("198.18.5.2")), XDP_PASS);
  EXPECT_EQ(run(v6("2001:2::1")), XDP_DROP);
  ASSERT_NO_FATAL_FAILURE(lists("", ""));
  EXPECT_EQ(list_bits(), 0u);
  EXPECT_EQ(run(v6("2001:2::1")), XDP_PASS);
  EXPECT_EQ(ban_bits(), 0u) << "lists never touch the bans' word";
}

TEST_F(XdpFeatures, AListBitForcedOffSkipsTheList) {
  ASSERT_NO_FATAL_FAILURE(lists("", "198.18.5.0/24\n2001:2::/48\n"));
  ASSERT_NO_FATAL_FAILURE(force(FeatureWord::kLists, DT_FEAT_DENY_V4, false));
  EXPECT_EQ(run(v4("198.18.5.1")), XDP_PASS) << "bit off: the IPv4 deny list was looked up anyway";
  EXPECT_EQ(run(v6("2001:2::1")), XDP_DROP) << "the IPv6 one's bit is still on";
}

TEST_F(XdpFeatures, BitsInForceAreWhatTheMapsHold) {
  EXPECT_EQ(ban_bits_in_force(map_fd(DT_MAP_BANS_V4), map_fd(DT_MAP_BANS_V6)), 0u);
  EXPECT_EQ(list_bits_in_force(lists_.v4, lists_.v6), 0u);
  ASSERT_NO_FATAL_FAILURE(ban("2001:2::/64"));
  ASSERT_NO_FATAL_FAILURE(lists("198.18.5.0/24\n", "2001:2::/48\n"));
  EXPECT_EQ(ban_bits_in_force(map_fd(DT_MAP_BANS_V4), map_fd(DT_MAP_BANS_V6)), DT_FEAT_BANS_V6);
  EXPECT_EQ(list_bits_in_force(lists_.v4, lists_.v6), DT_FEAT_ALLOW_V4 | DT_FEAT_DENY_V6);
}

}  // namespace
}  // namespace dt::test
