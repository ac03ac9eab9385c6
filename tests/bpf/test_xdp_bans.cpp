// test_xdp_bans.cpp - bans (bpf/bans.bpf.h) as the XDP program applies them, written by
// the agent's own BanStore (agent/bans/ban_store.h) into the object's maps.
//
// A banned IPv4 or IPv6 prefix drops its sources before the rules (an `allow` rule
// included), an address outside it passes; an expired ban passes (counted) until it is
// swept; with DT_CFG_DRY_RUN (--dry-run) a ban counts would-drops and passes. Each ban
// counts its own packets in this CPU's element of ban_counts, and the global counters
// ban_dropped, ban_would_drop and ban_expired move with them. The store is idempotent by
// prefix: banning again updates the ban and keeps its counts.
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ban_fixture.h"
#include "common/clock.h"
#include "dataplane/policy.h"
#include "frames/packet_builder.h"
#include "prog_maps.h"
#include "rules/rules.h"

namespace dt::test {
using namespace frames;
namespace {

class XdpBans : public BanMapsFixture {
 protected:
  void set_dry_run(bool on) {
    ASSERT_EQ(
        update_config_flags(config_fd(), on ? DT_CFG_DRY_RUN : 0, on ? 0 : DT_CFG_DRY_RUN, live_config().coarse_lag_ns),
        0);
  }
};

TEST_F(XdpBans, BannedIpv4PrefixDropsItsSourcesOnly) {
  ASSERT_NO_FATAL_FAILURE(ban("198.18.0.0/24", kMinute));
  EXPECT_EQ(run(v4("198.18.0.7")), XDP_DROP) << "inside the banned /24";
  EXPECT_EQ(run(v4("198.18.0.255")), XDP_DROP) << "inside the banned /24";
  EXPECT_EQ(run(v4("198.18.1.7")), XDP_PASS) << "outside it";
  const dt_stats s = stats();
  EXPECT_EQ(s.ban_dropped, 2u) << stats_to_string(s);
  EXPECT_EQ(s.passed, 1u) << "the banned packets never reached a bucket: " << stats_to_string(s);
  EXPECT_EQ(ban_of("198.18.0.0/24").dropped, 2u);
  EXPECT_FALSE(bucket("198.18.0.7")) << "a banned source gets no bucket";
}

TEST_F(XdpBans, BannedIpv6PrefixDropsItsSourcesOnly) {
  ASSERT_NO_FATAL_FAILURE(ban("2001:2::/64", kMinute));
  ASSERT_NO_FATAL_FAILURE(ban("2001:2:0:1::9", kMinute));
  EXPECT_EQ(run(v6("2001:2::1")), XDP_DROP);
  EXPECT_EQ(run(v6("2001:2::ffff:0:0:1")), XDP_DROP);
  EXPECT_EQ(run(v6("2001:2:0:1::9")), XDP_DROP) << "a single banned address";
  EXPECT_EQ(run(v6("2001:2:0:1::8")), XDP_PASS) << "its neighbour";
  EXPECT_EQ(run(v4("198.18.0.1")), XDP_PASS) << "IPv6 bans do not touch IPv4";
  EXPECT_EQ(ban_of("2001:2::/64").dropped, 2u);
  EXPECT_EQ(ban_of("2001:2:0:1::9").dropped, 1u);
  EXPECT_EQ(stats().ban_dropped, 3u);
}

TEST_F(XdpBans, BanBeatsAnAllowRule) {
  RuleSet rs = default_rules(1e6, 1'000'000);
  LoadedRules r;
  std::string err;
  ASSERT_TRUE(parse_rules("version = 1\n[[rule]]\nname = \"ok\"\ncidr = \"198.18.0.0/16\"\naction = \"allow\"\n",
                          "test.toml", &rs, &err))
      << err;
  ASSERT_TRUE(compile_rules(rs, &r.compiled, &err)) << err;
  ASSERT_EQ(publish_rules(rule_maps(), r.compiled.policies, r.compiled.lpm, {}), 0);
  ASSERT_NO_FATAL_FAILURE(ban("198.18.3.4", kMinute));
  EXPECT_EQ(run(v4("198.18.3.4")), XDP_DROP) << "bans come before the rules";
  EXPECT_EQ(run(v4("198.18.3.5")), XDP_PASS);
  EXPECT_EQ(stats().allowed, 1u);
}

TEST_F(XdpBans, ExpiredBanPassesCountedUntilSwept) {
  ASSERT_NO_FATAL_FAILURE(ban("198.18.5.0/24", 300'000'000ull));  // 300 ms
  EXPECT_EQ(run(v4("198.18.5.1")), XDP_DROP) << "before its expiry";
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the expiry is a time: wait it out
  EXPECT_EQ(run(v4("198.18.5.1")), XDP_PASS) << "after its expiry";
  EXPECT_EQ(stats().ban_expired, 1u) << stats_to_string(stats());
  EXPECT_EQ(stats().ban_dropped, 1u);
  ASSERT_NO_FATAL_FAILURE(ban("198.18.6.0/24", kMinute));
  EXPECT_EQ(store_->sweep(mono_now_ns()), 1u) << "the expired ban is swept, the live one kept";
  std::vector<Ban> left;
  std::string err;
  ASSERT_TRUE(store_->list(&left, &err));
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(ban_prefix_text(left[0].prefix), "198.18.6.0/24");
  EXPECT_EQ(run(v4("198.18.5.1")), XDP_PASS);
  EXPECT_EQ(stats().ban_expired, 1u) << "a swept ban costs no more lookups that hit";
}

TEST_F(XdpBans, DryRunCountsWouldDropAndPasses) {
  ASSERT_NO_FATAL_FAILURE(ban("198.18.7.0/24", kMinute));
  ASSERT_NO_FATAL_FAILURE(set_dry_run(true));
  for (int i = 0; i < 3; i++) EXPECT_EQ(run(v4("198.18.7.1")), XDP_PASS) << "dry run drops nothing";
  Ban b = ban_of("198.18.7.0/24");
  EXPECT_EQ(b.would_drop, 3u);
  EXPECT_EQ(b.dropped, 0u);
  EXPECT_EQ(stats().ban_would_drop, 3u);
  EXPECT_EQ(stats().ban_dropped, 0u);
  ASSERT_NO_FATAL_FAILURE(set_dry_run(false));
  EXPECT_EQ(run(v4("198.18.7.1")), XDP_DROP) << "enforcing again";
  EXPECT_EQ(ban_of("198.18.7.0/24").dropped, 1u);
}

TEST_F(XdpBans, CountsPerBanInThisCpusElement) {
  PinnedToThisCpu pin;
  ASSERT_TRUE(pin.ok());
  ASSERT_NO_FATAL_FAILURE(ban("198.18.8.0/24", kMinute));
  ASSERT_NO_FATAL_FAILURE(ban("198.18.8.0/25", kMinute));  // the longer prefix wins inside it
  for (int i = 0; i < 3; i++) run(v4("198.18.8.1"));
  for (int i = 0; i < 2; i++) run(v4("198.18.8.200"));
  const Ban narrow = ban_of("198.18.8.0/25"), wide = ban_of("198.18.8.0/24");
  EXPECT_EQ(narrow.dropped, 3u);
  EXPECT_EQ(wide.dropped, 2u);
  const auto per_cpu = per_cpu_values<dt_ban_counts>(map_fd(DT_MAP_BAN_COUNTS), narrow.slot);
  ASSERT_GT(per_cpu.size(), static_cast<size_t>(pin.cpu()));
  for (size_t cpu = 0; cpu < per_cpu.size(); cpu++)
    EXPECT_EQ(per_cpu[cpu].dropped, static_cast<int>(cpu) == pin.cpu() ? 3u : 0u) << "CPU " << cpu;
}

TEST_F(XdpBans, BanningAgainUpdatesAndUnbanLifts) {
  ASSERT_NO_FATAL_FAILURE(ban("198.18.9.9", kMinute, "first"));
  run(v4("198.18.9.9"));
  const Ban first = ban_of("198.18.9.9");
  ASSERT_NO_FATAL_FAILURE(ban("198.18.9.9", 2 * kMinute, "second"));
  std::vector<Ban> all;
  std::string err;
  ASSERT_TRUE(store_->list(&all, &err));
  ASSERT_EQ(all.size(), 1u) << "the same prefix twice is one ban";
  EXPECT_EQ(all[0].reason, "second");
  EXPECT_EQ(all[0].slot, first.slot);
  EXPECT_EQ(all[0].dropped, 1u) << "its counts are kept";
  EXPECT_GT(all[0].expires_ns, first.expires_ns + kMinute / 2);
  bool found = false;
  BanPrefix p;
  ASSERT_TRUE(parse_ban_prefix("198.18.9.9", &p, &err));
  ASSERT_TRUE(store_->remove(p, &found, &err)) << err;
  EXPECT_TRUE(found);
  EXPECT_EQ(run(v4("198.18.9.9")), XDP_PASS) << "lifted";
  ASSERT_TRUE(store_->remove(p, &found, &err)) << err;
  EXPECT_FALSE(found) << "a second unban finds nothing";
}

}  // namespace
}  // namespace dt::test
