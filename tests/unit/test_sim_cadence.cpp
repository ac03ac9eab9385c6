// test_sim_cadence.cpp - the agent's cadence (cluster_core/report_cadence.h) in the simulator:
// under many one-packet sources each host's report bytes in shrink to a few times what it
// served (with link liveness, the agent's default with keys in a full mesh: at most twice),
// without changing what a sprayed client is admitted; with link liveness a cut peer is
// still noticed.
#include <gtest/gtest.h>

#include <string>

#include "sim/cluster_sim.h"

namespace {

using dt::sim::Client;
using dt::sim::ClusterSim;
using dt::sim::Scenario;

constexpr dt::sim::Ns kMs = 1'000'000;
constexpr dt::sim::Ns kSec = 1000 * kMs;

// 20 hosts, owners; `light` one-packet sources over [0.5 s, 2.5 s) of 3 s (from when every
// host has heard every peer: until then owners wait and every source goes to every peer,
// cluster_core/report_planner.h), and `rate` for c0.
Scenario light_spray(bool cadence, uint32_t light, double rate) {
  Scenario s;
  s.hosts = 20;
  s.duration = 3 * kSec;
  s.scheme = dt::sim::Scheme::Owner;
  s.random_phase = true;
  s.cadence = cadence;
  s.clients.push_back(Client{"c0", rate, 0, 0, {}});
  for (uint32_t i = 0; i < light; i++) {
    Client c;
    c.name = "s" + std::to_string(i);
    c.bursts.push_back({500 * kMs + 2 * kSec * i / light, 1, -1});
    s.clients.push_back(c);
  }
  return s;
}

// The mean host's report bytes in over the run.
double mean_bytes_in(const ClusterSim &c) {
  double sum = 0;
  for (size_t h = 0; h < c.scenario().hosts; h++) sum += static_cast<double>(c.traffic(h, true).total.bytes);
  return sum / static_cast<double>(c.scenario().hosts);
}

std::unique_ptr<ClusterSim> run(const Scenario &s) {
  std::string err;
  auto c = ClusterSim::create(s, &err);
  EXPECT_TRUE(c) << err;
  if (c) c->run();
  return c;
}

TEST(SimCadence, LightSourcesCostAFewTimesWhatAHostServedNotItsPeersChatter) {
  constexpr uint32_t kLight = 20000;  // 1,000 per host: 5,000 bytes of entries each
  auto every = run(light_spray(false, kLight, 0));
  auto agent = run(light_spray(true, kLight, 0));
  ASSERT_TRUE(every && agent);
  const double served = 5.0 * kLight / 20;
  const double before = mean_bytes_in(*every) / served, after = mean_bytes_in(*agent) / served;
  EXPECT_GT(before, 5.0) << "every period to every peer: headers and signatures dominate";
  EXPECT_LT(after, before / 2.5) << "quiet periods and batches must cut the bytes in (before " << before << "x)";
  EXPECT_LT(after, 3.0) << "bytes in per byte served, with the cadence";
}

TEST(SimCadence, ASprayedClientIsAdmittedAsBefore) {
  auto every = run(light_spray(false, 0, 2000));
  auto agent = run(light_spray(true, 0, 2000));
  ASSERT_TRUE(every && agent);
  const double a = static_cast<double>(every->clients()[0].admitted());
  const double b = static_cast<double>(agent->clients()[0].admitted());
  EXPECT_GT(a, 300.0) << "the sprayer was admitted about its 3 s budget (350)";
  EXPECT_NEAR(b, a, a * 0.01) << "hits of 2 or more per period go at once: the cadence must not change accuracy";
}

Scenario linked(Scenario s) {
  s.cadence = true;
  s.link_liveness = true;
  return s;
}

// The target (docs/cluster-scale.md "Cadence"): the light spray costs each host at
// most 2x the 5 bytes per source it served. The run lasts until the last batch (1 s after
// its last entry) has gone; the bytes include every peer's first message (its start).
TEST(SimCadence, WithLinkLivenessLightSourcesCostAtMostTwiceWhatAHostServed) {
  constexpr uint32_t kLight = 20000;
  Scenario s = light_spray(true, kLight, 0);
  s.duration = 8 * kSec;
  for (Client &c : s.clients)  // the spray from 1 s to 3 s, a running cluster's (its first messages are before)
    for (auto &b : c.bursts) b.at += kSec;
  auto signed_hb = run(s);
  auto link = run(linked(s));
  ASSERT_TRUE(signed_hb && link);
  const double served = 5.0 * kLight / 20;
  const double before = mean_bytes_in(*signed_hb) / served, after = mean_bytes_in(*link) / served;
  EXPECT_LT(after, 2.0) << "bytes in per byte served, heartbeats every 20 s, a batch per owner once quiet";
  EXPECT_LT(after, before / 1.5) << "link liveness must cut the bytes of the cadence (" << before << "x)";
  uint64_t entries = 0;
  for (size_t h = 0; h < s.hosts; h++) entries += link->traffic(h, true).total.entries;
  EXPECT_GE(entries, kLight * 9 / 10)
      << "every light source reached its owner within the run (but the owners' own: 1 in 20)";
}

TEST(SimCadence, WithLinkLivenessASprayedClientIsAdmittedAsBefore) {
  auto before = run(light_spray(true, 0, 2000));
  auto link = run(linked(light_spray(true, 0, 2000)));
  ASSERT_TRUE(before && link);
  const double a = static_cast<double>(before->clients()[0].admitted());
  const double b = static_cast<double>(link->clients()[0].admitted());
  EXPECT_NEAR(b, a, a * 0.01) << "hits of 2 or more per period go at once, whatever the batch wait";
}

TEST(SimCadence, WithLinkLivenessACutPeerIsDownAndBackAfterTheHeal) {
  Scenario s = linked(light_spray(true, 0, 2000));
  s.hosts = 3;
  s.duration = 10 * kSec;
  s.net.partitions = {{3 * kSec, 6 * kSec, {0, 1, 1}}};  // host 0 | hosts 1, 2
  auto c = run(s);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->hosts()[0].peer_downs, 2u) << "host 0 must see both peers go down (the link timeout, not 20 s)";
  EXPECT_EQ(c->hosts()[1].peer_downs, 1u) << "host 1 must see host 0 go down";
  EXPECT_EQ(c->hosts()[0].peer_ups, 4u) << "host 0: both peers up at start and again after healing";
}

}  // namespace
