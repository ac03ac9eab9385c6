// ban_fixture.h - a RuleMapsFixture whose object's ban maps are written by the agent's own
// BanStore (agent/bans/ban_store.h), for the tests where bans meet the packet path
// (test_xdp_bans.cpp, test_xdp_order.cpp). Rule 0 admits everything, so only a ban (or
// what a test adds) drops.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bans/ban_store.h"
#include "common/clock.h"
#include "prog_maps.h"

namespace dt::test {

class BanMapsFixture : public RuleMapsFixture {
 protected:
  static constexpr uint64_t kMinute = 60'000'000'000ull;

  void SetUp() override {
    RuleMapsFixture::SetUp();
    if (HasFatalFailure()) return;
    set_policy(1e6, 1'000'000);
    store_ = BanStore::over(BanMapFds{map_fd(DT_MAP_BANS_V4), map_fd(DT_MAP_BANS_V6), map_fd(DT_MAP_BAN_INFO),
                                      map_fd(DT_MAP_BAN_COUNTS), map_fd(DT_MAP_FEATURES)});
  }

  // Bans `text` (an address or prefix) until now + for_ns.
  void ban(const std::string &text, uint64_t for_ns = kMinute, const std::string &reason = "test") {
    Ban b;
    std::string err;
    ASSERT_TRUE(parse_ban_prefix(text, &b.prefix, &err)) << err;
    b.expires_ns = mono_now_ns() + for_ns;
    b.reason = reason;
    b.origin = "local";
    b.who = "test";
    ASSERT_TRUE(store_->set(b, &err)) << err;
  }

  // The ban of exactly `text`, with its counts (a failure if there is none).
  Ban ban_of(const std::string &text) {
    std::vector<Ban> all;
    std::string err;
    EXPECT_TRUE(store_->list(&all, &err)) << err;
    BanPrefix p;
    EXPECT_TRUE(parse_ban_prefix(text, &p, &err)) << err;
    for (const Ban &b : all)
      if (b.prefix == p) return b;
    ADD_FAILURE() << "no ban of " << text << " in the store";
    return Ban{};
  }

  std::unique_ptr<BanStore> store_;
};

}  // namespace dt::test
