// test_suggest_stats.cpp - agent suggest's arithmetic (agent/suggest/suggest_stats.h):
// windowed peaks, nearest-rank quantiles, the proposal and the share it would throttle.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/json.h"
#include "suggest/suggest_report.h"
#include "suggest/suggest_sampler.h"
#include "suggest/suggest_stats.h"

namespace {

std::vector<const dt::HitSeries *> ptrs(const std::vector<dt::HitSeries> &v) {
  std::vector<const dt::HitSeries *> out;
  for (const auto &s : v) out.push_back(&s);
  return out;
}

TEST(SuggestStats, WindowPeak) {
  const dt::HitSeries s = {1, 5, 2, 9, 0, 0, 3};
  EXPECT_EQ(dt::window_peak(s, 1), 9u);
  EXPECT_EQ(dt::window_peak(s, 2), 11u) << "5+2 is 7, 2+9 is 11";
  EXPECT_EQ(dt::window_peak(s, 3), 16u) << "5+2+9";
  EXPECT_EQ(dt::window_peak(s, 10), 20u) << "a series shorter than the window: its whole sum";
  EXPECT_EQ(dt::window_peak({}, 1), 0u);
}

TEST(SuggestStats, NearestRankQuantiles) {
  std::vector<double> v;
  for (int i = 1; i <= 1000; i++) v.push_back(i);
  const dt::Quantiles q = dt::quantiles(v);
  EXPECT_EQ(q.n, 1000u);
  EXPECT_DOUBLE_EQ(q.p50, 500);
  EXPECT_DOUBLE_EQ(q.p99, 990);
  EXPECT_DOUBLE_EQ(q.p999, 999);
  EXPECT_DOUBLE_EQ(q.max, 1000);
  const dt::Quantiles one = dt::quantiles({7});
  EXPECT_DOUBLE_EQ(one.p50, 7);
  EXPECT_DOUBLE_EQ(one.p999, 7);
  EXPECT_EQ(dt::quantiles({}).n, 0u);
}

TEST(SuggestStats, RoundsUpToTwoDigits) {
  EXPECT_DOUBLE_EQ(dt::round_up_2sig(137), 140);
  EXPECT_DOUBLE_EQ(dt::round_up_2sig(140), 140);
  EXPECT_DOUBLE_EQ(dt::round_up_2sig(20), 20);
  EXPECT_DOUBLE_EQ(dt::round_up_2sig(9.01), 9.1);
  EXPECT_NEAR(dt::round_up_2sig(0.0123), 0.013, 1e-12);
  EXPECT_EQ(dt::round_up_2sig(0), 0);
}

TEST(SuggestStats, ProposalFromQuantiles) {
  // 100 steady sources at 1..100 pps (their 1 s and 10 s peaks alike): p99 is 99.
  std::vector<double> peaks;
  for (int i = 1; i <= 100; i++) peaks.push_back(i);
  const dt::Proposal p = dt::propose(peaks, peaks, dt::SuggestParams{});
  ASSERT_TRUE(p.valid);
  EXPECT_DOUBLE_EQ(p.rate, 200) << "2 x 99 = 198, rounded up to two digits";
  EXPECT_EQ(p.burst, 200u) << "at least a second of the rate";
  // A bursty quantile: 1 s peaks of 500 make the burst 2 x 500 - rate.
  std::vector<double> bursty(100, 500.0);
  const dt::Proposal b = dt::propose(bursty, peaks, dt::SuggestParams{});
  EXPECT_DOUBLE_EQ(b.rate, 200);
  EXPECT_EQ(b.burst, 800u);
  EXPECT_FALSE(dt::propose({0, 0}, {0, 0}, dt::SuggestParams{}).valid) << "no traffic, no proposal";
}

TEST(SuggestStats, RefusedHitsFluidBucket) {
  // rate 10, burst 10: the first second may take 20 (a full bucket and a second's refill).
  EXPECT_EQ(dt::refused_hits({20, 10, 10}, 10, 10), 0u);
  EXPECT_EQ(dt::refused_hits({25}, 10, 10), 5u);
  EXPECT_EQ(dt::refused_hits({20, 20}, 10, 10), 10u) << "the second second has only its refill";
  EXPECT_EQ(dt::refused_hits({0, 0, 0, 20}, 10, 10), 0u) << "idle seconds refill, capped at the burst";
  EXPECT_EQ(dt::refused_hits({200, 200}, 10, 20), 170u + 190u) << "30 admitted, then 10";
}

TEST(SuggestStats, ThousandClientsAndAbusers) {
  // A suggest workload: 1,000 clients at 1..10 pps, five abusers at 20 x the most a client sends.
  std::vector<dt::HitSeries> s;
  for (int i = 0; i < 1000; i++) s.emplace_back(30, static_cast<uint32_t>(1 + i % 10));
  for (int i = 0; i < 5; i++) s.emplace_back(30, 200u);
  const auto all = ptrs(s);
  const dt::Proposal p = dt::propose(dt::peak_rates(all, 1), dt::peak_rates(all, 10), dt::SuggestParams{});
  ASSERT_TRUE(p.valid);
  EXPECT_DOUBLE_EQ(p.rate, 20);
  const std::vector<const dt::HitSeries *> clients(all.begin(), all.begin() + 1000),
      abusers(all.begin() + 1000, all.end());
  EXPECT_EQ(dt::throttled(clients, p.rate, p.burst).sources, 0u) << "no client may be throttled";
  EXPECT_EQ(dt::throttled(abusers, p.rate, p.burst).sources, 5u) << "every abuser is";
  const dt::Throttled t = dt::throttled(all, p.rate, p.burst);
  EXPECT_EQ(t.of_sources, 1005u);
  EXPECT_EQ(t.sources, 5u);
  EXPECT_EQ(t.of_packets, 1000u / 10 * 55 * 30 + 5u * 200 * 30);
  EXPECT_EQ(t.packets, 5u * (200 * 30 - (20 * 30 + 20)));
}

TEST(SuggestStats, SumByGroup) {
  const std::vector<dt::HitSeries> s = {{1, 2}, {10, 20, 30}, {5}};
  const auto g = dt::sum_by_group(ptrs(s), {0, 0, 1}, 2);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0], (dt::HitSeries{11, 22, 30}));
  EXPECT_EQ(g[1], (dt::HitSeries{5}));
}

}  // namespace

namespace {

dt_key key_of(uint8_t last, uint32_t rule = 1) {
  dt_key k{};
  k.addr[10] = k.addr[11] = 0xff;
  k.addr[15] = last;
  k.rule = rule;
  return k;
}

TEST(SuggestSampler, SeriesFromReadings) {
  dt::HitSampler s(2);
  s.take({{key_of(1), 100}});                                // baseline: 100 before the measurement
  s.take({{key_of(1), 105}, {key_of(2), 7}});                // second 1: +5; a new source sent 7
  s.take({{key_of(1), 3}, {key_of(2), 7}, {key_of(3), 9}});  // second 2: evicted and made again: 3; no room for a third
  const auto &out = s.finish();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(s.seconds(), 2u);
  EXPECT_EQ(out[0].per_s, (dt::HitSeries{5, 3}));
  EXPECT_EQ(out[1].per_s, (dt::HitSeries{7, 0}));
  EXPECT_EQ(s.untracked(), 1u) << "the cap's overflow is counted";
}

}  // namespace

namespace {

dt::SampledSource source_at(const uint8_t (&addr)[16], uint32_t pps, size_t seconds) {
  dt::SampledSource s;
  memcpy(s.key.addr, addr, 16);
  s.key.rule = 3;
  s.per_s.assign(seconds, pps);
  return s;
}

TEST(SuggestReport, RuleFindingsAndPrefixAggregates) {
  // Three IPv4 sources, two in one /24, and two IPv6 sources in one /64, at 4 pps each but
  // one IPv4 source at 40; 12 s measured, so the long window is 10 s.
  std::vector<dt::SampledSource> all;
  const uint8_t a[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 1, 1};
  const uint8_t b[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 1, 2};
  const uint8_t c[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 2, 1};
  const uint8_t d[16] = {0x20, 0x01, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1};
  const uint8_t e[16] = {0x20, 0x01, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2};
  all = {source_at(a, 4, 12), source_at(b, 40, 12), source_at(c, 4, 12), source_at(d, 4, 12), source_at(e, 4, 12)};
  std::vector<const dt::SampledSource *> ptrs;
  for (const auto &s : all) ptrs.push_back(&s);
  dt::SuggestRule rule;
  rule.id = 3, rule.name = "web";
  rule.policy.interval_ns = 100'000'000;  // 10/s
  rule.policy.burst_ns = 2'000'000'000;   // burst 20
  const dt::RuleFinding f = dt::analyse_rule(rule, ptrs, dt::SuggestParams{0.5, 2.0, 10});
  ASSERT_TRUE(f.skipped.empty()) << f.skipped;
  EXPECT_EQ(f.long_window, 10u);
  EXPECT_EQ(f.hits, 12u * (4 * 4 + 40));
  EXPECT_EQ(f.sources, 5u);
  EXPECT_DOUBLE_EQ(f.peaks.short_w.p50, 4);
  EXPECT_DOUBLE_EQ(f.peaks.short_w.max, 40);
  ASSERT_EQ(f.prefixes.size(), 2u);
  EXPECT_EQ(f.prefixes[0].level, "v4/24");
  EXPECT_EQ(f.prefixes[0].peaks.short_w.n, 2u) << "198.18.1.0/24 and 198.18.2.0/24";
  EXPECT_DOUBLE_EQ(f.prefixes[0].peaks.short_w.max, 44);
  EXPECT_EQ(f.prefixes[1].level, "v6/48");
  EXPECT_DOUBLE_EQ(f.prefixes[1].peaks.short_w.max, 8) << "one /48 holding both IPv6 sources";
  EXPECT_EQ(f.prefixes[0].outliers, 1u) << "198.18.1.0/24 at 44/s is over 10 x the median 4";
  EXPECT_EQ(f.prefixes[0].capped, std::vector<std::string>{"198.18.1.0/24"});
  EXPECT_EQ(f.prefixes[0].capped_sources, 2u);
  EXPECT_EQ(dt::proposed_prefix_limits(f), (std::vector<std::string>{"v4/24=8/s,burst=8", "v6/48=16/s,burst=16"}));
  EXPECT_EQ(f.now.sources, 1u) << "10/s, burst 20: the 40 pps source only";
  ASSERT_TRUE(f.proposal.valid);
  EXPECT_DOUBLE_EQ(f.proposal.rate, 8) << "2 x the median, 4";
  EXPECT_EQ(f.proposed.sources, 1u);
  // Allow and deny rules, byte budgets and silent rules get no proposal.
  dt::SuggestRule bytes = rule;
  bytes.policy.flags = DT_POL_BYTES;
  EXPECT_FALSE(dt::analyse_rule(bytes, ptrs, dt::SuggestParams{}).skipped.empty());
  EXPECT_FALSE(dt::analyse_rule(rule, {}, dt::SuggestParams{}).skipped.empty());
}

TEST(SuggestReport, PrefixBudgetCapsTheFloodingPrefixOnly) {
  // 50 /24s of 20 clients at 1-5 pps (about 60/s each), and one /24 of 200 sources at
  // 5 pps (1000/s together): every source is under the per-source proposal, so only a
  // prefix budget can cap the flood, and it must cap no other prefix.
  std::vector<dt::SampledSource> all;
  uint8_t addr[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 0};
  for (int p = 0; p < 50; p++)
    for (int c = 0; c < 20; c++)
      addr[14] = static_cast<uint8_t>(p), addr[15] = static_cast<uint8_t>(c + 1),
      all.push_back(source_at(addr, static_cast<uint32_t>(1 + c % 5), 12));
  for (int c = 0; c < 200; c++)
    addr[14] = 200, addr[15] = static_cast<uint8_t>(c + 1), all.push_back(source_at(addr, 5, 12));
  std::vector<const dt::SampledSource *> ptrs;
  for (const auto &s : all) ptrs.push_back(&s);
  dt::SuggestRule rule;
  rule.id = 3, rule.name = "web";
  rule.policy.interval_ns = 1'000'000, rule.policy.burst_ns = 2'000'000'000, rule.policy.v4_key_bits = 32;
  const dt::RuleFinding f = dt::analyse_rule(rule, ptrs, dt::SuggestParams{});
  ASSERT_TRUE(f.proposal.valid);
  EXPECT_EQ(f.proposed.sources, 0u) << "no source is over the per-source proposal";
  ASSERT_EQ(f.prefixes.size(), 1u) << "IPv4 only: no IPv6 level";
  const dt::PrefixFinding &pf = f.prefixes[0];
  EXPECT_EQ(pf.level, "v4/24");
  EXPECT_EQ(pf.outliers, 1u);
  ASSERT_TRUE(pf.proposal.valid);
  EXPECT_DOUBLE_EQ(pf.proposal.rate, 120) << "2 x the busiest ordinary /24's 60/s";
  EXPECT_EQ(pf.proposed.sources, 1u);
  EXPECT_EQ(pf.proposed.of_sources, 51u);
  EXPECT_EQ(pf.capped, std::vector<std::string>{"198.18.200.0/24"});
  EXPECT_EQ(pf.capped_sources, 200u);
  EXPECT_EQ(dt::proposed_prefix_limits(f), std::vector<std::string>{"v4/24=120/s,burst=120"});
  // --json: the same figures.
  dt::SuggestRun run;
  run.seconds = 12, run.sources = all.size();
  const dt::Json j =
      dt::Json::parse(dt::render_findings_json(run, {f}, dt::SuggestParams{}, {"r.toml", {"a note"}, "--- r\n"}));
  const dt::Json &r = j["rules"][0];
  EXPECT_EQ(r["name"], "web");
  EXPECT_EQ(r["sources"], 1200);
  EXPECT_EQ(r["proposal"]["rate"], f.proposal.rate);
  EXPECT_EQ(r["proposal"]["throttles"]["sources"], 0);
  EXPECT_EQ(r["proposal"]["prefix_limits"][0], "v4/24=120/s,burst=120");
  EXPECT_EQ(r["prefixes"][0]["level"], "v4/24");
  EXPECT_EQ(r["prefixes"][0]["peaks"]["over_1s"]["n"], 51);
  EXPECT_EQ(r["prefixes"][0]["proposal"]["rate"], 120);
  EXPECT_EQ(r["prefixes"][0]["proposal"]["floods_left_out"], 1);
  EXPECT_EQ(r["prefixes"][0]["proposal"]["throttles"]["prefixes"], 1);
  EXPECT_EQ(r["prefixes"][0]["proposal"]["capped"][0], "198.18.200.0/24");
  EXPECT_EQ(j["notes"][0], "a note");
  EXPECT_EQ(j["diff"], "--- r\n");
  // A rule keyed by destination takes no prefix budget; one with levels keeps them.
  dt::SuggestRule dest = rule;
  dest.policy.flags = DT_POL_KEY_DEST;
  EXPECT_FALSE(dt::analyse_rule(dest, ptrs, dt::SuggestParams{}).prefixes.at(0).proposal.valid);
  dt::SuggestRule levels = rule;
  levels.prefix.n_v4 = 1, levels.prefix.v4[0] = rule.policy, levels.prefix.v4[0].v4_key_bits = 16;
  levels.prefix.n_v6 = 1, levels.prefix.v6[0] = rule.policy, levels.prefix.v6[0].v6_key_bits = 40;
  EXPECT_EQ(dt::proposed_prefix_limits(dt::analyse_rule(levels, ptrs, dt::SuggestParams{})),
            (std::vector<std::string>{"v4/16=8000/s,burst=8000", "v6/40=1000/s,burst=2000"}))
      << "the one /16 (1000/s + 50 x 60/s) x 2 proposed, the silent IPv6 level kept as it is";
}

}  // namespace
