// test_first_contact.cpp - early reports of sources new to a host (cluster_core/early_report.h)
// and what they buy in the simulator (docs/cluster-scale.md "First contact"), and a host
// joining a running cluster ("A node joining a running cluster").
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "cluster_core/early_report.h"
#include "cluster_core/join_guard.h"
#include "report_fixtures.h"
#include "sim/cluster_sim.h"
#include "sim_run.h"

namespace {

using dt::EarlyReport;
using dt::EarlyReportOptions;
using dt::ReportEntry;
using namespace dt::sim;
using dt::test::run_sim;

using dt::test::v4;  // source number i as a key (report_fixtures.h)

// The sources' numbers (v4(i): i), in order.
std::vector<int> ids(const std::vector<dt_key> &ks) {
  std::vector<int> out;
  for (const dt_key &k : ks) out.push_back(k.addr[14] << 8 | k.addr[15]);
  return out;
}
std::vector<int> ids(const std::vector<ReportEntry> &entries) {
  std::vector<dt_key> ks;
  for (const ReportEntry &e : entries) ks.push_back(e.key);
  return ids(ks);
}

uint64_t hits_of(const std::vector<ReportEntry> &entries, const dt_key &k) {
  uint64_t n = 0;
  for (const ReportEntry &e : entries)
    if (memcmp(e.key.addr, k.addr, sizeof k.addr) == 0) n += e.hits;
  return n;
}

TEST(EarlyReport, TicksAQuarterPeriodApartAndNoneRightBeforeThePeriodsEnd) {
  EarlyReport e(EarlyReportOptions{200 * kMs, 50 * kMs, 2});
  e.period_reported({}, 1000 * kMs);
  EXPECT_EQ(e.next_tick(1000 * kMs), 1050 * kMs);
  EXPECT_EQ(e.next_tick(1050 * kMs), 1100 * kMs);
  EXPECT_EQ(e.next_tick(1100 * kMs), 1150 * kMs);
  EXPECT_EQ(e.next_tick(1150 * kMs), UINT64_MAX) << "1200 ms is the period's own report";
  EXPECT_FALSE(EarlyReport(EarlyReportOptions{200 * kMs, 0, 2}).enabled()) << "delay 0: off";
  EXPECT_EQ(EarlyReport(EarlyReportOptions{200 * kMs, 0, 2}).next_tick(0), UINT64_MAX);
}

TEST(EarlyReport, OnlySourcesNotReportedInThisPeriodOrTheOneBeforeAreNew) {
  EarlyReport e(EarlyReportOptions{200 * kMs, 50 * kMs, 1});
  e.period_reported({{v4(1), 5}}, 0);  // v4(1) was served last period
  EXPECT_EQ(ids(e.pick_new({v4(1), v4(2)})), std::vector<int>{2}) << "v4(1) is known; v4(2) is new";
  EXPECT_TRUE(e.pick_new({v4(2)}).empty()) << "a source goes early once a period";
  e.period_reported({{v4(2), 3}, {v4(3), 1}}, 200 * kMs);
  EXPECT_TRUE(e.pick_new({v4(2), v4(3)}).empty()) << "reported in the period before";
  e.period_reported({{v4(2), 3}}, 400 * kMs);
  EXPECT_TRUE(e.pick_new({v4(2)}).empty()) << "reported in every period";
  EXPECT_EQ(ids(e.pick_new({v4(1), v4(3)})), (std::vector<int>{1, 3}))
      << "idle for a whole period: new again (its peers' buckets may have refilled)";
}

TEST(EarlyReport, FewerThanMinHitsAreHeldUntilTheyHaveEnoughOrThePeriodEnds) {
  EarlyReport e(EarlyReportOptions{200 * kMs, 50 * kMs, 2});
  e.period_reported({}, 0);
  ASSERT_EQ(e.due({v4(1), v4(2)}).size(), 2u);
  std::vector<ReportEntry> sent = e.tick({{v4(1), 1}, {v4(2), 3}});
  EXPECT_EQ(ids(sent), std::vector<int>{2}) << "one hit of v4(1) is not enough for an early report";
  EXPECT_EQ(hits_of(sent, v4(2)), 3u);
  std::vector<dt_key> again = e.due({});
  ASSERT_EQ(again.size(), 1u) << "the held source is collected again at the next tick";
  sent = e.tick({{v4(1), 1}});
  EXPECT_EQ(hits_of(sent, v4(1)), 2u) << "held and new hits go out together";
  EXPECT_TRUE(e.take_held().empty());
  e.due({v4(3)});
  EXPECT_TRUE(e.tick({{v4(3), 1}}).empty());
  const std::vector<ReportEntry> held = e.take_held();
  EXPECT_EQ(hits_of(held, v4(3)), 1u) << "the period's report takes what is still held: no hit is lost";
}

TEST(EarlyReport, AFloodOfNewSourcesCostsAtMostMaxPerTickATick) {
  EarlyReport e(EarlyReportOptions{200 * kMs, 50 * kMs, 2, 100});
  e.period_reported({}, 0);
  std::vector<dt_key> flood;
  for (uint32_t i = 0; i < 1000; i++) flood.push_back(v4(i));
  EXPECT_EQ(e.due(flood).size(), 100u);
  std::vector<ReportEntry> one_hit;
  for (uint32_t i = 0; i < 100; i++) one_hit.push_back({v4(i), 1});
  EXPECT_TRUE(e.tick(one_hit).empty());
  EXPECT_EQ(e.due({}).size(), 100u) << "only what was picked is held and collected again";
}

TEST(EarlyReport, MergeSumsTheHitsOfASourceCollectedTwice) {
  const auto merged = dt::merge_entries({{v4(1), 2}, {v4(2), 1}}, {{v4(1), 5}, {v4(3), 7}});
  EXPECT_EQ(merged.size(), 3u);
  EXPECT_EQ(hits_of(merged, v4(1)), 7u);
  EXPECT_EQ(hits_of(merged, v4(3)), 7u);
}

// A short tick for new sources must not read every shared bucket as often (cluster_early.cpp).
TEST(EarlyReport, SharedSourcesRideTheTicksAtMostEveryQuarterPeriod) {
  constexpr uint64_t ms = 1'000'000;
  EXPECT_EQ(dt::shared_early_pace(200 * ms, 50 * ms), 50 * ms);  // the default: every tick
  EXPECT_EQ(dt::shared_early_pace(200 * ms, 10 * ms), 50 * ms);
  EXPECT_EQ(dt::shared_early_pace(200 * ms, 80 * ms), 80 * ms);
}

TEST(JoinGuard, AJoinerChargesEachPeerReportedSourceOneBurstOnceWithinTheWindow) {
  dt::JoinGuard g(dt::JoinGuardOptions{2000 * kMs, 25, 1});
  g.heard("a", 40, 100 * kMs);  // the first peer message heard: period 40, the peer ran before us
  g.heard("a", 1, 200 * kMs);   // later ones change nothing
  EXPECT_TRUE(g.active(2099 * kMs));
  EXPECT_EQ(g.extra("a", 40, v4(1), 50, 300 * kMs), 50u) << "the first debit of a source in flight: one burst more";
  EXPECT_EQ(g.extra("a", 41, v4(1), 50, 400 * kMs), 0u) << "once";
  g.heard("b", 7, 500 * kMs);  // a peer that started after the first, heard later
  EXPECT_EQ(g.extra("b", 8, v4(3), 50, 600 * kMs), 50u) << "in flight when we first heard b";
  EXPECT_EQ(g.extra("a", 40, v4(2), 50, 2100 * kMs), 0u) << "the window is over";
  EXPECT_EQ(g.charged(), 2u);

  dt::JoinGuard together(dt::JoinGuardOptions{2000 * kMs, 25, 1});
  together.heard("a", 2, 100 * kMs);  // a peer that started with us
  EXPECT_FALSE(together.active(200 * kMs)) << "agents that start together start full";
  EXPECT_EQ(together.extra("a", 2, v4(1), 50, 200 * kMs), 0u);

  const std::vector<dt_policy> policies = {dt_policy{10'000'000, 500'000'000, 0, 32, 128, 0, {}},
                                           dt_policy{0, 0, 0, 32, 128, 0, {}}};
  EXPECT_EQ(dt::rule_burst_hits(policies), (std::vector<uint64_t>{50, 0})) << "rate 100/s, burst 50; no rate";
}

// An agent that starts a couple of seconds after its peers hears a running cluster; a client
// that first comes after that has full buckets everywhere and must keep its burst here too
// (5 agents started one by one on a loaded machine: the last one emptied a new client's
// bucket and debited it 50 more than its peers had admitted).
TEST(JoinGuard, ASourceThatAppearedAfterTheJoinStartsFull) {
  dt::JoinGuard g(dt::JoinGuardOptions{2000 * kMs, 10, 1});
  g.heard("h1", 14, 100 * kMs);  // h1 has counted 14 periods: we joined a running cluster
  g.heard("h2", 12, 150 * kMs);
  ASSERT_TRUE(g.active(500 * kMs));
  EXPECT_EQ(g.extra("h1", 17, v4(1), 50, 700 * kMs), 0u) << "first reported 3 periods after we first heard h1: new";
  EXPECT_EQ(g.extra("h2", 12, v4(1), 50, 710 * kMs), 0u)
      << "decided at its first debit: a later in-flight one does not empty it";
  EXPECT_EQ(g.extra("h2", 13, v4(2), 50, 720 * kMs), 50u) << "in flight when we first heard h2: emptied";
  EXPECT_EQ(g.extra("h9", 13, v4(4), 50, 730 * kMs), 0u) << "a sender never heard names no period in flight";
  EXPECT_EQ(g.charged(), 1u);
}

// First contact as docs/cluster-scale.md measures it: a new client sprayed at 2000/s over
// 40 hosts (rate 100, burst 50: 150 in its first second).
Scenario first_contact(uint64_t seed, Ns early) {
  Scenario s;
  s.hosts = 40;
  s.scheme = Scheme::Owner;
  s.random_phase = true;
  s.seed = seed;
  s.duration = kSec;
  s.early_report = early;
  s.clients = {Client{"c0", 2000, 0, 0, {}}};
  return s;
}

TEST(ClusterSimFirstContact, ANewSprayedClientGetsAtMostOneAndAHalfBudgetsInItsFirstSecond) {
  uint64_t worst_before = 0, sum_before = 0, sum_now = 0;
  for (uint64_t seed = 1; seed <= 5; seed++) {
    const uint64_t before = run_sim(first_contact(seed, 0))->clients()[0].admitted();
    const uint64_t now = run_sim(first_contact(seed, 50 * kMs))->clients()[0].admitted();
    worst_before = std::max(worst_before, before);
    sum_before += before, sum_now += now;
    EXPECT_LE(now, 225u) << "seed " << seed
                         << ": 1.5x the first second's budget of 150 (without early reports: " << before << ")";
  }
  EXPECT_GT(worst_before, 225u) << "without early reports some seed exceeds 1.5x (else this test proves nothing)";
  EXPECT_LT(sum_now + 5 * 20, sum_before) << "early reports save at least 20 a seed on average";
}

TEST(ClusterSimFirstContact, StickyClientsKeepTheirBurstAndLightSpraysCostNoMore) {
  Scenario sticky = first_contact(1, 50 * kMs);
  sticky.lb = LoadBalancer::Sticky;
  sticky.duration = 2 * kSec;
  sticky.clients.clear();
  for (int i = 0; i < 400; i++) sticky.clients.push_back(Client{"t" + std::to_string(i), 20, 0, kSec, {}});
  auto c = run_sim(sticky);
  uint64_t admitted = 0, offered = 0;
  for (const auto &cl : c->clients()) admitted += cl.admitted(), offered += cl.offered;
  EXPECT_EQ(admitted, offered) << "a client that always lands on one host keeps its whole burst";

  Scenario light = first_contact(1, 50 * kMs);
  light.duration = 2 * kSec;
  light.clients.clear();
  for (uint32_t i = 0; i < 4000; i++)
    light.clients.push_back(Client{"s" + std::to_string(i), 0, 0, 0, {{i * kMs / 4, 1, -1}}});
  auto messages = [&](Ns early) {
    light.early_report = early;
    auto l = run_sim(light);
    uint64_t n = 0, early_n = 0;
    for (size_t h = 0; h < light.hosts; h++)
      n += l->traffic(h, true).total.messages, early_n += l->hosts()[h].early_messages;
    return std::make_pair(n, early_n);
  };
  const auto [without, none] = messages(0);
  const auto [with, early_msgs] = messages(50 * kMs);
  EXPECT_EQ(early_msgs, 0u) << "one-packet sources never have the 2 hits an early report needs";
  EXPECT_EQ(with, without) << "a spray of light sources costs no message more";
}

// A host joining a running cluster: c0 sprayed over 10 hosts at 2000/s, throttled for 5 s
// when host 9 joins; what the cluster admits of it in the 5 s after, and the joiner alone.
// A client only the joiner serves (a burst of 50 to it at 5.5 s) keeps its burst.
struct JoinRun {
  uint64_t cluster = 0, joiner = 0, local_client = 0;
};
JoinRun join_run(uint64_t seed, bool join, bool empty) {
  constexpr size_t kHosts = 10;
  Scenario s = first_contact(seed, 50 * kMs);
  s.hosts = kHosts;
  s.duration = 10 * kSec;
  s.bin = 5 * kSec;
  s.join_host = join ? static_cast<int>(kHosts - 1) : -1;
  s.join_at = 5 * kSec;
  s.join_empty = empty;
  s.clients.push_back(Client{"local", 0, 0, 0, {{5500 * kMs, 50, static_cast<int>(kHosts - 1)}}});
  auto c = run_sim(s);
  return {c->admitted_between(0, 5 * kSec, 10 * kSec), c->admitted_between(0, 5 * kSec, 10 * kSec, kHosts - 1),
          c->clients()[1].admitted()};
}

TEST(ClusterSimJoin, AJoinerOverAdmitsAThrottledSourceByAtMostABurstAndNotAtAllStartingEmpty) {
  uint64_t over_full = 0;
  for (uint64_t seed = 1; seed <= 5; seed++) {
    const JoinRun none = join_run(seed, false, false), full = join_run(seed, true, false),
                  empty = join_run(seed, true, true);
    // The 5 s after the join admit about 500 (rate 100/s) give or take the cluster's
    // admit-then-pay-back cycle (+-20 between seeds).
    EXPECT_LE(full.cluster, none.cluster + 50 + 20) << "seed " << seed << ": a full start costs at most one burst";
    EXPECT_LE(empty.cluster, none.cluster + 20) << "seed " << seed << ": an empty start costs nothing";
    EXPECT_LT(empty.joiner, full.joiner) << "seed " << seed << ": a full joiner takes the others' share";
    EXPECT_EQ(empty.local_client, 50u) << "seed " << seed << ": a client only the joiner serves keeps its burst";
    over_full += full.cluster - std::min(full.cluster, none.cluster);
  }
  EXPECT_GE(over_full, 5 * 20u) << "a full start over-admits (else this test proves nothing)";
}

}  // namespace
