// scenario.cpp - the simulator's scenarios: their checks, names and the reference ones.
#include "scenario/scenario.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "dataplane/policy.h"
#include "dthrottle/bucket.h"

namespace dt::sim {
namespace {

constexpr size_t kMaxHosts = 1024;
constexpr size_t kMaxClients = size_t{1} << 17;  // 198.18.0.0/15
constexpr double kMaxRequests = 20e6;            // memory: 16 bytes each
constexpr double kMaxTimelineCells = 10e6;       // clients x hosts x bins
constexpr double kMaxBusySignals = 20e6;         // memory: 16 bytes each
constexpr int64_t kMaxSkewMs = 86'400'000;

// Calls emit(t) for the times `per_second` apart from start, before stop: each from its index,
// not by adding a rounded interval, so that long runs do not drift.
template <class Emit>
void evenly_spaced(Ns start, Ns stop, double per_second, Emit emit) {
  for (uint64_t k = 0;; k++) {
    const Ns t = start + static_cast<Ns>(std::llround(static_cast<double>(k) * 1e9 / per_second));
    if (t >= stop) return;
    emit(t);
  }
}

bool fail(std::string *err, const std::string &msg) {
  *err = msg;
  return false;
}

}  // namespace

Ns client_stop(const Scenario &s, const Client &c) { return c.stop == 0 ? s.duration : std::min(c.stop, s.duration); }

uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr std::pair<LoadBalancer, const char *> kLbNames[] = {
    {LoadBalancer::RoundRobin, "round-robin"}, {LoadBalancer::Random, "random"}, {LoadBalancer::Sticky, "sticky"}};
constexpr std::pair<Scheme, const char *> kSchemeNames[] = {
    {Scheme::Mesh, "mesh"}, {Scheme::Owner, "owner"}, {Scheme::Hub, "hub"}};
constexpr std::pair<BusyPattern, const char *> kPatternNames[] = {{BusyPattern::Steady, "steady"},
                                                                  {BusyPattern::Flappy, "flappy"}};

const char *lb_name(LoadBalancer lb) { return name_in(kLbNames, lb); }
bool parse_lb(const std::string &s, LoadBalancer *out) { return parse_in(kLbNames, s, out); }
const char *scheme_name(Scheme s) { return name_in(kSchemeNames, s); }
bool parse_scheme(const std::string &s, Scheme *out) { return parse_in(kSchemeNames, s, out); }
const char *busy_pattern_name(BusyPattern p) { return name_in(kPatternNames, p); }
bool parse_busy_pattern(const std::string &s, BusyPattern *out) { return parse_in(kPatternNames, s, out); }

bool validate(const Scenario &s, std::string *err) {
  if (s.hosts < 1 || s.hosts > kMaxHosts) return fail(err, "hosts must be 1 to " + std::to_string(kMaxHosts));
  dt_policy p;
  if (!make_policy(s.rate, s.burst, &p, err)) return false;
  if (s.period == 0 || s.duration == 0 || s.bin == 0)
    return fail(err, "period, duration and timeline bin must be greater than 0");
  if (s.duration > 365 * 24 * 3600 * kSec) return fail(err, "duration must be at most a year");
  if (!s.report_offset.empty() && s.report_offset.size() != s.hosts)
    return fail(err, "give one report offset per host (or none)");
  for (Ns o : s.report_offset)
    if (o >= s.period) return fail(err, "every report offset must be shorter than the period");
  if (!s.clock_skew_ms.empty() && s.clock_skew_ms.size() != s.hosts)
    return fail(err, "give one clock skew per host (or none)");
  for (int64_t k : s.clock_skew_ms)
    if (k < -kMaxSkewMs || k > kMaxSkewMs) return fail(err, "a clock skew must be within a day");
  if (s.clients.size() > kMaxClients)
    return fail(err, "at most " + std::to_string(kMaxClients) + " clients (one per address of 198.18.0.0/15)");
  double requests = 0;
  for (const auto &c : s.clients) {
    if (!(c.rate >= 0 && c.rate <= 1e7))
      return fail(err, "client " + c.name + ": offered rate must be 0 to 10000000 per second");
    if (c.stop != 0 && c.stop <= c.start) return fail(err, "client " + c.name + ": stop must come after start");
    const Ns stop = client_stop(s, c);
    if (c.rate > 0 && stop > c.start) requests += c.rate * static_cast<double>(stop - c.start) / 1e9;
    for (const auto &b : c.bursts) {
      if (b.host < -1 || b.host >= static_cast<int>(s.hosts))
        return fail(err, "client " + c.name + ": a burst names host " + std::to_string(b.host) +
                             ", but hosts are 0 to " + std::to_string(s.hosts - 1));
      if (b.at > s.duration) return fail(err, "client " + c.name + ": a burst comes after the end");
      requests += b.count;
    }
  }
  if (requests > kMaxRequests)
    return fail(err, "the scenario offers about " + std::to_string(static_cast<uint64_t>(requests)) +
                         " requests; the simulator takes at most 20000000");
  if (!(s.net.loss >= 0 && s.net.loss <= 1) || !(s.net.duplicate >= 0 && s.net.duplicate <= 1))
    return fail(err, "loss and duplicate are probabilities: 0 to 1");
  if (s.net.delay > 3600 * kSec || s.net.jitter > 3600 * kSec)
    return fail(err, "network delay and jitter must be at most an hour");
  for (const auto &p : s.net.partitions) {
    if (p.side.size() != s.hosts) return fail(err, "a partition must put every host on a side");
    if (p.end <= p.start) return fail(err, "a partition must end after it starts");
  }
  if (s.join_host >= static_cast<int>(s.hosts) || (s.join_host >= 0 && (s.join_at >= s.duration || s.hosts < 2)))
    return fail(err, "the joining host must be one of the hosts (0 to " + std::to_string(s.hosts - 1) +
                         "), joining before the end, and not the only one");
  if (!s.busy.empty() && !s.adaptive) return fail(err, "busy signals need an adaptive scenario");
  if (s.shared_period && (s.scheme != Scheme::Owner || s.shared_period >= s.period))
    return fail(err, "a shared period goes with the owner scheme and must be shorter than the period");
  if (s.shared_period && !s.early_report)
    return fail(err, "shared sources go early at the early ticks: a shared period needs early reports");
  if (s.scheme == Scheme::Hub && (s.hub_period < kMs || s.hub_period > s.duration))
    return fail(err, "the hub period must be 1ms to the scenario's duration");
  if (s.scheme == Scheme::Hub && (s.adaptive || !s.net.partitions.empty() || s.net.duplicate > 0))
    return fail(err, "the hub scheme models reports and sums only: no adaptive limits, partitions or duplicates");
  if (s.adaptive) {
    std::string why;
    if (!validate_adaptive_params(s.adaptive_params, &why)) return fail(err, "adaptive: " + why);
    if (s.duration % s.bin != 0) return fail(err, "adaptive: the timeline bin must divide the duration");
    double signals = 0;
    for (const auto &b : s.busy) {
      if (b.host < 0 || b.host >= static_cast<int>(s.hosts))
        return fail(err, "busy signals to host " + std::to_string(b.host) + ", but hosts are 0 to " +
                             std::to_string(s.hosts - 1));
      if (b.end <= b.start || b.end > s.duration)
        return fail(err, "a busy window must end after it starts, and at most at the end of the scenario");
      if (!(b.per_second > 0 && b.per_second <= 1e7)) return fail(err, "busy signals: 1 to 10000000 per second");
      signals += b.per_second * static_cast<double>(b.end - b.start) / 1e9;
    }
    if (signals > kMaxBusySignals) return fail(err, "at most 20000000 busy signals");
  }
  const double bins = static_cast<double>(s.duration / s.bin + 1);
  if (bins * static_cast<double>(s.clients.size() * s.hosts) > kMaxTimelineCells)
    return fail(err, "the timeline would be too large: use a longer bin");
  return true;
}

// The reference daemon's A/B example (hosts A = 0 and B = 1, burst 10, rate 1/s,
// reports every 5 s). The reference keeps whole-second books: its buckets refill by
// one token at each whole second counted from t=0, before client C's first request
// at t=0.1. Continuous refill (GCRA) starts counting when the bucket is first drawn
// from, so the reference's clock maps onto ours as:
//   reference t=0.1  C: 17 requests (9 to A, 8 to B)      here t=0
//   reference t=0.2  C: 2 requests to A (1 refused)        here t=0.1
//   reference t=5    A and B send their reports            here t=4.9 (report offset)
//   reference t=5.1  the reports are applied: -3 and -3    here t=5.0 (0.1 s delay)
//   reference t=5.2  C: 2 requests (one each), refused     here t=5.1
//   reference t=6..9 -2, -1, 0, 1 on both hosts            here t=6..9
// i.e. every event happens 0.1 s earlier here, and whole seconds are the same
// seconds: the reference's whole-token refill at each whole second from t=0 equals
// continuous refill from C's first request at our t=0.
// Where the books differ: between whole seconds the reference shows no refill, we
// show the fraction: A holds 0.1 (reference 0) after the requests at reference
// t=0.2, and both hosts -2.9 (reference -3) at reference t=5.2. Then C makes 2
// requests to A at t=9: one is served. A's report of that hit, sent at t=9.9,
// reaches B at t=10.0.
Scenario reference_ab_scenario() {
  Scenario s;
  s.hosts = 2;
  s.rate = 1;
  s.burst = 10;
  s.period = 5 * kSec;
  s.duration = 10 * kSec;
  s.report_offset = {4900 * kMs, 4900 * kMs};
  s.net.delay = 100 * kMs;
  s.bin = kSec;
  Client c;
  c.name = "C";
  c.bursts = {{0, 9, 0}, {0, 8, 1}, {100 * kMs, 2, 0}, {5100 * kMs, 1, 0}, {5100 * kMs, 1, 1}, {9 * kSec, 2, 0}};
  s.clients = {c};
  return s;
}

// The reference's busy phase lasts 10 s, then 20 s more decide whether the traffic
// recovered. Its time=N rows are our bin [N-1, N) s: flappy's busy seconds 3, 6, 9
// are our [2,3), [5,6), [8,9).
Scenario busy_reference_scenario(BusyPattern p, const AdaptiveParams &params, size_t hosts) {
  constexpr double kBusyPerSecond = 3000;  // the reference's "maximum number of busy responses"
  Scenario s;
  s.hosts = hosts;
  s.rate = 10000;
  s.burst = 5000;
  s.period = 200 * kMs;
  s.duration = 30 * kSec;
  s.bin = kSec;
  s.clients = {Client{"c0", 5000, 0, 0, {}}};
  s.adaptive = true;
  s.adaptive_params = params;
  if (p == BusyPattern::Steady) s.busy = {{0, 10 * kSec, kBusyPerSecond, 0}};
  else
    for (Ns at : {2 * kSec, 5 * kSec, 8 * kSec}) s.busy.push_back({at, at + kSec, kBusyPerSecond, 0});
  return s;
}

Ns busy_end(const Scenario &s) {
  Ns end = 0;
  for (const auto &b : s.busy) end = std::max(end, b.end);
  return end;
}

dt_key client_key(size_t i) {
  dt_key k{};
  k.addr[10] = k.addr[11] = 0xff;
  k.addr[12] = 198;
  k.addr[13] = static_cast<uint8_t>(18 + (i >> 16));
  k.addr[14] = static_cast<uint8_t>(i >> 8);
  k.addr[15] = static_cast<uint8_t>(i);
  return k;
}

std::vector<Request> requests_of(const Scenario &s) {
  std::vector<Request> out;
  for (uint32_t i = 0; i < s.clients.size(); i++) {
    const Client &c = s.clients[i];
    if (c.rate > 0) evenly_spaced(c.start, client_stop(s, c), c.rate, [&](Ns t) { out.push_back({t, i, -1}); });
    for (const auto &b : c.bursts)
      for (uint32_t k = 0; k < b.count; k++) out.push_back({b.at, i, b.host});
  }
  std::stable_sort(out.begin(), out.end(), [](const Request &a, const Request &b) { return a.at < b.at; });
  return out;
}

std::vector<CentralView> central_views(const Scenario &s, const dt_policy &p, const std::vector<Request> &requests) {
  std::vector<CentralView> out(s.clients.size());
  std::vector<__u64> tat(s.clients.size(), 0);
  for (const auto &r : requests) {
    CentralView &c = out[r.client];
    if (c.offered++ == 0) c.first = r.at;
    c.last = r.at;
    __u64 next;
    if (dt_gcra_admit(tat[r.client], r.at, &p, &next)) tat[r.client] = next, c.ideal++;
  }
  for (auto &c : out)
    if (c.offered) c.budget = s.burst + (c.last - c.first) / p.interval_ns;
  return out;
}

std::vector<BusySignal> busy_signals_of(const Scenario &s) {
  std::vector<BusySignal> out;
  for (const auto &w : s.busy) evenly_spaced(w.start, w.end, w.per_second, [&](Ns t) { out.push_back({t, w.host}); });
  std::stable_sort(out.begin(), out.end(), [](const BusySignal &a, const BusySignal &b) { return a.at < b.at; });
  return out;
}

std::optional<Ns> converged_at(const std::vector<AdaptiveRow> &rows, Ns busy_end) {
  std::optional<Ns> at;
  for (const auto &r : rows) {
    if (r.start < busy_end) continue;
    if (r.throttled) at.reset();
    else if (!at) at = r.end;
  }
  return at;
}
}  // namespace dt::sim
