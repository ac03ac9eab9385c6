// sim_run.h - create and run a simulated cluster in a test (tools/sim/cluster_sim.h).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/log.h"
#include "sim/cluster_sim.h"

namespace dt::test {

// The cluster for s, or null with a failure that says why the scenario was rejected.
inline std::unique_ptr<sim::ClusterSim> make_sim(const sim::Scenario &s) {
  std::string err;
  auto c = sim::ClusterSim::create(s, &err);
  EXPECT_TRUE(c) << "scenario rejected: " << err;
  return c;
}

// make_sim, then the whole run. The hosts log their decisions (adaptive factors) with
// wall-clock times, which say nothing about simulated time: quiet for the run.
inline std::unique_ptr<sim::ClusterSim> run_sim(const sim::Scenario &s) {
  auto c = make_sim(s);
  const LogLevel level = log_level();
  set_log_level(LogLevel::Warn);
  if (c) c->run();
  set_log_level(level);
  return c;
}

}  // namespace dt::test
