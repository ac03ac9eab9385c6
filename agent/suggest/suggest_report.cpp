// suggest_report.cpp - per-rule findings of agent suggest, and their text.
#include "suggest/suggest_report.h"

#include <algorithm>
#include <map>

#include "common/address.h"

namespace dt {
namespace {

PeakQuantiles peak_quantiles(const std::vector<const HitSeries *> &series, size_t long_window) {
  return {quantiles(peak_rates(series, 1)), quantiles(peak_rates(series, long_window))};
}

size_t long_window_of(const std::vector<const SampledSource *> &sources, const SuggestParams &p) {
  const size_t seconds = sources.empty() ? 0 : sources.front()->per_s.size();
  return std::max<size_t>(1, std::min(p.long_window, seconds));
}

// The prefix lengths aggregates are grouped by: the rule's prefix budgets' levels, else
// /24 (IPv4) and /64 (IPv6).
std::vector<std::pair<bool, unsigned>> levels_of(const dt_prefix_policy &pp) {
  std::vector<std::pair<bool, unsigned>> out;
  for (unsigned i = 0; i < pp.n_v4 && i < DT_PREFIX_LEVELS; i++) out.push_back({false, pp.v4[i].v4_key_bits});
  for (unsigned i = 0; i < pp.n_v6 && i < DT_PREFIX_LEVELS; i++) out.push_back({true, pp.v6[i].v6_key_bits});
  if (out.empty()) out = {{false, 24}, {true, 64}};
  return out;
}

// The sources of one family, summed per prefix of `bits` (of that family's address).
std::vector<HitSeries> prefix_aggregates(const std::vector<const SampledSource *> &sources, bool v6, unsigned bits) {
  std::map<std::string, size_t> groups;
  std::vector<const HitSeries *> series;
  std::vector<size_t> group;
  const unsigned total = v6 ? bits : 96 + bits;  // bits of the 16-byte (IPv4-mapped) address
  for (const SampledSource *s : sources) {
    if (addr_is_v4(s->key.addr) == v6) continue;
    std::string prefix(reinterpret_cast<const char *>(s->key.addr), 16);
    for (unsigned b = total; b < 128; b++) prefix[b / 8] = static_cast<char>(prefix[b / 8] & ~(0x80 >> (b % 8)));
    group.push_back(groups.emplace(prefix, groups.size()).first->second);
    series.push_back(&s->per_s);
  }
  return sum_by_group(series, group, groups.size());
}

std::string why_skipped(const SuggestRule &r, size_t sources) {
  if (r.policy.action != DT_ACT_THROTTLE) return "an allow or deny rule: no rate";
  if (r.policy.flags & DT_POL_BYTES) return "a byte budget: suggest proposes packet rates only";
  if (sources == 0) return "no traffic measured";
  return "";
}

}  // namespace

RuleFinding analyse_rule(const SuggestRule &rule, const std::vector<const SampledSource *> &sources,
                         const SuggestParams &p) {
  RuleFinding f;
  f.rule = rule;
  std::vector<const HitSeries *> series;
  for (const SampledSource *s : sources) {
    series.push_back(&s->per_s);
    uint64_t sent = 0;
    for (uint32_t h : s->per_s) sent += h;
    f.hits += sent, f.sources += sent > 0;
  }
  f.skipped = why_skipped(rule, f.hits ? sources.size() : 0);
  if (!f.skipped.empty()) return f;
  const size_t long_window = f.long_window = long_window_of(sources, p);
  f.peaks = peak_quantiles(series, long_window);
  for (const auto &[v6, bits] : levels_of(rule.prefix)) {
    const std::vector<HitSeries> agg = prefix_aggregates(sources, v6, bits);
    if (agg.empty()) continue;
    std::vector<const HitSeries *> ptrs;
    for (const HitSeries &a : agg) ptrs.push_back(&a);
    f.prefixes.push_back({(v6 ? "v6/" : "v4/") + std::to_string(bits), peak_quantiles(ptrs, long_window)});
  }
  if (rule.policy.interval_ns)
    f.now = throttled(series, 1e9 / static_cast<double>(rule.policy.interval_ns), rule.policy.burst_ns / rule.policy.interval_ns);
  SuggestParams q = p;
  q.long_window = long_window;
  f.proposal = propose(peak_rates(series, 1), peak_rates(series, long_window), q);
  if (f.proposal.valid) f.proposed = throttled(series, f.proposal.rate, f.proposal.burst);
  return f;
}

}  // namespace dt
