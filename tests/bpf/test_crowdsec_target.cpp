// test_crowdsec_target.cpp - the CrowdSec bouncer's changes on real ban maps
// (crowdsec/store_target.h over BanStore): its bans carry origin "crowdsec", it lifts only
// its own, an operator's longer ban of the same prefix stays, and at start it adopts only
// its own bans still in force.
#include <string>
#include <vector>

#include "bans/ban_store.h"
#include "bpf_fixture.h"
#include "common/clock.h"
#include "crowdsec/store_target.h"
#include "prog_maps.h"

namespace dt::test {
namespace {

constexpr uint64_t kMinute = 60'000'000'000ull;

class CrowdsecTarget : public RuleMapsFixture {
 protected:
  void SetUp() override {
    RuleMapsFixture::SetUp();
    if (HasFatalFailure()) return;
    const BanMapFds fds{map_fd(DT_MAP_BANS_V4), map_fd(DT_MAP_BANS_V6), map_fd(DT_MAP_BAN_INFO),
                        map_fd(DT_MAP_BAN_COUNTS), map_fd(DT_MAP_FEATURES)};
    store_ = BanStore::over(fds);
    target_ = std::make_unique<StoreBanTarget>(BanStore::over(fds));
  }

  BanPrefix prefix(const std::string &text) {
    BanPrefix p;
    std::string err;
    EXPECT_TRUE(parse_ban_prefix(text, &p, &err)) << err;
    return p;
  }

  // A ban set by someone else (an operator: origin "local"; a peer: remote).
  void other_ban(const std::string &text, uint64_t for_ns, const std::string &origin, bool remote = false) {
    Ban b;
    b.prefix = prefix(text);
    b.expires_ns = mono_now_ns() + for_ns;
    b.reason = "by hand";
    b.origin = origin;
    b.who = "test";
    b.remote = remote;
    std::string err;
    ASSERT_TRUE(store_->set(b, &err)) << err;
  }

  std::unique_ptr<BanStore> store_;
  std::unique_ptr<StoreBanTarget> target_;
};

TEST_F(CrowdsecTarget, SetsItsBansAsTheBouncer) {
  std::string err;
  ASSERT_TRUE(target_->set_ban(prefix("198.18.7.0/24"), static_cast<int64_t>(kMinute), "crowdsecurity/ssh-bf", &err))
      << err;
  const auto ban = store_->find(prefix("198.18.7.0/24"));
  ASSERT_TRUE(ban);
  EXPECT_EQ(ban->origin, "crowdsec");
  EXPECT_EQ(ban->who, "crowdsec bouncer");
  EXPECT_EQ(ban->reason, "crowdsecurity/ssh-bf");
  const uint64_t now = mono_now_ns();
  EXPECT_GT(ban->expires_ns, now + kMinute - 5'000'000'000);
  EXPECT_LE(ban->expires_ns, now + kMinute);
  ASSERT_TRUE(target_->set_ban(prefix("198.18.7.0/24"), static_cast<int64_t>(2 * kMinute), "again", &err)) << err;
  std::vector<Ban> all;
  ASSERT_TRUE(store_->list(&all, &err)) << err;
  EXPECT_EQ(all.size(), 1u) << "set twice, one ban (keyed by prefix)";
}

TEST_F(CrowdsecTarget, AnOperatorsLongerBanStaysAndIsNotLifted) {
  other_ban("198.18.7.7", 60 * kMinute, "local");
  std::string err;
  ASSERT_TRUE(target_->set_ban(prefix("198.18.7.7"), static_cast<int64_t>(kMinute), "ssh-bf", &err)) << err;
  EXPECT_EQ(store_->find(prefix("198.18.7.7"))->origin, "local") << "an hour's ban is not cut to a minute";
  bool lifted = true;
  ASSERT_TRUE(target_->lift_ban(prefix("198.18.7.7"), &lifted, &err)) << err;
  EXPECT_FALSE(lifted);
  EXPECT_TRUE(store_->find(prefix("198.18.7.7"))) << "a deleted decision does not lift an operator's ban";
  // A shorter operator's ban is extended by the decision (and becomes the bouncer's).
  other_ban("198.18.7.8", kMinute, "local");
  ASSERT_TRUE(target_->set_ban(prefix("198.18.7.8"), static_cast<int64_t>(60 * kMinute), "ssh-bf", &err)) << err;
  EXPECT_EQ(store_->find(prefix("198.18.7.8"))->origin, "crowdsec");
}

TEST_F(CrowdsecTarget, LiftsItsOwnBansOnly) {
  std::string err;
  bool lifted = false;
  ASSERT_TRUE(target_->set_ban(prefix("2001:2:0:7::/64"), static_cast<int64_t>(kMinute), "r", &err)) << err;
  ASSERT_TRUE(target_->lift_ban(prefix("2001:2:0:7::/64"), &lifted, &err)) << err;
  EXPECT_TRUE(lifted);
  EXPECT_FALSE(store_->find(prefix("2001:2:0:7::/64")));
  ASSERT_TRUE(target_->lift_ban(prefix("2001:2:0:7::/64"), &lifted, &err)) << err;
  EXPECT_FALSE(lifted) << "lifting what is not there is no error";
}

TEST_F(CrowdsecTarget, AdoptsOnlyItsOwnBansInForce) {
  std::string err;
  ASSERT_TRUE(target_->set_ban(prefix("198.18.7.1"), static_cast<int64_t>(kMinute), "mine", &err)) << err;
  ASSERT_TRUE(target_->set_ban(prefix("198.18.7.2"), 1, "expired at once", &err)) << err;
  other_ban("198.18.7.3", kMinute, "local");
  other_ban("198.18.7.4", kMinute, "h1", true);  // a peer's, learned
  const auto current = target_->current_bans();
  ASSERT_EQ(current.size(), 1u);
  EXPECT_EQ(ban_prefix_text(current[0].prefix), "198.18.7.1");
  EXPECT_EQ(current[0].reason, "mine");
}

}  // namespace
}  // namespace dt::test
