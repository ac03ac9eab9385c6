// test_adaptive_sim.cpp - adaptive limits on the cluster simulator: the busy-response
// reference's patterns (busy-response-throttling.txt) as golden tests. Multiplicative
// recovery converges soon after the busy signals stop, constant +200/s does not
// within the reference's 20 s; a steady busy service halves the admitted rate each
// second down to the floor; one busy host makes the whole cluster back off.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "sim/cluster_sim.h"
#include "sim_run.h"

namespace {

using dt::AdaptiveParams;
// The simulator's types and units, read as the tests' vocabulary.
using namespace dt::sim;
using dt::test::run_sim;

// The rows as the tool prints them, for failure messages.
std::string table(const std::vector<AdaptiveRow> &rows) {
  std::string out = "time offered admitted throttled busy limit(per host)\n";
  for (const auto &r : rows) {
    char line[160];
    snprintf(line, sizeof line, "%4g %7" PRIu64 " %8" PRIu64 " %9" PRIu64 " %4" PRIu64,
             static_cast<double>(r.end) / 1e9, r.offered, r.admitted, r.throttled, r.busy);
    out += line;
    for (double l : r.limit) out += " " + std::to_string(static_cast<int64_t>(l));
    out += "\n";
  }
  return out;
}

// A busy reference scenario, run: the scenario, the cluster after the run, its rows.
struct BusyRun {
  Scenario scenario;
  std::unique_ptr<ClusterSim> cluster;
  std::vector<AdaptiveRow> rows;
};

BusyRun run_busy(BusyPattern p, const AdaptiveParams &params, size_t hosts = 1) {
  BusyRun r{dt::sim::busy_reference_scenario(p, params, hosts), nullptr, {}};
  r.cluster = dt::test::run_sim(r.scenario);
  if (r.cluster) r.rows = r.cluster->adaptive_timeline();
  return r;
}

AdaptiveParams multiplicative() { return AdaptiveParams{}; }

AdaptiveParams constant_200() {
  AdaptiveParams p;
  p.recovery_add = 200;
  return p;
}

const char *name(BusyPattern p) { return dt::sim::busy_pattern_name(p); }

TEST(AdaptiveSim, MultiplicativeRecoveryConvergesWithin10s) {
  for (BusyPattern p : {BusyPattern::Steady, BusyPattern::Flappy}) {
    const BusyRun busy_run = run_busy(p, multiplicative());
    ASSERT_TRUE(busy_run.cluster);
    const auto &[s, c, rows] = busy_run;
    ASSERT_EQ(rows.size(), 30u) << name(p) << ": one row per second";
    const Ns end = dt::sim::busy_end(s);
    const auto at = dt::sim::converged_at(rows, end);
    ASSERT_TRUE(at.has_value()) << name(p) << ": x3 recovery never converged\n" << table(rows);
    EXPECT_LE(*at, end + 10 * kSec) << name(p) << ": converged more than 10 s after the last busy signal\n"
                                    << table(rows);
    EXPECT_GT(rows[end / kSec - 1].throttled, 0u)
        << name(p) << ": the last busy second must throttle, or there was nothing to recover from\n"
        << table(rows);
    EXPECT_EQ(c->applied_factor(0), 1.0) << name(p) << ": the factor must be back at 1 at the end\n" << table(rows);
    EXPECT_EQ(rows.back().admitted, rows.back().offered) << name(p) << ": all traffic through at the end";
  }
}

// The reference: "If the traffic doesn't recover within the next 20 seconds, we claim
// that the traffic failed to converge." It does recover, +200/s every second; just
// not to the offered 5000/s in time.
TEST(AdaptiveSim, ConstantRecoveryDoesNotConvergeWithin20s) {
  for (BusyPattern p : {BusyPattern::Steady, BusyPattern::Flappy}) {
    const BusyRun busy_run = run_busy(p, constant_200());
    ASSERT_TRUE(busy_run.cluster);
    const auto &[s, c, rows] = busy_run;
    const Ns end = dt::sim::busy_end(s);
    ASSERT_GE(s.duration, end + 20 * kSec) << "the run must give the traffic 20 s to recover";
    EXPECT_FALSE(dt::sim::converged_at(rows, end).has_value())
        << name(p) << ": constant +200/s recovery converged within 20 s\n"
        << table(rows);
    // Recovering at 200/s per second from 2 s after the last signal (a second of
    // hold, then the first full second of recovery) to the end.
    const size_t from = end / kSec + 2, to = rows.size();
    const double slope = (rows[to - 1].limit[0] - rows[from - 1].limit[0]) / static_cast<double>(to - from);
    EXPECT_NEAR(slope, 200, 1) << name(p) << ": the limit must grow by 200/s every second\n" << table(rows);
    EXPECT_LT(c->applied_factor(0), 0.5) << name(p) << ": still below the offered 5000/s at the end\n" << table(rows);
  }
}

// "when a busy response is received, we want to exponentially reduce the outgoing
// requests": one decrease per second to half the rate admitted, never below the floor.
TEST(AdaptiveSim, SteadyBusyHalvesAdmittedEachSecondDownToTheFloor) {
  const BusyRun busy_run = run_busy(BusyPattern::Steady, multiplicative());
  ASSERT_TRUE(busy_run.cluster);
  const auto &[s, c, rows] = busy_run;
  const double floor_per_s = s.adaptive_params.floor * s.rate;  // 100
  const size_t busy_rows = dt::sim::busy_end(s) / kSec;
  EXPECT_LT(rows[0].admitted, rows[0].offered) << "the first busy second must already throttle\n" << table(rows);
  // Each busy signal answers a request admitted since the previous one (one admitted
  // at the end of a second may be answered in the next: count from the start).
  uint64_t admitted = 0, busy = 0;
  for (const auto &r : rows) {
    admitted += r.admitted;
    busy += r.busy;
    EXPECT_LE(busy, admitted) << "by t=" << r.end / kSec << " s: more busy signals than admitted requests\n"
                              << table(rows);
  }
  for (size_t i = 1; i < busy_rows; i++) {
    const double prev = static_cast<double>(rows[i - 1].admitted), now = static_cast<double>(rows[i].admitted);
    if (prev > 2 * floor_per_s) {
      EXPECT_GE(now, 0.3 * prev) << "second " << i + 1 << ": admitted fell by much more than half\n" << table(rows);
      EXPECT_LE(now, 0.6 * prev) << "second " << i + 1 << ": admitted did not halve\n" << table(rows);
    }
    EXPECT_GE(now, 0.98 * floor_per_s) << "second " << i + 1 << ": admitted below the floor (1% of the rate)\n"
                                       << table(rows);
  }
  EXPECT_NEAR(static_cast<double>(rows[busy_rows - 1].admitted), floor_per_s, 0.02 * floor_per_s)
      << "a steady busy service must hold the rule at its floor\n"
      << table(rows);
  EXPECT_EQ(rows[busy_rows].busy, 0u) << "no busy signal after the busy phase";
}

// Host 0 alone hears the busy service; its factor travels in its reports
// (ReportBody::factors) and every host applies the lowest factor it heard.
TEST(AdaptiveSim, OneBusyHostMakesEveryHostBackOff) {
  const BusyRun busy_run = run_busy(BusyPattern::Steady, multiplicative(), 3);
  ASSERT_TRUE(busy_run.cluster);
  const auto &[s, c, rows] = busy_run;
  const Ns first_busy = c->hosts()[0].first_busy;
  ASSERT_NE(first_busy, kNever) << "host 0 must get busy signals\n" << table(rows);
  for (size_t h = 0; h < 3; h++) {
    const Ns backoff = c->hosts()[h].first_backoff;
    ASSERT_NE(backoff, kNever) << "host " << h << " never backed off\n" << table(rows);
    EXPECT_LE(backoff, first_busy + kSec) << "host " << h << " backed off more than 1 s after the first busy signal\n"
                                          << table(rows);
    EXPECT_LT(rows[first_busy / kSec].limit[h], s.rate)
        << "host " << h << "'s limit must be down at the end of the first busy second\n"
        << table(rows);
    EXPECT_EQ(c->applied_factor(h), 1.0) << "host " << h << ": the factor must be back at 1 at the end\n"
                                         << table(rows);
    if (h > 0) {
      EXPECT_EQ(c->hosts()[h].busy, 0u) << "only host 0 gets busy signals";
    }
  }
  EXPECT_TRUE(dt::sim::converged_at(rows, dt::sim::busy_end(s)).has_value()) << table(rows);

  // Without sharing factors (scope local), the other hosts never back off.
  Scenario local = s;
  local.adaptive_params.cluster = false;
  auto l = run_sim(local);
  ASSERT_TRUE(l);
  EXPECT_NE(l->hosts()[0].first_backoff, kNever) << "host 0 must back off on its own";
  for (size_t h = 1; h < 3; h++)
    EXPECT_EQ(l->hosts()[h].first_backoff, kNever) << "host " << h << " backed off without hearing host 0's factor\n"
                                                   << table(l->adaptive_timeline());

  // No reports at all: every host on its own, host 0's controller still runs.
  Scenario alone = s;
  alone.reports = false;
  auto a = run_sim(alone);
  ASSERT_TRUE(a);
  EXPECT_NE(a->hosts()[0].first_backoff, kNever) << "local-only host 0 must back off on its own";
  EXPECT_EQ(a->hosts()[1].first_backoff, kNever) << "local-only host 1 cannot know that host 0 is busy";
  EXPECT_EQ(a->applied_factor(0), 1.0) << "local-only host 0 must recover\n" << table(a->adaptive_timeline());
}

TEST(AdaptiveSim, DeterministicRuns) {
  const Scenario s = dt::sim::busy_reference_scenario(BusyPattern::Flappy, multiplicative(), 3);
  auto a = run_sim(s), b = run_sim(s);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(table(a->adaptive_timeline()), table(b->adaptive_timeline())) << "same scenario, same rows";
}

TEST(AdaptiveSim, RejectsImpossibleBusyWindows) {
  std::string err;
  Scenario s = dt::sim::busy_reference_scenario(BusyPattern::Steady, multiplicative(), 2);
  s.busy[0].host = 2;
  EXPECT_FALSE(ClusterSim::create(s, &err)) << "host 2 does not exist";
  EXPECT_NE(err.find("host 2"), std::string::npos) << err;
  s = dt::sim::busy_reference_scenario(BusyPattern::Steady, multiplicative());
  s.adaptive = false;
  EXPECT_FALSE(ClusterSim::create(s, &err)) << "busy signals without an adaptive rule";
  s = dt::sim::busy_reference_scenario(BusyPattern::Steady, multiplicative());
  s.busy[0].end = s.duration + kSec;
  EXPECT_FALSE(ClusterSim::create(s, &err)) << "a busy window past the end";
  s = dt::sim::busy_reference_scenario(BusyPattern::Steady, multiplicative());
  s.bin = 7 * kSec;
  EXPECT_FALSE(ClusterSim::create(s, &err)) << "a bin that does not divide the duration";
  s = dt::sim::busy_reference_scenario(BusyPattern::Steady, multiplicative());
  s.adaptive_params.decrease = 1.5;
  EXPECT_FALSE(ClusterSim::create(s, &err)) << "decrease above 1";
}

}  // namespace
