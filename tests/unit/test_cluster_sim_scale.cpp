// test_cluster_sim_scale.cpp - the accuracy bound of docs/cluster-scale.md and the summing
// hub pair, in the simulator (tools/sim/cluster_sim.h): a client sprayed over 10 and 100
// hosts stays near one global budget, and a summing hub sums (a host hears one entry per
// source and hub period, not one per peer).
#include <gtest/gtest.h>

#include <algorithm>

#include "sim_run.h"

namespace {

using dt::sim::Client;
using dt::sim::kSec;
using dt::sim::Scenario;
using dt::sim::Scheme;
using dt::test::run_sim;

// The scale scenario (docs/cluster-scale.md): `simulate --hosts N --rate 100 --burst 50
// --duration 10s --clients 2000,50 --seed S`: c0 offers 20x the rate round-robin over every
// host, c1 is under it.
Scenario sprayed(size_t hosts, Scheme scheme, uint64_t seed) {
  Scenario s;
  s.hosts = hosts;
  s.random_phase = true;
  s.scheme = scheme;
  s.seed = seed;
  s.clients = {Client{"c0", 2000, 0, 0, {}}, Client{"c1", 50, 0, 0, {}}};
  // As build/simulate's default and the agent: early ticks a quarter period apart, at which
  // shared sources near their limit go to every peer (agent/cluster_core/shared_early.h).
  if (scheme == Scheme::Owner) s.early_report = s.shared_period = s.period / 4;
  return s;
}

double ratio(const dt::sim::ClientStats &c) { return static_cast<double>(c.admitted()) / static_cast<double>(c.ideal); }

// The bound (docs/cluster-scale.md "The bound"): hosts admit then pay back, so the 10 s ratio
// depends on where the run ends in that cycle; a cycle's excess (every host sees the debt
// paid at once and admits until the next reports land) is paid back within the cycle.
// Measured over seeds 1 to 5: the mesh at most 1.039 at 10 hosts and 1.045 at 100; the
// owner scheme, whose shared sources near their limit go early, within 1.01 at 100.
TEST(ClusterSimScale, SprayedClientStaysNearOneBudgetAt10And100Hosts) {
  for (Scheme scheme : {Scheme::Mesh, Scheme::Owner}) {
    for (size_t hosts : {10, 100}) {
      double sum = 0;
      for (uint64_t seed = 1; seed <= 5; seed++) {
        auto c = run_sim(sprayed(hosts, scheme, seed));
        const double r = ratio(c->clients()[0]);
        sum += r;
        EXPECT_LE(r, 1.05) << dt::sim::scheme_name(scheme) << ", " << hosts << " hosts, seed " << seed;
        EXPECT_GE(r, 0.98) << dt::sim::scheme_name(scheme) << ", " << hosts << " hosts, seed " << seed;
        EXPECT_EQ(c->clients()[1].admitted(), c->clients()[1].offered)
            << hosts << " hosts, seed " << seed << ": c1 is under its rate and must lose nothing";
      }
      EXPECT_LE(sum / 5, 1.05) << dt::sim::scheme_name(scheme) << ", " << hosts << " hosts: mean over seeds 1-5";
    }
  }
}

// A summing hub sends per period one entry per source, whatever the number of hosts that
// served it: at 100 hosts with two clients, a host hears at most 2 hubs x 4 hub periods
// (50 ms in a 200 ms period) x 2 sources, where the mesh brings it 99 peers' entries.
TEST(ClusterSimScale, SummingHubSendsOneEntryPerSourceNotOnePerHost) {
  auto in_max = [](Scheme scheme) {
    auto c = run_sim(sprayed(100, scheme, 1));
    uint64_t max = 0;
    for (size_t h = 0; h < 100; h++) max = std::max(max, c->traffic(h, true).max.entries);
    return max;
  };
  EXPECT_LE(in_max(Scheme::Hub), 2u * 4u * 2u) << "a host hears the hubs' sums, one entry per source";
  EXPECT_GE(in_max(Scheme::Mesh), 50u) << "the mesh brings every peer's entries";
  auto c = run_sim(sprayed(100, Scheme::Hub, 1));
  ASSERT_EQ(c->hub_count(), 2u);
  for (size_t j = 0; j < 2; j++) {
    const auto in = c->hub_traffic(j, true), out = c->hub_traffic(j, false);
    EXPECT_GE(in.total.messages, 100u * 45u) << "hub " << j << " hears every host's report each period";
    EXPECT_LE(out.max.entries, 100u * 4u * 2u) << "hub " << j << ": at most 2 sources a hub period, to 100 hosts";
  }
  uint64_t own = 0;
  for (size_t h = 0; h < 100; h++) own += c->aggregate_counters(h).own_hits_subtracted;
  const uint64_t admitted = c->clients()[0].admitted() + c->clients()[1].admitted();
  EXPECT_GE(own, admitted * 9 / 10) << "every host takes its own hits out of the sums (it charged them already)";
  EXPECT_LE(own, admitted);
  EXPECT_LE(ratio(c->clients()[0]), 1.12) << "100 hosts through the hubs";
  EXPECT_EQ(c->clients()[1].admitted(), c->clients()[1].offered) << "c1 is under its rate";
}

// The active hub dies: every host switches to the other one (and replays its kept sums);
// the client is charged again from then on, and c1 loses nothing.
TEST(ClusterSimScale, HostsFailOverToTheOtherHub) {
  Scenario s = sprayed(10, Scheme::Hub, 1);
  s.hub_fails_at = 3 * kSec;
  auto c = run_sim(s);
  std::string active;
  for (size_t h = 0; h < 10; h++) {
    const dt::AggregateCounters a = c->aggregate_counters(h);
    EXPECT_EQ(a.failovers, 1u) << "h" << h;
    EXPECT_GT(a.replayed, 0u) << "h" << h << " replays the other hub's kept sums";
    if (h == 0) active = a.active_hub;
    EXPECT_EQ(a.active_hub, active) << "every host on the same hub";
  }
  // 1 s of silence (5 periods) before the switch: at most every host's refill for it.
  const auto &c0 = c->clients()[0];
  EXPECT_LE(c0.admitted(), c0.budget + 10 * 100 + 100) << "over-admission bounded by the silence";
  EXPECT_EQ(c->clients()[1].admitted(), c->clients()[1].offered);
}

}  // namespace

namespace {

// The lever on that cycle (Scenario::shared_period, the agent's early ticks): the hits of
// shared sources near their limit also go to every peer every 50 ms. At 100 hosts every
// seed 1-5 stays within 1.05 (measured: at most 1.009) for about 13% more bytes; without
// it (--shared-period 0) seeds 2 and 5 exceed it.
TEST(ClusterSimScale, SharedReportsEvery50msKeepEverySeedWithinTheTarget) {
  for (uint64_t seed = 1; seed <= 5; seed++) {
    Scenario s = sprayed(100, Scheme::Owner, seed);
    auto fast = run_sim(s);
    ASSERT_EQ(s.shared_period, 50 * dt::sim::kMs) << "the default of the owner scheme";
    s.shared_period = 0;
    auto plain = run_sim(s);
    EXPECT_LE(ratio(fast->clients()[0]), 1.05) << "seed " << seed;
    EXPECT_EQ(fast->clients()[1].admitted(), fast->clients()[1].offered) << "seed " << seed;
    uint64_t bytes_plain = 0, bytes_fast = 0;
    for (size_t h = 0; h < 100; h++)
      bytes_plain += plain->traffic(h, true).total.bytes, bytes_fast += fast->traffic(h, true).total.bytes;
    EXPECT_LE(bytes_fast, bytes_plain * 5 / 4) << "seed " << seed << ": only shared sources near their limit go early";
  }
}

}  // namespace
