// test_sim_cadence.cpp - the agent's cadence (cluster/report_cadence.h) in the simulator:
// under many one-packet sources each host's report bytes in shrink to a few times what it
// served, without changing what a sprayed client is admitted.
#include <gtest/gtest.h>

#include <string>

#include "sim/cluster_sim.h"

namespace {

using dt::sim::ClusterSim;
using dt::sim::Client;
using dt::sim::Scenario;

constexpr dt::sim::Ns kMs = 1'000'000;
constexpr dt::sim::Ns kSec = 1000 * kMs;

// 20 hosts, owners; `light` one-packet sources over the first 2 s of 3, and `rate` for c0.
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
    c.bursts.push_back({2 * kSec * i / light, 1, -1});
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

}  // namespace
