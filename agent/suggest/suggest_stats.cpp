// suggest_stats.cpp - windowed peaks, quantiles, the proposal and its throttled share.
#include "suggest/suggest_stats.h"

#include <algorithm>
#include <cmath>

namespace dt {

uint64_t window_peak(const HitSeries &s, size_t window) {
  if (window == 0) window = 1;
  uint64_t sum = 0, best = 0;
  for (size_t i = 0; i < s.size(); i++) {
    sum += s[i];
    if (i >= window) sum -= s[i - window];
    best = std::max(best, sum);
  }
  return best;
}

double quantile_of(const std::vector<double> &sorted, double q) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(q * static_cast<double>(sorted.size()) - 1e-9);
  const size_t at = rank < 1 ? 0 : std::min(sorted.size() - 1, static_cast<size_t>(rank) - 1);
  return sorted[at];
}

Quantiles quantiles(std::vector<double> values) {
  Quantiles q;
  q.n = values.size();
  if (values.empty()) return q;
  std::sort(values.begin(), values.end());
  q.p50 = quantile_of(values, 0.50);
  q.p99 = quantile_of(values, 0.99);
  q.p999 = quantile_of(values, 0.999);
  q.max = values.back();
  return q;
}

std::vector<double> peak_rates(const std::vector<const HitSeries *> &series, size_t window) {
  std::vector<double> out;
  out.reserve(series.size());
  for (const HitSeries *s : series)
    out.push_back(static_cast<double>(window_peak(*s, window)) / static_cast<double>(window ? window : 1));
  return out;
}

double round_up_2sig(double x) {
  if (!(x > 0)) return 0;
  const double step = std::pow(10.0, std::floor(std::log10(x)) - 1);  // the second digit's unit
  const double r = std::ceil(x / step - 1e-9) * step;
  return std::round(r / step) * step;  // drop the binary noise of step's multiple
}

Proposal propose(std::vector<double> peak1, std::vector<double> peak_long, const SuggestParams &p) {
  Proposal out;
  std::sort(peak1.begin(), peak1.end());
  std::sort(peak_long.begin(), peak_long.end());
  const double sustained = quantile_of(peak_long, p.quantile), short_peak = quantile_of(peak1, p.quantile);
  if (!(sustained > 0) && !(short_peak > 0)) return out;
  out.rate = round_up_2sig(std::max(p.headroom * sustained, 0.000001));
  const double burst = std::max(out.rate, p.headroom * short_peak - out.rate);
  out.burst = static_cast<uint64_t>(std::max(1.0, std::ceil(round_up_2sig(burst))));
  out.valid = true;
  return out;
}

PrefixProposal propose_prefix(const std::vector<double> &peak1, const std::vector<double> &peak_long,
                              const SuggestParams &p, const Proposal &floor) {
  PrefixProposal out;
  std::vector<double> sorted = peak_long;
  std::sort(sorted.begin(), sorted.end());
  const double fence = kPrefixOutlier * quantile_of(sorted, 0.5);
  std::vector<double> ordinary1, ordinary_long;
  for (size_t i = 0; i < peak_long.size() && i < peak1.size(); i++) {
    if (peak_long[i] > fence) {
      out.outliers++;
      continue;
    }
    ordinary1.push_back(peak1[i]);
    ordinary_long.push_back(peak_long[i]);
  }
  out.proposal = propose(std::move(ordinary1), std::move(ordinary_long), p);
  if (!out.proposal.valid || !floor.valid) return out;
  out.proposal.rate = std::max(out.proposal.rate, floor.rate);
  out.proposal.burst = std::max(out.proposal.burst, floor.burst);
  return out;
}

uint64_t refused_hits(const HitSeries &s, double rate, uint64_t burst) {
  const double cap = static_cast<double>(burst);
  double tokens = cap;
  uint64_t refused = 0;
  for (uint32_t hits : s) {
    const double available = tokens + rate;
    const double h = static_cast<double>(hits);
    // Whole packets: a fraction of a token admits nothing.
    const double admitted = std::min(h, std::floor(available + 1e-9));
    refused += static_cast<uint64_t>(h - admitted);
    tokens = std::min(cap, available - admitted);
  }
  return refused;
}

Throttled throttled(const std::vector<const HitSeries *> &series, double rate, uint64_t burst) {
  Throttled t;
  for (const HitSeries *s : series) {
    uint64_t total = 0;
    for (uint32_t h : *s) total += h;
    if (total == 0) continue;
    const uint64_t refused = refused_hits(*s, rate, burst);
    t.of_sources++;
    t.of_packets += total;
    t.packets += refused;
    if (refused) t.sources++;
  }
  return t;
}

std::vector<HitSeries> sum_by_group(const std::vector<const HitSeries *> &series, const std::vector<size_t> &group,
                                    size_t groups) {
  std::vector<HitSeries> out(groups);
  for (size_t i = 0; i < series.size() && i < group.size(); i++) {
    HitSeries &g = out[group[i]];
    if (g.size() < series[i]->size()) g.resize(series[i]->size(), 0);
    for (size_t t = 0; t < series[i]->size(); t++) {
      const uint64_t v = uint64_t{g[t]} + (*series[i])[t];
      g[t] = static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX));
    }
  }
  return out;
}

}  // namespace dt
