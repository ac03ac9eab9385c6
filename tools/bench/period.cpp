// period.cpp - Part 2 (`bench period`), what the agent pays per period (refill is lazy, so
// nothing sweeps the bucket map): read_stats, apply_debits over 100k and 1M sources into bucket
// maps of two capacities, the full for_each_bucket walk a periodic sweep would pay (for scale),
// Collector::end_period over 100k and 1M sources active in a period, and adaptive limits.
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "adaptive/adaptive.h"
#include "bench/measure.h"
#include "bench/parts.h"
#include "bench/programs.h"
#include "dataplane/collector.h"
#include "dataplane/debits.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"

namespace dt::bench {

namespace {

// One hit from each of the sources 2001:2::1, 2001:2::2, ... (the debits a period
// of peer reports brings), for rule 0.
std::vector<dt_debit> make_debits(uint32_t n) {
  std::vector<dt_debit> v(n);
  for (uint32_t i = 0; i < n; i++) {
    dt_key &k = v[i].key;
    k.addr[0] = 0x20, k.addr[1] = 0x01, k.addr[3] = 0x02;  // 2001:2::/48
    const uint32_t low = htonl(i + 1);
    memcpy(&k.addr[12], &low, 4);
    v[i].hits = 1;
    v[i].key.rule = DT_RULE_DEFAULT;
  }
  return v;
}

// Thread CPU ms of apply_debits; dies unless every entry was applied.
double time_apply(const Throttle &t, const std::vector<dt_debit> &debits) {
  const uint64_t t0 = thread_cpu_ns();
  const dt::DebitResult r = dt::apply_debits(t.fd.debit_batch, t.fd.debit, debits);
  const uint64_t t1 = thread_cpu_ns();
  if (r.error || r.entries_failed || r.entries_applied != debits.size())
    die("apply_debits of %zu entries: %llu applied, %llu failed, error %d", debits.size(),
        static_cast<unsigned long long>(r.entries_applied), static_cast<unsigned long long>(r.entries_failed), r.error);
  return static_cast<double>(t1 - t0) / 1e6;
}

// Thread CPU ms of a full walk that reads every bucket; dies unless it saw
// `expect` buckets each debited `debited` hits.
double time_walk(const Throttle &t, uint32_t expect, uint64_t debited) {
  uint64_t sum = 0;
  const uint64_t t0 = thread_cpu_ns();
  const long n = dt::for_each_bucket(t.fd.buckets, [&](const dt_key &, const dt_bucket &b) { sum += b.debited; });
  const uint64_t t1 = thread_cpu_ns();
  if (n != static_cast<long>(expect) || sum != expect * debited)
    die("for_each_bucket saw %ld buckets with %llu debited hits, expected %u and %llu", n,
        static_cast<unsigned long long>(sum), expect, static_cast<unsigned long long>(expect * debited));
  return static_cast<double>(t1 - t0) / 1e6;
}

void read_stats_cost() {
  constexpr int kCalls = 20000;
  Throttle t(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX));
  const uint64_t t0 = thread_cpu_ns();
  for (int i = 0; i < kCalls; i++) (void)t.stats();
  const uint64_t t1 = thread_cpu_ns();
  printf("  (a) read_stats (sum over %d CPUs): %.2f us per call (mean of %d)\n", libbpf_num_possible_cpus(),
         static_cast<double>(t1 - t0) / kCalls / 1e3, kCalls);
}

// (d) Collector::end_period after each of n sources sent one admitted frame in the
// period (cluster mode on). Every period sees the same sources again, as in steady
// state; the first period is the warm-up. Thread CPU time: the 2 ms epoch grace
// sleep inside end_period is not counted.
void collect_cost(uint32_t n, int periods) {
  Throttle t(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX));
  dt::Collector collector(t.fd.config, t.fd.ring, t.fd.stage, t.fd.collect_batch, t.fd.collect);
  if (int rc = collector.enable(false); rc != 0) die("Collector::enable: %s", strerror(-rc));
  Rotator rot;
  rot.set_sources(true, 1, n);
  const std::vector<uint8_t> frame = make_frame(true);
  std::vector<double> ms;
  uint64_t reported = 0, lost = 0;
  for (int p = 0; p <= periods; p++) {
    const dt_stats before = t.stats();
    uint32_t retval = 0;
    rot.run(t.fd.xdp, frame, n, &retval);
    if (retval != XDP_PASS) die("collect: the last frame returned %u, expected XDP_PASS", retval);
    lost = t.stats().report_overflow - before.report_overflow;
    int err = 0;
    const uint64_t t0 = thread_cpu_ns();
    const std::vector<dt::ReportEntry> out = collector.end_period(&err);
    const uint64_t t1 = thread_cpu_ns();
    if (err != 0) die("Collector::end_period: %s", strerror(-err));
    reported = out.size();
    if (reported != n - lost)
      die("collect: %llu sources reported, expected %llu (%u active, %llu lost to the ring)",
          static_cast<unsigned long long>(reported), static_cast<unsigned long long>(n - lost), n,
          static_cast<unsigned long long>(lost));
    if (p > 0) ms.push_back(static_cast<double>(t1 - t0) / 1e6);
  }
  // Per announced source: those the full ring turned away were not drained.
  const double m = median(ms);
  printf("  %-9u | %8.1f ms %6.0f ns/source | %9llu reported, %9llu announcements lost to a full ring\n", n, m,
         m * 1e6 / static_cast<double>(n - lost), static_cast<unsigned long long>(reported),
         static_cast<unsigned long long>(lost));
}

// (e) Adaptive limits: what the agent pays in a period in which a factor changes
// (republishing the policies) and for measuring the busiest key (every served entry
// goes through AdaptiveSet::add_packet_hits).
void adaptive_cost(int rounds) {
  Throttle t(kBucketCapacity, policy_or_die(1000, 100));
  const dt::RuleMaps maps = t.rule_maps();
  std::vector<dt_policy> pols(DT_MAX_RULES - 1, policy_or_die(1000, 100));
  std::vector<std::pair<dt_lpm_key, dt_rule_set>> lpm;
  for (uint32_t i = 0; i < DT_MAX_PREFIXES; i++) {  // the largest rule set: 4096 IPv4 /24s
    dt_lpm_key k{};
    k.prefixlen = 120;
    k.addr[10] = k.addr[11] = 0xff;
    k.addr[12] = 198;
    k.addr[13] = static_cast<uint8_t>(18 + (i >> 8));
    k.addr[14] = static_cast<uint8_t>(i);
    dt_rule_set set{};
    set.count = 1;
    set.m[0].rule = static_cast<uint16_t>(1 + i % (DT_MAX_RULES - 2));
    lpm.emplace_back(k, set);
  }
  const std::vector<std::string> names(pols.size(), "rule");
  std::vector<double> full, only;
  for (int r = 0; r < rounds; r++) {
    uint64_t t0 = thread_cpu_ns();
    if (int rc = dt::publish_rules(maps, pols, lpm, names); rc != 0) die("publish_rules: %s", strerror(-rc));
    full.push_back((thread_cpu_ns() - t0) / 1e6);
    t0 = thread_cpu_ns();
    if (int rc = dt::publish_policies_only(maps, pols); rc != 0) die("publish_policies_only: %s", strerror(-rc));
    only.push_back((thread_cpu_ns() - t0) / 1e6);
  }
  printf(
      "\n  (e) adaptive limits, per period in which a factor changes (255 rules, 4096 prefixes;\n"
      "      median of %d): republish policies and trie %.2f ms, policies alone %.2f ms (what\n"
      "      the agent does once both trie banks hold the rule set)\n",
      rounds, median(full), median(only));
  for (uint32_t n : {10'000u, 100'000u}) {
    dt::AdaptiveSet set;
    dt::AdaptiveRuleSpec spec;
    spec.name = "api";
    spec.index = 0;
    spec.rate = 1000;
    set.configure({spec}, 1'000'000'000ull);
    std::vector<dt::ReportEntry> served;
    for (const dt_debit &d : make_debits(n)) served.push_back({d.key, 1});
    std::vector<double> per;
    for (int r = 0; r < rounds; r++) {
      const uint64_t t0 = thread_cpu_ns();
      set.add_packet_hits(served);
      set.on_period(1'000'000'000ull * (r + 1), 200'000'000ull);
      per.push_back(static_cast<double>(thread_cpu_ns() - t0) / n);
    }
    printf("      busiest-key measurement, %u active sources of an adaptive rule: %.0f ns per source\n", n,
           median(per));
  }
}

}  // namespace

void per_period_part() {
  constexpr int kSteady = 3;
  printf("\nPart 2: agent cost per period (thread CPU time, syscalls included)\n");
  read_stats_cost();
  printf(
      "  (b) apply_debits, 1 hit per source: \"first\" creates every bucket, \"steady\" is the\n"
      "      median of %d further periods over the same sources (the usual case)\n"
      "  (c) for_each_bucket: one full walk reading every bucket: what a sweep would pay\n"
      "      every period for every resident bucket, active or not\n\n",
      kSteady);
  printf("  %-10s %-9s | %-26s | %-26s | %-24s\n", "capacity", "sources", "(b) apply_debits first",
         "(b) apply_debits steady", "(c) full walk");
  for (uint32_t capacity : {kBucketCapacity, 4u * kBucketCapacity})
    for (uint32_t n : {100'000u, 1'000'000u}) {
      Throttle t(capacity, policy_or_die(1e6, DT_BURST_MAX));
      const std::vector<dt_debit> debits = make_debits(n);
      const double first = time_apply(t, debits);
      std::vector<double> steady, walk;
      for (int i = 0; i < kSteady; i++) steady.push_back(time_apply(t, debits));
      for (int i = 0; i < kSteady; i++) walk.push_back(time_walk(t, n, 1 + kSteady));
      const double st = median(steady), wk = median(walk);
      printf("  %-10u %-9u | %8.1f ms %6.0f ns/entry | %8.1f ms %6.0f ns/entry | %7.1f ms %5.0f ns/bucket\n", capacity,
             n, first, first * 1e6 / n, st, st * 1e6 / n, wk, wk * 1e6 / n);
    }
  printf(
      "\n  (d) Collector::end_period (drain the active ring, dt_collect over the announced\n"
      "      sources), each source admitted once per period; median of %d periods\n",
      kSteady);
  printf("  %-9s | %-26s | %s\n", "sources", "(d) end_period (per drained)", "outcome (last period)");
  for (uint32_t n : {100'000u, 1'000'000u}) collect_cost(n, kSteady);
  adaptive_cost(5);
}

}  // namespace dt::bench
