// suggest_stats.h - the arithmetic of `agent suggest` (docs/rules.md "Suggested limits"):
// per-second hit counts of each source in, windowed peak rates, their quantiles, a
// proposed rate and burst, and the share of sources and packets a rate and burst would
// have throttled. Pure: no maps, no clock (agent/suggest/suggest_sampler.h fills it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dt {

// One source's hits (packets it sent: passed + dropped + would-drop), one count per second
// of the measurement; seconds before it was first seen are zeros.
using HitSeries = std::vector<uint32_t>;

// The most hits in any `window` consecutive seconds of `s` (a series shorter than the
// window: its whole sum, the window padded with idle seconds). window >= 1.
uint64_t window_peak(const HitSeries &s, size_t window);

// Nearest-rank quantiles of a set of values (0 for none).
struct Quantiles {
  double p50 = 0, p99 = 0, p999 = 0, max = 0;
  size_t n = 0;
};
// The value at quantile q (0 < q <= 1) of `sorted` (ascending): its ceil(q * n)-th value.
double quantile_of(const std::vector<double> &sorted, double q);
Quantiles quantiles(std::vector<double> values);

// Each series' peak rate over `window` seconds (hits per second: window_peak / window).
std::vector<double> peak_rates(const std::vector<const HitSeries *> &series, size_t window);

// How the proposal is made: rate = headroom x the `quantile` of the 10 s peak rates,
// burst = max(rate, headroom x the `quantile` of the 1 s peaks - rate): a source at that
// quantile, sending its 1 s peak from a full bucket, is not throttled with room to spare.
struct SuggestParams {
  double quantile = 0.99;   // --quantile
  double headroom = 2.0;    // --headroom
  size_t long_window = 10;  // seconds (shorter measurements use their length)
};

struct Proposal {
  bool valid = false;  // false: no traffic to propose from
  double rate = 0;     // packets per second, rounded up to two significant digits
  uint64_t burst = 0;  // packets
};

// Rounds x > 0 up to two significant digits (137 -> 140, 0.0123 -> 0.013).
double round_up_2sig(double x);

// From each source's 1 s and long-window peak rates (peak_rates), in any order.
Proposal propose(std::vector<double> peak1, std::vector<double> peak_long, const SuggestParams &p);

// A prefix level's budget, from the aggregates of its prefixes (each a sum of sources):
// those whose long-window peak is over kPrefixOutlier x the median prefix's are taken for
// floods, not demand, and left out; of the rest, the proposal is made as propose() makes
// a source's, and never below the sources' own proposal (floor): one source at its rate
// must fit its prefix's budget.
inline constexpr double kPrefixOutlier = 10;
struct PrefixProposal {
  Proposal proposal;
  size_t outliers = 0;  // prefixes left out as floods
};
PrefixProposal propose_prefix(const std::vector<double> &peak1, const std::vector<double> &peak_long,
                              const SuggestParams &p, const Proposal &floor);

// What a rate and burst would have done to the measured traffic: a token bucket, full at
// the start, fed one second at a time as a fluid (a second's hits admitted up to the
// tokens held plus that second's refill), so an estimate for traffic even within a second.
struct Throttled {
  uint64_t sources = 0, of_sources = 0;  // sources with at least one hit refused, of all
  uint64_t packets = 0, of_packets = 0;  // hits refused, of all
  double source_share() const { return of_sources ? double(sources) / double(of_sources) : 0; }
  double packet_share() const { return of_packets ? double(packets) / double(of_packets) : 0; }
};
// Hits of one series a bucket of `rate`/`burst` would have refused.
uint64_t refused_hits(const HitSeries &s, double rate, uint64_t burst);
Throttled throttled(const std::vector<const HitSeries *> &series, double rate, uint64_t burst);

// Sums series element-wise into groups (a prefix's aggregate): group[i] receives series[i].
std::vector<HitSeries> sum_by_group(const std::vector<const HitSeries *> &series, const std::vector<size_t> &group,
                                    size_t groups);

}  // namespace dt
