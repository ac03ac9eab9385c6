// flood.cpp - Part 1c (`bench flood`): a random-source flood with prefix budgets.
#include <linux/bpf.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench/measure.h"
#include "bench/parts.h"
#include "bench/programs.h"
#include "dataplane/policy.h"

namespace dt::bench {

// A flood in which every frame comes from a source without a bucket (131,072 sources of
// 198.18.0.0/15 in turn, so none is seen twice within 131,072 frames):
//   prefix budgets  rule 0 with levels v4/16 and v4/24 whose budgets the prefill pass
//                   spent: each frame is dropped by the /16 after one look at the (absent)
//                   source bucket and one at the /16's, and no bucket is created
//   no budgets      rule 0 alone, a bucket map of 65,536: each frame creates a bucket
//                   (evicting another; a few of the LRU's survive a lap) and passes, as
//                   every spoofed frame did before
//   baseline        dt_bench_baseline on known sources (one LRU lookup, one atomic add)
// Checked after every run: all frames took the path named, and buckets were created
// only where expected.
void prefix_flood_part() {
  constexpr uint32_t kSources = 131'072, kRepeat = kSources * 4, kSmallMap = 65'536;
  const dt_policy per_source = policy_or_die(1e6, DT_BURST_MAX);
  Throttle budgets(kBucketCapacity, per_source), plain(kSmallMap, per_source);
  dt_policy with_levels = per_source;
  with_levels.flags |= DT_POL_PREFIX;
  dt_prefix_policy pp{};
  pp.n_v4 = 2;
  pp.v4[0] = policy_or_die(DT_RATE_MIN, 1);
  pp.v4[0].v4_key_bits = 16;
  pp.v4[1] = policy_or_die(DT_RATE_MIN, 1);
  pp.v4[1].v4_key_bits = 24;
  dt::RuleMaps maps = budgets.rule_maps();
  maps.prefix_fd = budgets.fd.prefix_policy;
  if (int rc = dt::publish_rules(maps, {with_levels}, {}, {}, {pp}); rc != 0) die("publish_rules: %s", strerror(-rc));
  Rotator rot;
  rot.set_sources(false, 0xc6120000u /* 198.18.0.0 */, kSources);
  const std::vector<uint8_t> frame = make_frame(false);
  uint32_t retval = 0;
  for (int fd : {budgets.fd.xdp, plain.fd.xdp, rot.fd.baseline}) rot.run(fd, frame, kSources, &retval);
  enum { kBudgets, kPlain, kBase, kNone, kN };
  const char *names[kN] = {"prefix budgets", "no budgets", "baseline", "empty"};
  const int fds[kN] = {budgets.fd.xdp, plain.fd.xdp, rot.fd.baseline, rot.fd.empty};
  std::vector<double> ns[kN];
  for (int round = 0; round < kRounds; round++)
    for (int i = 0; i < kN; i++) {
      const int t = round % 2 ? kN - 1 - i : i;
      const Throttle *th = t == kBudgets ? &budgets : t == kPlain ? &plain : nullptr;
      const dt_stats before = th ? th->stats() : dt_stats{};
      ns[t].push_back(rot.run(fds[t], frame, kRepeat, &retval));
      if (!th) continue;
      const dt_stats after = th->stats();
      const uint64_t dropped = after.dropped - before.dropped, passed = after.passed - before.passed,
                     created = after.new_sources - before.new_sources;
      if (t == kBudgets && (dropped != kRepeat || created != 0))
        die("flood with prefix budgets: %llu of %u frames dropped, %llu buckets created (expected all, none)",
            static_cast<unsigned long long>(dropped), kRepeat, static_cast<unsigned long long>(created));
      if (t == kPlain && (passed != kRepeat || created * 100 < kRepeat * 99ull))  // LRU: a few survive a lap
        die("flood without budgets: %llu of %u frames passed, %llu buckets created (expected all, 99%%+)",
            static_cast<unsigned long long>(passed), kRepeat, static_cast<unsigned long long>(created));
    }
  double med[kN];
  for (int t = 0; t < kN; t++) med[t] = median(ns[t]);
  const double base_net = med[kBase] - med[kNone];
  printf(
      "\nPart 1c: a random-source flood with prefix budgets, ns per frame (IPv4, %u sources of\n"
      "  198.18.0.0/15 in turn: every frame from a source without a bucket; median of %d rounds)\n\n",
      kSources, kRounds);
  printf("  %-58s %9s | %-13s\n", "target", "ns/frame", "vs baseline");
  printf("  %-58s %9s | %-13s\n", "", "", " raw    net");
  const char *what[kN] = {"prefix budgets (/16 and /24 spent): dropped, no bucket made",
                          "no prefix budgets: each frame makes a bucket and passes",
                          "baseline: LRU lookup + atomic add", "empty (the wrapper's own cost)"};
  for (int t = 0; t < kN; t++) {
    printf("  %-58s %9.1f |", what[t], med[t]);
    if (t != kNone) printf(" %4.2fx %5.2fx", med[t] / med[kBase], (med[t] - med[kNone]) / base_net);
    printf("\n");
  }
  printf("  spread (min - max ns):");
  for (int t = 0; t < kN; t++) {
    auto [lo, hi] = std::minmax_element(ns[t].begin(), ns[t].end());
    printf("  %s %.1f-%.1f", names[t], *lo, *hi);
  }
  printf("\n");
}

}  // namespace dt::bench
