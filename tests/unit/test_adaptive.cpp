// test_adaptive.cpp - the adaptive-limit controller (agent/adaptive/adaptive.h): back-off to a
// fraction of the busiest key's admitted rate, one decrease per hold, multiplicative
// recovery after a busy-free second, the floor, the policy it yields, and the set of
// rules with peers' factors (lowest live one wins, silent peers expire).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "adaptive/adaptive.h"
#include "dataplane/policy.h"
#include "rules/tags.h"

namespace {

constexpr uint64_t kMs = 1'000'000ull;
constexpr uint64_t kSec = 1'000'000'000ull;

// Feeds `limit` a steady busiest-key rate for one second in 200 ms periods ending at t.
void feed(dt::AdaptiveLimit &limit, uint64_t t, double rate) {
  for (uint64_t p = t - 800 * kMs; p <= t; p += 200 * kMs) limit.observe(p, static_cast<uint64_t>(rate / 5), 200 * kMs);
}

// feed(), then a busy signal at t: whether it lowered the factor.
bool feed_then_busy(dt::AdaptiveLimit &limit, uint64_t t, double rate) {
  feed(limit, t, rate);
  return limit.busy(t);
}

TEST(AdaptiveLimit, BusyHalvesTheAdmittedRateNotTheOldLimit) {
  dt::AdaptiveLimit l(10000, {});
  feed(l, 10 * kSec, 2000);  // the traffic uses a fifth of the limit
  EXPECT_NEAR(l.observed(10 * kSec), 2000, 1e-9);
  EXPECT_TRUE(l.busy(10 * kSec)) << "a busy signal must lower the factor";
  EXPECT_NEAR(l.limit(), 1000, 1e-6) << "limit = 0.5 x the admitted 2000/s, not 0.5 x the 10000/s limit";
  EXPECT_EQ(l.decreases(), 1u);
}

TEST(AdaptiveLimit, ObservationIsCappedAtTheLimit) {
  dt::AdaptiveLimit l(1000, {});
  // A burst above the limit.
  ASSERT_TRUE(feed_then_busy(l, 10 * kSec, 5000));
  EXPECT_NEAR(l.limit(), 500, 1e-6) << "a burst over the limit must not keep the limit from halving";
}

TEST(AdaptiveLimit, OneDecreasePerHoldAndSignalsInsideItDelayRecovery) {
  dt::AdaptiveLimit l(1000, {});
  ASSERT_TRUE(feed_then_busy(l, 10 * kSec, 1000));
  const double after_first = l.factor();
  // A storm of signals in the same second: no further decrease.
  for (int i = 1; i < 100; i++) EXPECT_FALSE(l.busy(10 * kSec + i * 5 * kMs)) << "signal " << i << " inside the hold";
  EXPECT_DOUBLE_EQ(l.factor(), after_first);
  EXPECT_EQ(l.busy_signals(), 100u);
  // The last signal was at 10.495 s: no recovery until a second after it.
  EXPECT_FALSE(l.tick(11 * kSec + 400 * kMs)) << "recovery must wait a busy-free second";
  EXPECT_DOUBLE_EQ(l.factor(), after_first);
  EXPECT_TRUE(l.tick(11 * kSec + 600 * kMs));
  EXPECT_GT(l.factor(), after_first);
}

TEST(AdaptiveLimit, SteadyBusySignalsHalveEverySecondDownToTheFloor) {
  dt::AdaptiveLimit l(10000, {});
  double offered = 5000;
  uint64_t t = 10 * kSec;
  std::vector<double> limits;
  for (int s = 0; s < 12; s++, t += kSec) {
    feed(l, t, std::min(offered, l.limit()));  // what the limit let through
    l.busy(t);
    l.tick(t);
    limits.push_back(l.limit());
  }
  EXPECT_NEAR(limits[0], 2500, 1e-6);
  EXPECT_NEAR(limits[1], 1250, 1e-6);
  EXPECT_NEAR(limits[2], 625, 1e-6);
  EXPECT_NEAR(limits.back(), 100, 1e-6) << "the floor (1% of 10000/s) holds";
}

TEST(AdaptiveLimit, RecoveryIsTimesThreePerSecondUpToTheRate) {
  dt::AdaptiveParams p;
  p.floor = 0.01;
  dt::AdaptiveLimit l(10000, p);
  ASSERT_TRUE(feed_then_busy(l, 10 * kSec, 0));
  ASSERT_NEAR(l.factor(), 0.01, 1e-12) << "no traffic observed: straight to the floor";
  // Hold until 11 s, then x3 per second, applied period by period.
  uint64_t t = 10 * kSec;
  for (; t <= 12 * kSec; t += 200 * kMs) l.tick(t);
  EXPECT_NEAR(l.factor(), 0.03, 1e-9) << "one second of recovery";
  for (; t <= 13 * kSec; t += 200 * kMs) l.tick(t);
  EXPECT_NEAR(l.factor(), 0.09, 1e-9) << "two seconds of recovery";
  for (; t <= 20 * kSec; t += 200 * kMs) l.tick(t);
  EXPECT_DOUBLE_EQ(l.factor(), 1.0) << "recovery stops at the configured rate";
}

TEST(AdaptiveLimit, ConstantRecoveryAddsPerSecond) {
  dt::AdaptiveParams p;
  p.recovery_add = 200;
  dt::AdaptiveLimit l(10000, p);
  ASSERT_TRUE(feed_then_busy(l, 10 * kSec, 0));
  for (uint64_t t = 10 * kSec; t <= 14 * kSec; t += 200 * kMs) l.tick(t);
  EXPECT_NEAR(l.limit(), 100 + 3 * 200, 1e-6) << "floor 100/s, then +200/s for 3 s";
}

TEST(AdaptiveLimit, WithoutAnyMeasurementABusySignalHalvesTheLimit) {
  dt::AdaptiveLimit l(1000, {});
  ASSERT_TRUE(l.busy(100 * kMs)) << "a busy signal right after start must still back off";
  EXPECT_NEAR(l.limit(), 500, 1e-6) << "no measurement yet: half the limit, not the floor";
  for (int i = 0; i < 50; i++) EXPECT_FALSE(l.busy(100 * kMs + i * kMs)) << "unmeasured signal " << i;
  EXPECT_NEAR(l.limit(), 500, 1e-6) << "a storm before the first measurement lowers the limit once";
  // The first measured signal is not held back by that provisional decrease.
  l.observe(200 * kMs, 80, 200 * kMs);  // 400/s admitted
  ASSERT_TRUE(l.busy(250 * kMs));
  EXPECT_NEAR(l.limit(), 200, 1e-6) << "half the measured 400/s";
}

TEST(AdaptiveLimit, LongPeriodsUseTheLatestMeasurement) {
  dt::AdaptiveLimit l(1000, {});
  l.observe(2 * kSec, 1600, 2 * kSec);  // one 2 s period: 800/s
  EXPECT_NEAR(l.observed(3600 * kMs), 800, 1e-9) << "the only measurement is older than a second";
  ASSERT_TRUE(l.busy(3600 * kMs));
  EXPECT_NEAR(l.limit(), 400, 1e-6);
}

TEST(AdaptivePolicy, ScalesTheRateKeepsTheBurstWindowAndAtLeastOneToken) {
  dt_policy base{};
  std::string err;
  ASSERT_TRUE(dt::make_policy(1000, 100, &base, &err)) << err;
  const dt_policy half = dt::adaptive_policy(base, 0.5);
  EXPECT_NEAR(dt::policy_rate(half), 500, 1e-6);
  EXPECT_EQ(half.burst_ns, base.burst_ns) << "the burst window in time stays";
  EXPECT_EQ(dt::policy_burst(half), 50u) << "so the burst in tokens halves";
  const dt_policy tiny = dt::adaptive_policy(base, 0.001);
  EXPECT_NEAR(dt::policy_rate(tiny), 1, 1e-6);
  EXPECT_GE(tiny.burst_ns, tiny.interval_ns) << "never less than one token";
  const dt_policy same = dt::adaptive_policy(base, 1.0);
  EXPECT_EQ(std::memcmp(&base, &same, sizeof base), 0) << "factor 1: the policy as is";
  dt_policy allow = base;
  allow.action = DT_ACT_ALLOW;
  EXPECT_EQ(dt::adaptive_policy(allow, 0.5).interval_ns, base.interval_ns) << "only throttle policies scale";
}

dt::AdaptiveRuleSpec spec(const char *name, uint32_t index, double rate, bool cluster = true) {
  dt::AdaptiveRuleSpec s;
  s.kind = dt::AdaptiveKind::Packet;
  s.name = name;
  s.index = index;
  s.rate = rate;
  s.params.cluster = cluster;
  return s;
}

dt::ReportEntry entry(uint32_t rule, uint8_t last_byte, uint64_t hits) {
  dt::ReportEntry e{};
  e.key.addr[10] = e.key.addr[11] = 0xff;
  e.key.addr[12] = 198;
  e.key.addr[13] = 18;
  e.key.addr[15] = last_byte;
  e.key.rule = rule;
  e.hits = hits;
  return e;
}

TEST(AdaptiveSet, BusiestKeySumsThisHostAndPeersHits) {
  dt::AdaptiveSet set;
  set.configure({spec("api", 3, 1000)}, kSec);
  uint64_t t = 10 * kSec;
  // Source .1 is sprayed over three hosts: 40 here + 40 + 40 from peers per period;
  // source .2 is 100 here alone. The busiest key is .1 at 120 per 200 ms = 600/s.
  for (int p = 0; p < 5; p++, t += 200 * kMs) {
    const std::vector<dt::ReportEntry> local = {entry(3, 1, 40), entry(3, 2, 100), entry(5, 9, 1000)};
    set.add_packet_hits(local);
    // A peer numbers the rule 0: its rule list maps 0 -> our 3.
    const std::vector<dt::ReportEntry> peer = {entry(0, 1, 80)};
    const std::vector<int64_t> map = {3};
    set.add_packet_hits(peer, map);
    set.on_period(t, 200 * kMs);
  }
  const auto st = set.status(t - 200 * kMs);
  ASSERT_EQ(st.size(), 1u);
  EXPECT_NEAR(st[0].observed, 600, 1e-6) << "busiest key = .1 summed over the hosts; rule 5 is not adaptive";
}

TEST(AdaptiveSet, LowestLivePeerFactorAppliesAndExpires) {
  dt::AdaptiveSet set;
  set.configure({spec("api", 1, 1000), spec("solo", 2, 1000, false)}, kSec);
  uint64_t t = 10 * kSec;
  set.on_peer_factors("h2", {{false, "api", 250'000}, {false, "solo", 100'000}, {false, "other", 1}}, t);
  set.on_peer_factors("h3", {{false, "api", 500'000}}, t);
  EXPECT_TRUE(set.on_period(t, 200 * kMs)) << "a peer's lower factor changes what applies";
  auto f = set.factors(dt::AdaptiveKind::Packet, 3);
  EXPECT_DOUBLE_EQ(f[1], 0.25) << "the lowest live peer's factor";
  EXPECT_DOUBLE_EQ(f[2], 1.0) << "a local-scope rule ignores peers";
  EXPECT_DOUBLE_EQ(f[0], 1.0) << "not adaptive";
  auto st = set.status(t);
  EXPECT_EQ(st[0].lowest_from, "h2");
  EXPECT_DOUBLE_EQ(st[0].local_factor, 1.0);
  // h2 goes silent; h3 keeps reporting: after the hold, h3's factor applies.
  for (int i = 1; i <= 6; i++) {
    set.on_peer_factors("h3", {{false, "api", 500'000}}, t + i * 200 * kMs);
    set.on_period(t + i * 200 * kMs, 200 * kMs);
  }
  EXPECT_DOUBLE_EQ(set.factors(dt::AdaptiveKind::Packet, 3)[1], 0.5) << "a silent peer's factor expires";
  set.on_peer_factors("h4", {{false, "api", 1}}, t + 7 * 200 * kMs);
  set.on_period(t + 7 * 200 * kMs, 200 * kMs);
  EXPECT_DOUBLE_EQ(set.factors(dt::AdaptiveKind::Packet, 3)[1], 0.01) << "a peer cannot take us below our floor";
  // Only cluster-scoped rules are reported, with our own factor.
  const auto rep = set.report_factors();
  ASSERT_EQ(rep.size(), 1u);
  EXPECT_EQ(rep[0].name, "api");
  EXPECT_EQ(rep[0].factor_ppm, 1'000'000u);
}

TEST(AdaptiveSet, BusyByNameAndReconfigureKeepsState) {
  dt::AdaptiveSet set;
  set.configure({spec("api", 1, 1000)}, kSec);
  const uint64_t t = 10 * kSec;
  EXPECT_FALSE(set.busy(dt::AdaptiveKind::Packet, "nope", "test", t)) << "no such adaptive rule";
  EXPECT_FALSE(set.busy(dt::AdaptiveKind::Tag, "api", "test", t)) << "kinds are separate";
  EXPECT_TRUE(set.busy(dt::AdaptiveKind::Packet, "api", "test", t));
  EXPECT_TRUE(set.on_period(t, 200 * kMs));
  const double low = set.factors(dt::AdaptiveKind::Packet, 2)[1];
  EXPECT_NEAR(low, 0.5, 1e-12) << "nothing measured yet: half the limit";
  // A reload renumbers the rule: its state follows its name.
  set.configure({spec("new", 1, 1000), spec("api", 7, 1000)}, kSec);
  set.on_period(t + 1, 200 * kMs);
  const auto f = set.factors(dt::AdaptiveKind::Packet, 8);
  EXPECT_DOUBLE_EQ(f[7], low) << "state kept under the same name";
  EXPECT_DOUBLE_EQ(f[1], 1.0) << "a new rule starts at 1";
}

TEST(TagTableFactors, ScaledRatesApplyToExistingBuckets) {
  dt::TagTable table;
  std::string err;
  dt::TagRule r;
  r.prefix = "api:";
  r.rate = 10;
  r.burst = 10;
  ASSERT_TRUE(table.replace_rules({r}, &err)) << err;
  const uint64_t t = 100 * kSec;
  for (int i = 0; i < 10; i++) ASSERT_TRUE(table.admit("api:x", t)) << "burst token " << i;
  ASSERT_FALSE(table.admit("api:x", t));
  EXPECT_EQ(table.rule_of("api:x"), std::optional<uint32_t>(0));
  EXPECT_EQ(table.rule_of("web:x"), std::nullopt);
  EXPECT_EQ(table.rule_prefix_of("api:x"), std::optional<std::string>("api:"));
  EXPECT_EQ(table.rule_prefix_of("web:x"), std::nullopt);
  table.set_factors({0.1});  // 1 per second, burst 10 x 0.1 = 1 token
  // Buckets pick the change up when next used, keeping their balance in tokens but
  // capped at the new burst: 0.5 s at the old 10/s gave 5 tokens, of which one stays.
  EXPECT_TRUE(table.admit("api:x", t + 500 * kMs)) << "the balance, capped at the scaled burst of one token";
  EXPECT_FALSE(table.admit("api:x", t + 500 * kMs)) << "the scaled burst must cap the balance";
  EXPECT_FALSE(table.admit("api:x", t + 1400 * kMs)) << "at 1/s the next token is due at +1.5 s";
  EXPECT_TRUE(table.admit("api:x", t + 1600 * kMs)) << "one token a second at factor 0.1";
  table.set_factors({1.0});
  EXPECT_FALSE(table.admit("api:x", t + 1650 * kMs)) << "0.05 s at 1/s plus nothing yet";
  EXPECT_TRUE(table.admit("api:x", t + 1800 * kMs)) << "back at 10/s: a token within 0.15 s";
}

}  // namespace
