// early_report.h - the first report of a source new to this host, sent before the period
// ends (docs/cluster-scale.md "First contact"). Pure logic on the caller's clock: the
// agent's Cluster and the simulator (tools/sim) run the same code.
//
// Why: a new source sprayed over N hosts finds a full bucket on each of them, and each
// admits everything it sees until the peers' reports of that source land. The cluster
// over-admits about `offered rate x report lag`; the lag of a source's first hits is what
// is left of the period when they come (half a period on average, a whole one at worst)
// plus, with the owner scheme, the owner's relay. An early report cuts that lag to at most
// one tick (delay_ns, a quarter period by default): at every tick within a period, the
// sources first admitted since the previous tick that are new here (this host has not
// reported them in this period or the one before) are collected and reported at once, routed as the period's report is
// (to their owner alone, or to every peer in a mesh). Their owner relays at once once a second host reports them
// (report_router.h), so the whole cluster knows them a tick after first contact.
//
// Cost: at most one extra message per destination (owner) per tick, only while new sources
// appear; every hit is still reported exactly once (an early report collects the hits it
// sends: the period's report carries only the later ones). A client that always lands on
// the same host loses nothing: reports never touch the reporting host's own bucket.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/key_hash.h"
#include "common/report_types.h"

namespace dt {

// The caller's dt_collect of `keys`: each one's hits since it was last reported (now
// reported), in their order; the packet path's maps in the agent, the simulator's buckets.
using CollectHits = std::function<std::vector<ReportEntry>(const std::vector<dt_key> &keys)>;

struct EarlyReportOptions {
  uint64_t period_ns = 200'000'000;
  uint64_t delay_ns = 50'000'000;  // the tick: period / 4; 0: no early reports
  // A new source goes early once this host has admitted this many of its hits (so far in
  // the period); fewer wait for the next tick, the last ones for the period's report. 2
  // keeps one-packet sources (a spray of light sources) out of early reports.
  uint64_t min_hits = 2;
  // At most this many new sources a tick (the rest wait for the period's report): a flood
  // of spoofed one-packet sources costs the collector at most 3 x this many more reads a
  // period, not 3 x the flood.
  size_t max_per_tick = 4096;
};

class EarlyReport {
 public:
  explicit EarlyReport(const EarlyReportOptions &o = {}) : opt_(o) {}
  bool enabled() const { return opt_.delay_ns > 0 && opt_.delay_ns < opt_.period_ns; }
  const EarlyReportOptions &options() const { return opt_; }

  // The period's report went out at now_ns with `served`: the next period starts.
  void period_reported(const std::vector<ReportEntry> &served, uint64_t now_ns);
  // When the next early report is due after one at `tick_ns` (or after the period's
  // report, then tick_ns is its time); UINT64_MAX: none before the period's end.
  uint64_t next_tick(uint64_t tick_ns) const;

  // Of `candidates` (sources first admitted here in this period, since the last tick: the
  // kernel's announcements), those new to this host (not reported by it in this period or
  // the one before), each once (noted as reported). A source peers know already (shared)
  // is new here too: peers' debits reach this host's bucket, but this host's first hits
  // reach theirs only with its report.
  std::vector<dt_key> pick_new(const std::vector<dt_key> &candidates);
  // The sources to collect at this tick: pick_new(candidates) and those held back.
  std::vector<dt_key> due(const std::vector<dt_key> &candidates);
  // The hits collected at this tick of due()'s sources: what goes out now (with what was
  // held of them); the rest is held (fewer than min_hits).
  std::vector<ReportEntry> tick(const std::vector<ReportEntry> &collected);
  // A whole tick: due(candidates) collected, then tick() of what that read.
  std::vector<ReportEntry> collect_tick(const std::vector<dt_key> &candidates, const CollectHits &collect);
  // What is still held at the period's end (for its report; none held afterwards).
  std::vector<ReportEntry> take_held();

  uint64_t ticks() const { return ticks_; }
  uint64_t picked() const { return picked_; }

 private:
  bool known(const dt_key &k) const { return current_.count(k) || previous_.count(k); }

  EarlyReportOptions opt_;
  uint64_t period_start_ns_ = 0;
  // Sources reported in this period (early or not yet) and in the one before.
  std::unordered_set<dt_key, KeyHash, KeyEq> current_, previous_;
  std::unordered_map<dt_key, uint64_t, KeyHash, KeyEq> held_;  // collected, not sent yet
  uint64_t ticks_ = 0, picked_ = 0;
};

// The shared sources' early reports (shared_early.h) ride the ticks at most this often: a
// quarter period, however short the new sources' tick (each reads every shared bucket).
inline uint64_t shared_early_pace(uint64_t period_ns, uint64_t tick_ns) {
  return tick_ns > period_ns / 4 ? tick_ns : period_ns / 4;
}

// `later` added to `early` (hits of the same key summed); the result has each key once.
std::vector<ReportEntry> merge_entries(std::vector<ReportEntry> early, const std::vector<ReportEntry> &later);

}  // namespace dt
