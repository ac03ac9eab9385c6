// packet.cpp - Part 1 (`bench packet`), the cost per packet: BPF_PROG_TEST_RUN runs the
// wrapper dt_bench_rotate (bpf/bench.bpf.c) millions of times on one frame; the wrapper gives
// every repetition the next of N source addresses and tail-calls one of the targets:
//   ours PASS    the production dt_xdp (unpinned skeleton), a policy that admits all
//   PASS coarse  the same with --clock coarse
//   ours DROP    dt_xdp again (its own maps), a policy under which every bucket is empty
//   baseline     dt_bench_baseline: same parser, one LRU lookup, one atomic add
//   empty        XDP_PASS only: the wrapper's own cost, subtracted for the "net" ratio
// Every map is prefilled by one pass over all N sources, then each round measures the
// targets back to back (order reversed every other round) and the table shows per-target
// medians. The counters of dt_xdp are checked after every run: a figure is only printed for
// the path it claims to measure. 198.18.0.0/15 holds 131,072 addresses, so the
// million-source case uses IPv6 sources in 2001:2::/48.
#include <linux/bpf.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "bench/measure.h"
#include "bench/parts.h"
#include "bench/programs.h"

namespace dt::bench {

namespace {

struct Scenario {
  const char *label;
  bool ipv6;
  uint32_t sources;
  uint32_t repeat;  // frames per measurement
};

enum Target { kOursPass, kOursCoarse, kOursDrop, kBaseline, kEmpty, kTargets };
const char *const kTargetNames[kTargets] = {"ours PASS", "PASS coarse", "ours DROP", "baseline", "empty"};

struct ScenarioResult {
  std::vector<double> ns[kTargets];
};

// Runs one measurement and checks that dt_xdp took the path it is meant to measure,
// with every source's bucket already there (no eviction, no re-creation).
double measure(Rotator &rot, Target t, int fd, const Throttle *ours, const std::vector<uint8_t> &frame,
               uint32_t repeat) {
  const dt_stats before = ours ? ours->stats() : dt_stats{};
  uint32_t retval = 0;
  const double ns = rot.run(fd, frame, repeat, &retval);
  const uint32_t want = t == kOursDrop ? XDP_DROP : XDP_PASS;
  if (retval != want)
    die("%s: the last frame returned %u, expected %u (did the tail call fail?)", kTargetNames[t], retval, want);
  if (ours) {
    const dt_stats after = ours->stats();
    const uint64_t on_path = t != kOursDrop ? after.passed - before.passed : after.dropped - before.dropped;
    const uint64_t created = after.new_sources - before.new_sources;
    if (on_path != repeat || created != 0)
      die("%s: %llu of %u frames took the measured path and %llu buckets were created "
          "(expected all and none: eviction, or the policy does not fit)",
          kTargetNames[t], static_cast<unsigned long long>(on_path), repeat,
          static_cast<unsigned long long>(created));
  }
  return ns;
}

ScenarioResult run_scenario(const Scenario &s) {
  // Rate 1e6/s, burst 1e9: no source runs dry in this bench (each frame moves a
  // bucket's TAT by 1 us, the burst covers 1e9 of them). Rate 1e-6/s, burst 1: the
  // prefill pass takes each source's only token, every later frame is dropped.
  Throttle pass(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX));
  Throttle coarse(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX), true);
  Throttle drop(kBucketCapacity, policy_or_die(DT_RATE_MIN, 1));
  Rotator rot;
  rot.set_sources(s.ipv6, s.ipv6 ? 1u : 0xc6120001u /* 198.18.0.1 */, s.sources);
  const std::vector<uint8_t> frame = make_frame(s.ipv6);

  const int fds[kTargets] = {pass.fd.xdp, coarse.fd.xdp, drop.fd.xdp, rot.fd.baseline, rot.fd.empty};
  const Throttle *owners[kTargets] = {&pass, &coarse, &drop, nullptr, nullptr};
  uint32_t retval = 0;
  for (int fd : {fds[kOursPass], fds[kOursCoarse], fds[kOursDrop], fds[kBaseline]}) rot.run(fd, frame, s.sources, &retval);
  if (pass.stats().new_sources != s.sources || drop.stats().new_sources != s.sources ||
      coarse.stats().new_sources != s.sources)
    die("%s: prefill created %llu / %llu buckets, expected %u", s.label,
        static_cast<unsigned long long>(pass.stats().new_sources),
        static_cast<unsigned long long>(drop.stats().new_sources), s.sources);

  ScenarioResult r;
  for (int round = 0; round < kRounds; round++)
    for (int i = 0; i < kTargets; i++) {
      const Target t = static_cast<Target>(round % 2 ? kTargets - 1 - i : i);  // ABCD DCBA ...
      r.ns[t].push_back(measure(rot, t, fds[t], owners[t], frame, s.repeat));
    }
  if (long n = rot.baseline_entries(); n != s.sources)
    die("%s: the baseline map holds %ld sources, expected %u (evicted?)", s.label, n, s.sources);
  return r;
}

}  // namespace

void per_packet_part() {
  const Scenario scenarios[] = {
      {"IPv4, 1 source", false, 1, 5'000'000},
      {"IPv6, 1 source", true, 1, 5'000'000},
      {"IPv4, 131,072 (198.18.0.0/15)", false, 131'072, 131'072 * 24},
      {"IPv6, 1,000,000 (2001:2::/48)", true, 1'000'000, 3'000'000},
  };
  printf("\nPart 1: cost per packet in ns (BPF_PROG_TEST_RUN; thread CPU time / frames)\n"
         "  bucket maps of %u entries (dt_xdp's and the baseline's), prefilled by one pass\n"
         "  over all sources; median of %d interleaved rounds; net = minus the empty target\n"
         "  (the wrapper's own cost). Target: ours/baseline <= 1.5x.\n\n",
         kBucketCapacity, kRounds);
  printf("  %-30s %-9s| %9s %9s %9s %9s %7s | %-13s | %-13s | %-13s\n", "sources", "frames", "ours PASS",
         "coarse", "ours DROP", "baseline", "empty", "PASS/baseline", "coarse/base", "DROP/baseline");
  printf("  %-30s %-9s| %9s %9s %9s %9s %7s | %-13s | %-13s | %-13s\n", "", "", "", "", "", "", "", " raw    net",
         " raw    net", " raw    net");
  std::vector<ScenarioResult> results;
  for (const Scenario &s : scenarios) {
    results.push_back(run_scenario(s));
    const ScenarioResult &r = results.back();
    double med[kTargets];
    for (int t = 0; t < kTargets; t++) med[t] = median(r.ns[t]);
    const double base_net = med[kBaseline] - med[kEmpty];
    printf("  %-30s %-9u| %9.1f %9.1f %9.1f %9.1f %7.1f |", s.label, s.repeat, med[kOursPass], med[kOursCoarse],
           med[kOursDrop], med[kBaseline], med[kEmpty]);
    for (Target t : {kOursPass, kOursCoarse, kOursDrop})
      printf(" %4.2fx %5.2fx %s", med[t] / med[kBaseline], (med[t] - med[kEmpty]) / base_net,
             t != kOursDrop ? "|" : "\n");
  }
  printf("\n  spread over the rounds (min - max ns):\n");
  for (size_t i = 0; i < results.size(); i++) {
    printf("  %-30s", scenarios[i].label);
    for (int t = 0; t < kTargets; t++) {
      auto [lo, hi] = std::minmax_element(results[i].ns[t].begin(), results[i].ns[t].end());
      printf("  %s %.1f-%.1f", kTargetNames[t], *lo, *hi);
    }
    printf("\n");
  }
}

}  // namespace dt::bench
