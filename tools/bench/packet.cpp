// packet.cpp - Part 1 (`bench packet`), the cost per packet: BPF_PROG_TEST_RUN runs the
// wrapper dt_bench_rotate (bpf/bench.bpf.c) millions of times on one frame; the wrapper gives
// every repetition the next of N source addresses and tail-calls one of the targets:
//   ours PASS    the production dt_xdp (unpinned skeleton), a policy that admits all
//   PASS coarse  the same with --clock coarse
//   ours DROP    dt_xdp again (its own maps), a policy under which every bucket is empty
//   baseline     dt_bench_baseline: same parser, one LRU lookup, one atomic add
//   clock base   dt_bench_clock: the same lookup, bpf_ktime_get_ns(), one compare-and-swap:
//                the floor of an exact bucket's admission into a full bucket
//   empty        XDP_PASS only: the wrapper's own cost, subtracted for the "net" ratio
// Two kinds of admission: one source sent to without pause keeps its bucket in debt (rate
// 1e6/s, burst 1e9: each frame moves the TAT 1 us ahead, so tat > now and the new TAT does
// not depend on the time), compared with the baseline; many sources in rotation (a client
// under its rate: each visited far less often than once a microsecond) find their bucket
// full (tat <= now: the new TAT is now + 1 us), compared with the clock baseline. The
// bucket of the first source is read after the rounds to check which it was.
// Every map is prefilled by one pass over all N sources, then each round measures the
// targets back to back (order reversed every other round) and the table shows per-target
// medians. The counters of dt_xdp are checked after every run: a figure is only printed for
// the path it claims to measure. 198.18.0.0/15 holds 131,072 addresses, so the
// million-source case uses IPv6 sources in 2001:2::/48.
#include <arpa/inet.h>
#include <linux/bpf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
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
  bool full;        // the buckets are full at every visit (else: one source, in debt)
};

enum Target { kOursPass, kOursCoarse, kOursDrop, kBaseline, kClockBase, kEmpty, kTargets };
const char *const kTargetNames[kTargets] = {"ours PASS", "PASS coarse", "ours DROP", "baseline", "clock base", "empty"};

struct ScenarioResult {
  std::vector<double> ns[kTargets];
};

// The key of the scenario's first source under rule 0 (198.18.0.1, IPv4-mapped, or 2001:2::1).
dt_key first_source(bool ipv6) {
  dt_key k{};
  if (ipv6) {
    k.addr[0] = 0x20, k.addr[1] = 0x01, k.addr[3] = 0x02, k.addr[15] = 1;
  } else {
    const uint32_t a = htonl(0xc6120001u);
    k.addr[10] = k.addr[11] = 0xff;
    memcpy(&k.addr[12], &a, 4);
  }
  return k;
}

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Dies unless the first source's bucket in `pass` is as the scenario says: in debt (its TAT
// still ahead of the clock after the rounds) or full (its TAT long behind it).
void check_bucket_state(const Scenario &s, const Throttle &pass) {
  dt_bucket b{};
  if (!pass.bucket(first_source(s.ipv6), &b)) die("%s: the first source has no bucket", s.label);
  const uint64_t now = monotonic_ns();
  if (s.full ? b.tat_ns > now : b.tat_ns <= now)
    die("%s: the first source's bucket is %s (tat %llu, now %llu), not %s as the row claims", s.label,
        b.tat_ns > now ? "in debt" : "full", static_cast<unsigned long long>(b.tat_ns),
        static_cast<unsigned long long>(now), s.full ? "full" : "in debt");
}

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
          kTargetNames[t], static_cast<unsigned long long>(on_path), repeat, static_cast<unsigned long long>(created));
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

  const int fds[kTargets] = {pass.fd.xdp, coarse.fd.xdp, drop.fd.xdp, rot.fd.baseline, rot.fd.clock, rot.fd.empty};
  const Throttle *owners[kTargets] = {&pass, &coarse, &drop, nullptr, nullptr, nullptr};
  uint32_t retval = 0;
  for (int fd : {fds[kOursPass], fds[kOursCoarse], fds[kOursDrop], fds[kBaseline], fds[kClockBase]})
    rot.run(fd, frame, s.sources, &retval);
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
  check_bucket_state(s, pass);
  if (long n = rot.baseline_entries(), c = rot.clock_entries(); n != s.sources || c != s.sources)
    die("%s: the baselines' maps hold %ld and %ld sources, expected %u (evicted?)", s.label, n, c, s.sources);
  return r;
}

}  // namespace

void per_packet_part() {
  const Scenario scenarios[] = {
      {"IPv4, 1 source, in debt", false, 1, 5'000'000, false},
      {"IPv6, 1 source, in debt", true, 1, 5'000'000, false},
      {"IPv4, 65,536 in rotation, full", false, 65'536, 65'536 * 48, true},
      {"IPv6, 65,536 in rotation, full", true, 65'536, 65'536 * 48, true},
      {"IPv4, 131,072 (198.18.0.0/15)", false, 131'072, 131'072 * 24, true},
      {"IPv6, 1,000,000 (2001:2::/48)", true, 1'000'000, 3'000'000, true},
  };
  printf(
      "\nPart 1: cost per packet in ns (BPF_PROG_TEST_RUN; thread CPU time / frames)\n"
      "  bucket maps of %u entries (dt_xdp's and the baselines'), prefilled by one pass\n"
      "  over all sources; median of %d interleaved rounds; net = minus the empty target\n"
      "  (the wrapper's own cost). base: LRU lookup + atomic; clock: the same + bpf_ktime_get_ns()\n"
      "  (the floor of an exact bucket). Targets, net: an in-debt PASS <= 1.3x base, a full\n"
      "  bucket's PASS <= 1.3x clock.\n\n",
      kBucketCapacity, kRounds);
  printf("  %-31s %-9s| %8s %8s %8s %8s %8s %6s | %-13s | %-13s | %-13s | %-13s\n", "sources, bucket", "frames", "PASS",
         "coarse", "DROP", "base", "clock", "empty", "PASS/base", "PASS/clock", "coarse/base", "DROP/base");
  printf("  %-31s %-9s| %8s %8s %8s %8s %8s %6s | %-13s | %-13s | %-13s | %-13s\n", "", "", "", "", "", "", "", "",
         " raw    net", " raw    net", " raw    net", " raw    net");
  std::vector<ScenarioResult> results;
  for (const Scenario &s : scenarios) {
    results.push_back(run_scenario(s));
    const ScenarioResult &r = results.back();
    double med[kTargets];
    for (int t = 0; t < kTargets; t++) med[t] = median(r.ns[t]);
    auto ratio = [&](Target a, Target b) {
      printf(" %4.2fx %5.2fx |", med[a] / med[b], (med[a] - med[kEmpty]) / (med[b] - med[kEmpty]));
    };
    printf("  %-31s %-9u| %8.1f %8.1f %8.1f %8.1f %8.1f %6.1f |", s.label, s.repeat, med[kOursPass], med[kOursCoarse],
           med[kOursDrop], med[kBaseline], med[kClockBase], med[kEmpty]);
    ratio(kOursPass, kBaseline);
    ratio(kOursPass, kClockBase);
    ratio(kOursCoarse, kBaseline);
    ratio(kOursDrop, kBaseline);
    printf("\n");
  }
  printf("\n  spread over the rounds (min - max ns):\n");
  for (size_t i = 0; i < results.size(); i++) {
    printf("  %-31s", scenarios[i].label);
    for (int t = 0; t < kTargets; t++) {
      auto [lo, hi] = std::minmax_element(results[i].ns[t].begin(), results[i].ns[t].end());
      printf("  %s %.1f-%.1f", kTargetNames[t], *lo, *hi);
    }
    printf("\n");
  }
}

}  // namespace dt::bench
