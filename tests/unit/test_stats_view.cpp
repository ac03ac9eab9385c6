// test_stats_view.cpp - `agent top`: rates between two snapshots, and the frame text.
#include <gtest/gtest.h>

#include <string>

#include "commands/stats_view.h"
#include "common/address.h"
#include "dataplane/policy.h"

namespace {

dt::SourceRow row(const char *addr, uint64_t passed, uint64_t dropped) {
  dt::SourceRow r{};
  EXPECT_TRUE(dt::key_from_string(addr, &r.key)) << addr;
  r.b.passed = passed;
  r.b.dropped = dropped;
  return r;
}

dt::StatsSnapshot snap(uint64_t taken_ns, uint64_t passed, uint64_t dropped, std::vector<dt::SourceRow> rows) {
  dt::StatsSnapshot s;
  s.taken_ns = taken_ns;
  s.counters.passed = passed;
  s.counters.dropped = dropped;
  s.sources = std::move(rows);
  return s;
}

constexpr uint64_t kSecond = 1'000'000'000;

TEST(Top, RatesPerSecondSortedByDrops) {
  auto a = snap(
      10 * kSecond, 1000, 500,
      {row("198.18.1.1", 100, 400), row("198.18.1.2", 50, 100), row("198.18.1.3", 7, 0), row("2001:2::1:1", 10, 0)});
  // Two seconds later: .1 kept dropping, .2 and the IPv6 source only passed, .3 idle,
  // .4 is new.
  auto b = snap(12 * kSecond, 1500, 1500,
                {row("2001:2::1:1", 30, 0), row("198.18.1.3", 7, 0), row("198.18.1.2", 250, 100),
                 row("198.18.1.1", 300, 1400), row("198.18.1.4", 20, 4)});
  dt::TopFrame f = dt::compute_top(a, b);
  EXPECT_DOUBLE_EQ(f.interval_s, 2.0);
  EXPECT_DOUBLE_EQ(f.passed_per_s, 250.0);
  EXPECT_DOUBLE_EQ(f.dropped_per_s, 500.0);
  EXPECT_EQ(f.sources_total, 5u);
  ASSERT_EQ(f.active.size(), 4u) << "the idle source is not listed";
  const char *order[] = {"198.18.1.1", "198.18.1.4", "198.18.1.2", "2001:2::1:1"};
  for (size_t i = 0; i < 4; i++) EXPECT_EQ(dt::key_to_string(f.active[i].key), order[i]) << i;
  EXPECT_DOUBLE_EQ(f.active[0].dropped_per_s, 500.0);
  EXPECT_DOUBLE_EQ(f.active[0].passed_per_s, 100.0);
  EXPECT_EQ(f.active[0].dropped, 1400u);
  EXPECT_DOUBLE_EQ(f.active[1].passed_per_s, 10.0) << "a new source counts from zero";
  EXPECT_DOUBLE_EQ(f.active[2].passed_per_s, 100.0);
  EXPECT_DOUBLE_EQ(f.active[2].dropped_per_s, 0.0);
}

TEST(Top, CountersThatWentDownCountFromZero) {
  // The source was evicted and came back (its counters restarted); the maps were
  // recreated by a fresh agent (global counters restarted).
  auto a = snap(kSecond, 900, 900, {row("198.18.1.1", 500, 500)});
  auto b = snap(2 * kSecond, 30, 10, {row("198.18.1.1", 20, 5)});
  dt::TopFrame f = dt::compute_top(a, b);
  EXPECT_DOUBLE_EQ(f.passed_per_s, 30.0);
  EXPECT_DOUBLE_EQ(f.dropped_per_s, 10.0);
  ASSERT_EQ(f.active.size(), 1u);
  EXPECT_DOUBLE_EQ(f.active[0].passed_per_s, 20.0);
  EXPECT_DOUBLE_EQ(f.active[0].dropped_per_s, 5.0);
}

TEST(Top, AFloodedSourcesHeldDropsDipIsNoRestart) {
  // A reading during a flood may lack drops a CPU was flushing at that moment (fewer
  // than DT_DROP_FLUSH_PACKETS per CPU): no drop rate for that frame, not a restart.
  auto a = snap(kSecond, 100, 10000, {row("198.18.1.1", 100, 10000)});
  auto b = snap(2 * kSecond, 150, 10200, {row("198.18.1.1", 150, 10000 - (DT_DROP_FLUSH_PACKETS - 1))});
  dt::TopFrame f = dt::compute_top(a, b);
  ASSERT_EQ(f.active.size(), 1u);
  EXPECT_DOUBLE_EQ(f.active[0].passed_per_s, 50.0) << "passed counts on, it is exact";
  EXPECT_DOUBLE_EQ(f.active[0].dropped_per_s, 0.0) << "a dip of held drops is no increase";
  // A fall far beyond what CPUs can hold is a restarted source: counted from zero.
  auto c = snap(3 * kSecond, 160, 10300, {row("198.18.1.1", 160, 7)});
  f = dt::compute_top(b, c);
  ASSERT_EQ(f.active.size(), 1u);
  EXPECT_DOUBLE_EQ(f.active[0].dropped_per_s, 7.0);
  EXPECT_DOUBLE_EQ(f.active[0].passed_per_s, 160.0);
}

TEST(Top, RenderShowsPolicyTotalsAndTheTopSources) {
  dt_policy pol{};
  std::string err;
  ASSERT_TRUE(dt::make_policy(100, 50, &pol, &err)) << err;
  auto a = snap(kSecond, 0, 0, {});
  auto b = snap(2 * kSecond, 300, 900,
                {row("198.18.1.1", 100, 600), row("198.18.1.2", 100, 300), row("198.18.1.3", 100, 0)});
  b.policy = pol;
  const std::string text = dt::render_top(dt::compute_top(a, b), pol, "/sys/fs/bpf/dthrottle/eth0", 2);
  EXPECT_NE(text.find("dthrottle top: /sys/fs/bpf/dthrottle/eth0, last 1.00s\n"), std::string::npos) << text;
  EXPECT_NE(text.find("policy: rate 100/s, burst 50 per source\n"), std::string::npos) << text;
  EXPECT_NE(text.find("total: passed 300.0/s, dropped 900.0/s"), std::string::npos) << text;
  EXPECT_NE(text.find("sources: 3 in the table, 3 sent in the interval\n"), std::string::npos) << text;
  const size_t first = text.find("198.18.1.1 "), second = text.find("198.18.1.2 ");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_LT(first, second) << "most drops first";
  EXPECT_EQ(text.find("198.18.1.3 "), std::string::npos) << "--top 2 shows two sources\n" << text;
  EXPECT_NE(text.find("(1 more)"), std::string::npos) << text;
  EXPECT_EQ(text.find('\033'), std::string::npos) << "no terminal codes in the frame itself";
}

// Dry run: nothing is dropped; what would be shows as would-drop, in total and per
// source, and ranks sources as drops do.
TEST(Top, DryRunShowsWouldDropRates) {
  dt_policy pol{};
  std::string err;
  ASSERT_TRUE(dt::make_policy(100, 50, &pol, &err)) << err;
  pol.flags = DT_POL_DRY_RUN;
  auto a = snap(kSecond, 0, 0, {row("198.18.1.1", 10, 0), row("198.18.1.2", 10, 0)});
  a.would_drop = 100;
  a.sources[1].b.would_drop = 100;
  auto b = snap(3 * kSecond, 400, 0, {row("198.18.1.1", 210, 0), row("198.18.1.2", 210, 0)});
  b.would_drop = 900;
  b.sources[1].b.would_drop = 900;
  b.policy = pol;
  const dt::TopFrame f = dt::compute_top(a, b);
  EXPECT_DOUBLE_EQ(f.would_drop_per_s, 400.0);
  ASSERT_EQ(f.active.size(), 2u);
  EXPECT_EQ(dt::key_to_string(f.active[0].key), "198.18.1.2") << "would-drops rank as drops";
  EXPECT_DOUBLE_EQ(f.active[0].would_drop_per_s, 400.0);
  EXPECT_EQ(f.active[0].would_drop, 900u);
  EXPECT_DOUBLE_EQ(f.active[1].would_drop_per_s, 0.0);
  const std::string text = dt::render_top(f, pol, "/p", 0);
  EXPECT_NE(text.find("dry run: nothing is dropped; would-drop counts what enforcing would drop\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("total: passed 200.0/s, dropped 0.0/s, would-drop 400.0/s,"), std::string::npos) << text;
  EXPECT_NE(text.find("WOULD-DROP/s"), std::string::npos) << text;
  EXPECT_NE(text.find("  198.18.1.2                                    100.0         0.0        400.0"),
            std::string::npos)
      << text;
  b.policy.flags = 0;
  EXPECT_EQ(dt::render_top(dt::compute_top(a, b), b.policy, "/p", 0).find("dry run"), std::string::npos)
      << "enforcing: no dry-run line";
}

TEST(Top, RenderWithoutPolicyOrTraffic) {
  auto a = snap(kSecond, 5, 0, {row("198.18.1.1", 5, 0)});
  auto b = snap(2 * kSecond, 5, 0, {row("198.18.1.1", 5, 0)});
  const std::string text = dt::render_top(dt::compute_top(a, b), dt_policy{}, "/x", 0);
  EXPECT_NE(text.find("policy: none set"), std::string::npos) << text;
  EXPECT_NE(text.find("sources: 1 in the table, 0 sent in the interval\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("SOURCE"), std::string::npos) << "no table without traffic\n" << text;
}

}  // namespace
