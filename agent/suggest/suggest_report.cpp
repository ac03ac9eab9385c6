// suggest_report.cpp - per-rule findings of agent suggest, and their text.
#include "suggest/suggest_report.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "common/address.h"
#include "suggest/rules_diff.h"

namespace dt {
namespace {

PeakQuantiles peak_quantiles(const std::vector<const HitSeries *> &series, size_t long_window) {
  return {quantiles(peak_rates(series, 1)), quantiles(peak_rates(series, long_window))};
}

size_t long_window_of(const std::vector<const SampledSource *> &sources, const SuggestParams &p) {
  const size_t seconds = sources.empty() ? 0 : sources.front()->per_s.size();
  return std::max<size_t>(1, std::min(p.long_window, seconds));
}

// The prefix levels aggregates are grouped by: the rule's prefix budgets' levels, else
// /24 (IPv4) and /48 (IPv6) where shorter than the rule's source buckets.
struct Level {
  bool v6 = false;
  unsigned bits = 0;
  const dt_policy *limit = nullptr;  // the rule's budget at this level, if any
};
std::vector<Level> levels_of(const SuggestRule &r) {
  std::vector<Level> out;
  const dt_prefix_policy &pp = r.prefix;
  for (unsigned i = 0; i < pp.n_v4 && i < DT_PREFIX_LEVELS; i++)
    out.push_back({false, pp.v4[i].v4_key_bits, &pp.v4[i]});
  for (unsigned i = 0; i < pp.n_v6 && i < DT_PREFIX_LEVELS; i++) out.push_back({true, pp.v6[i].v6_key_bits, &pp.v6[i]});
  if (!out.empty()) return out;
  if (r.policy.v4_key_bits == 0 || r.policy.v4_key_bits > 24) out.push_back({false, 24, nullptr});
  if (r.policy.v6_key_bits == 0 || r.policy.v6_key_bits > 48) out.push_back({true, 48, nullptr});
  return out;
}

// The sources of one family, summed per prefix of `bits` (of that family's address).
struct PrefixGroups {
  std::vector<std::string> names;  // "198.18.20.0/24"
  std::vector<uint64_t> members;   // sources in each
  std::vector<HitSeries> sums;
};
PrefixGroups prefix_aggregates(const std::vector<const SampledSource *> &sources, bool v6, unsigned bits) {
  std::map<std::string, size_t> groups;
  std::vector<const HitSeries *> series;
  std::vector<size_t> group;
  PrefixGroups out;
  const unsigned total = v6 ? bits : 96 + bits;  // bits of the 16-byte (IPv4-mapped) address
  for (const SampledSource *s : sources) {
    if (addr_is_v4(s->key.addr) == v6) continue;
    dt_key masked{};
    memcpy(masked.addr, s->key.addr, sizeof masked.addr);
    for (unsigned b = total; b < 128; b++)
      masked.addr[b / 8] = static_cast<uint8_t>(masked.addr[b / 8] & ~(0x80 >> (b % 8)));
    const auto [at, added] =
        groups.emplace(std::string(reinterpret_cast<const char *>(masked.addr), 16), groups.size());
    if (added) out.names.push_back(key_to_string(masked) + "/" + std::to_string(bits)), out.members.push_back(0);
    out.members[at->second]++;
    group.push_back(at->second);
    series.push_back(&s->per_s);
  }
  out.sums = sum_by_group(series, group, groups.size());
  return out;
}

Proposal limit_of(const dt_policy &pol) {
  Proposal p;
  if (!pol.interval_ns) return p;
  p.valid = true;
  p.rate = 1e9 / static_cast<double>(pol.interval_ns);
  p.burst = pol.burst_ns / pol.interval_ns;
  return p;
}

// The prefixes a budget would throttle: their names (the first kMaxCapped) and sources.
void note_capped(const PrefixGroups &g, PrefixFinding *f) {
  for (size_t i = 0; i < g.sums.size(); i++) {
    if (refused_hits(g.sums[i], f->proposal.rate, f->proposal.burst) == 0) continue;
    if (f->capped.size() < kMaxCapped) f->capped.push_back(g.names[i]);
    f->capped_sources += g.members[i];
  }
}

PrefixFinding analyse_level(const Level &l, const PrefixGroups &g, const RuleFinding &rf, const SuggestParams &p) {
  PrefixFinding f;
  f.v6 = l.v6, f.bits = l.bits, f.level = (l.v6 ? "v6/" : "v4/") + std::to_string(l.bits);
  std::vector<const HitSeries *> ptrs;
  for (const HitSeries &a : g.sums) ptrs.push_back(&a);
  f.peaks = peak_quantiles(ptrs, p.long_window);
  if (l.limit && (f.now_limit = limit_of(*l.limit)).valid) {
    f.has_now = true;
    f.now = throttled(ptrs, f.now_limit.rate, f.now_limit.burst);
  }
  if (rf.rule.policy.flags & DT_POL_KEY_DEST) return f;  // its buckets are destinations: no prefix budget
  const PrefixProposal pp = propose_prefix(peak_rates(ptrs, 1), peak_rates(ptrs, p.long_window), p, rf.proposal);
  f.outliers = pp.outliers, f.proposal = pp.proposal;
  if (!f.proposal.valid) return f;
  f.proposed = throttled(ptrs, f.proposal.rate, f.proposal.burst);
  note_capped(g, &f);
  return f;
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
  if (rule.policy.interval_ns)
    f.now = throttled(series, 1e9 / static_cast<double>(rule.policy.interval_ns),
                      rule.policy.burst_ns / rule.policy.interval_ns);
  SuggestParams q = p;
  q.long_window = long_window;
  f.proposal = propose(peak_rates(series, 1), peak_rates(series, long_window), q);
  if (f.proposal.valid) f.proposed = throttled(series, f.proposal.rate, f.proposal.burst);
  for (const Level &l : levels_of(rule)) {
    const PrefixGroups g = prefix_aggregates(sources, l.v6, l.bits);
    if (!g.sums.empty()) f.prefixes.push_back(analyse_level(l, g, f, q));
  }
  return f;
}

std::vector<std::string> proposed_prefix_limits(const RuleFinding &f) {
  std::vector<std::string> out;
  for (const Level &l : levels_of(f.rule)) {
    const PrefixFinding *pf = nullptr;
    for (const PrefixFinding &x : f.prefixes)
      if (x.v6 == l.v6 && x.bits == l.bits) pf = &x;
    if (pf && pf->proposal.valid) {
      out.push_back(prefix_limit_text(l.v6, l.bits, pf->proposal.rate, pf->proposal.burst));
    } else if (l.limit) {
      const Proposal now = limit_of(*l.limit);
      if (now.valid) out.push_back(prefix_limit_text(l.v6, l.bits, now.rate, now.burst));
    }
  }
  return out;
}

}  // namespace dt
