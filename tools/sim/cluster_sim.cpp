// cluster_sim.cpp - the deterministic cluster simulator (see cluster_sim.h).
#include "sim/cluster_sim.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "dthrottle/bucket.h"
#include "cluster_core/peer_protocol.h"
#include "dataplane/policy.h"

namespace dt::sim {
namespace {

constexpr size_t kMaxHosts = 1024;
constexpr size_t kMaxClients = size_t{1} << 17;  // 198.18.0.0/15
constexpr double kMaxRequests = 20e6;            // memory: 16 bytes each
constexpr double kMaxTimelineCells = 10e6;       // clients x hosts x bins
constexpr double kMaxBusySignals = 20e6;         // memory: 16 bytes each
const char kAdaptiveRule[] = "default";
constexpr int64_t kMaxSkewMs = 86'400'000;

// The report age a scenario's receivers tolerate (PeerTracker: 0 is no limit).
uint64_t max_age_ns(const Scenario &s) {
  if (s.report_max_age == kNever) return 0;
  return s.report_max_age ? s.report_max_age : kReportMaxAgePeriods * s.period;
}

Ns client_stop(const Scenario &s, const Client &c) {
  return c.stop == 0 ? s.duration : std::min(c.stop, s.duration);
}

bool fail(std::string *err, const std::string &msg) {
  *err = msg;
  return false;
}

}  // namespace

uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Each load balancer and its name (--lb), for both directions.
constexpr std::pair<LoadBalancer, const char *> kLbNames[] = {
    {LoadBalancer::RoundRobin, "round-robin"}, {LoadBalancer::Random, "random"}, {LoadBalancer::Sticky, "sticky"}};

const char *lb_name(LoadBalancer lb) {
  for (const auto &[value, name] : kLbNames)
    if (value == lb) return name;
  return "?";
}

bool parse_lb(const std::string &s, LoadBalancer *out) {
  for (const auto &[value, name] : kLbNames) {
    if (s == name) {
      *out = value;
      return true;
    }
  }
  return false;
}

bool validate(const Scenario &s, std::string *err) {
  if (s.hosts < 1 || s.hosts > kMaxHosts)
    return fail(err, "hosts must be 1 to " + std::to_string(kMaxHosts));
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
    if (c.stop != 0 && c.stop <= c.start)
      return fail(err, "client " + c.name + ": stop must come after start");
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
  c.bursts = {{0, 9, 0},           {0, 8, 1},           {100 * kMs, 2, 0},
              {5100 * kMs, 1, 0},  {5100 * kMs, 1, 1},  {9 * kSec, 2, 0}};
  s.clients = {c};
  return s;
}

const char *busy_pattern_name(BusyPattern p) { return p == BusyPattern::Steady ? "steady" : "flappy"; }

bool parse_busy_pattern(const std::string &s, BusyPattern *out) {
  for (auto p : {BusyPattern::Steady, BusyPattern::Flappy}) {
    if (s == busy_pattern_name(p)) {
      *out = p;
      return true;
    }
  }
  return false;
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

std::optional<Ns> converged_at(const std::vector<AdaptiveRow> &rows, Ns busy_end) {
  std::optional<Ns> at;
  for (const auto &r : rows) {
    if (r.start < busy_end) continue;
    if (r.throttled) at.reset();
    else if (!at) at = r.end;
  }
  return at;
}

uint64_t ClientStats::admitted() const {
  uint64_t n = 0;
  for (uint64_t a : admitted_by_host) n += a;
  return n;
}

size_t ClusterSim::KeyHash::operator()(const dt_key &k) const {
  uint64_t a, b;
  memcpy(&a, k.addr, 8);
  memcpy(&b, k.addr + 8, 8);
  return static_cast<size_t>(a * 0x9e3779b97f4a7c15ull ^ b * 0xc2b2ae3d27d4eb4full ^ (b >> 29));
}

uint64_t ClusterSim::wall_ms(size_t h) const {
  const int64_t skew = s_.clock_skew_ms.empty() ? 0 : s_.clock_skew_ms[h];
  return static_cast<uint64_t>(static_cast<int64_t>(kWallEpochMs + now_ / kMs) + skew);
}

bool ClusterSim::KeyEq::operator()(const dt_key &a, const dt_key &b) const {
  return memcmp(a.addr, b.addr, sizeof a.addr) == 0;
}

uint64_t ClusterSim::Rng::next() { return splitmix64(&s); }
double ClusterSim::Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

dt_key ClusterSim::client_key(size_t i) {
  dt_key k{};
  k.addr[10] = k.addr[11] = 0xff;
  k.addr[12] = 198;
  k.addr[13] = static_cast<uint8_t>(18 + (i >> 16));
  k.addr[14] = static_cast<uint8_t>(i >> 8);
  k.addr[15] = static_cast<uint8_t>(i);
  return k;
}

std::unique_ptr<ClusterSim> ClusterSim::create(const Scenario &s, std::string *err) {
  if (!validate(s, err)) return nullptr;
  dt_policy p;
  make_policy(s.rate, s.burst, &p, err);
  return std::unique_ptr<ClusterSim>(new ClusterSim(s, p));
}

ClusterSim::ClusterSim(const Scenario &s, const dt_policy &p)
    : s_(s), policy_(p), lb_rng_{s.seed ^ 0x4c4200000000ull}, net_rng_{s.seed ^ 0x4e4554000000ull} {
  const bool links = s.cadence && s.link_liveness && s.scheme != Scheme::Hub;
  const Ns heartbeat = links ? std::max(s.period, kLinkHeartbeatNs) : kHeartbeatPeriods * s.period;
  const Ns down_after = s.peer_down_after ? s.peer_down_after
                        : s.cadence       ? 2 * heartbeat + s.period
                                          : 5 * s.period;
  // As the agent's cadence_options (agent/cluster/cluster.cpp): with link liveness the tail
  // after a report with hits is half the report max age, one-hit sources wait until their
  // owner's batch is quiet for 1 s (8 s at most).
  CadenceOptions cadence{s.period, heartbeat, kMaxBatchEntries};
  if (links) {
    cadence.tail_ns = std::max(s.period, (max_age_ns(s) ? max_age_ns(s) : kReportMaxAgePeriods * s.period) / 2);
    cadence.batch_wait_ns = std::max(s.period, kLinkBatchWaitNs);
    cadence.batch_quiet_ns = std::max(s.period, kLinkBatchQuietNs);
  }
  rules_.burst_hits = {s.burst};
  uint64_t boot_seed = s.seed, phase_seed = s.seed ^ 0x5048415345000000ull;
  ideal_ = s.net.loss == 0 && s.net.duplicate == 0 && s.net.jitter == 0 && s.net.partitions.empty();
  hosts_.resize(s.hosts);
  for (size_t h = 0; h < s.hosts; h++) {
    Host &host = hosts_[h];
    host.node_id = "h" + std::to_string(h);
    host.boot_id = splitmix64(&boot_seed);
    // Every other host tracked (up to 1024 of them), unauthenticated as the agent today.
    host.tracker = PeerTracker(TrackerOptions{down_after, max_age_ns(s), false, std::max(kMinTrackedPeers, s.hosts),
                                              links && !s.peer_down_after ? (2 * kHeartbeatPeriods + 1) * s.period / 10 : 0});
    host.outbox = std::make_unique<Outbox>(
        OutboxOptions{host.node_id, host.boot_id, max_age_ns(s) ? max_age_ns(s) : 5 * kSec, s.period / 2});
    host.heard.assign(s.hosts, 0);
    // Local-only hosts still end periods when adaptive: the controller runs on them.
    host.next_report = s.reports || s.adaptive ? report_offset(h, &phase_seed) : kNever;
    if (static_cast<int>(h) == s.join_host && host.next_report != kNever)
      host.next_report += s.join_at - s.join_at % s.period + (host.next_report < s.join_at % s.period ? s.period : 0);
    if (host.next_report != kNever) reports_.push({host.next_report, h});
    if (s.shared_period && s.scheme == Scheme::Owner && s.reports) {
      host.next_shared = host.next_report + s.shared_period;
      reports_.push({host.next_shared, kSharedBase + h});
    }
    const size_t periods = s.duration / s.period + 2;
    host.out.resize(periods), host.direct_in.resize(periods), host.own_fanout.resize(periods);
    host.policy = p;
    host.planner = ReportPlanner(PlannerOptions{host.node_id, s.scheme == Scheme::Owner, false, s.hosts - 1,
                                                RouterOptions{kHotPeriods * s.period, max_age_ns(s) ? max_age_ns(s) : kReportMaxAgePeriods * s.period},
                                                cadence});
    host.sender = std::make_unique<ReportSender>(host.planner, *host.outbox, [this, h](const Outgoing &o, uint64_t) {
      publish(h, {o});
      return true;
    });
    if (s.scheme != Scheme::Threshold && s.reports) {
      host.early = EarlyReport(EarlyReportOptions{s.period, s.early_report, s.early_min_hits});
      schedule_early(h, 0);  // the first period starts at 0 (it ends at the host's phase)
    }
    if (s.adaptive) {
      AdaptiveRuleSpec spec;
      spec.name = kAdaptiveRule;
      spec.index = DT_RULE_DEFAULT;
      spec.rate = s.rate;
      spec.params = s.adaptive_params;
      host.adaptive = std::make_unique<AdaptiveSet>();
      host.adaptive->configure({spec}, s.peer_down_after ? s.peer_down_after : 5 * s.period);
    }
  }
  init_hubs(&phase_seed);
  host_stats_.resize(s.hosts);
  fanout_.resize(s.duration / s.period + 2);
  build_requests();
  if (s.adaptive) {
    bins_.assign(s.hosts, std::vector<AdaptiveBin>(s.duration / s.bin));
    for (const auto &w : s.busy)
      for (uint64_t k = 0;; k++) {
        const Ns t = w.start + static_cast<Ns>(std::llround(static_cast<double>(k) * 1e9 / w.per_second));
        if (t >= w.end) break;
        busy_.push_back({t, w.host});
      }
    std::stable_sort(busy_.begin(), busy_.end(), [](const BusySignal &a, const BusySignal &b) { return a.at < b.at; });
  }
}

// Every request of the scenario, in time order (ties: client order, then bursts in
// the order given). The host is picked when the request is handled.
void ClusterSim::build_requests() {
  const size_t bins = s_.duration / s_.bin + 1;
  clients_.resize(s_.clients.size());
  timeline_.assign(s_.clients.size(),
                   std::vector<std::vector<uint64_t>>(s_.hosts, std::vector<uint64_t>(bins, 0)));
  for (uint32_t i = 0; i < s_.clients.size(); i++) {
    const Client &c = s_.clients[i];
    const Ns stop = client_stop(s_, c);
    if (c.rate > 0) {
      for (uint64_t k = 0;; k++) {
        // From k, not by adding a rounded interval: no drift over long runs.
        const Ns t = c.start + static_cast<Ns>(std::llround(static_cast<double>(k) * 1e9 / c.rate));
        if (t >= stop) break;
        requests_.push_back({t, i, -1});
      }
    }
    for (const auto &b : c.bursts)
      for (uint32_t k = 0; k < b.count; k++) requests_.push_back({b.at, i, b.host});
    clients_[i].name = c.name;
    clients_[i].admitted_by_host.assign(s_.hosts, 0);
  }
  std::stable_sort(requests_.begin(), requests_.end(),
                   [](const Request &a, const Request &b) { return a.at < b.at; });
  for (const auto &r : requests_) {
    ClientStats &c = clients_[r.client];
    if (c.offered == 0) c.first = r.at;
    c.last = r.at;
    c.offered++;
  }
  std::vector<__u64> central(clients_.size(), 0);  // one global bucket per client
  for (const auto &r : requests_) {
    __u64 next;
    if (dt_gcra_admit(central[r.client], r.at, &policy_, &next)) {
      central[r.client] = next;
      clients_[r.client].ideal++;
    }
  }
  for (auto &c : clients_)
    if (c.offered) c.budget = s_.burst + (c.last - c.first) / policy_.interval_ns;
}

void ClusterSim::advance_past(Ns t) { advance(t, true); }
void ClusterSim::advance_to(Ns t) { advance(t, false); }

// At one instant: deliveries first (a report that has arrived is applied before
// anything else happens at that time), then reports, then requests, then busy
// signals (a busy answer follows the request it answers).
void ClusterSim::advance(Ns t, bool inclusive) {
  for (;;) {
    const Ns td = in_flight_.empty() ? kNever : in_flight_.top().at;
    // The earliest report (ties: the lowest host), from a heap: O(log hosts) an event.
    const Ns tr = reports_.empty() || reports_.top().first > s_.duration ? kNever : reports_.top().first;
    const size_t reporter = reports_.empty() ? 0 : reports_.top().second;
    const Ns tq = next_request_ < requests_.size() ? requests_[next_request_].at : kNever;
    const Ns tb = next_busy_ < busy_.size() ? busy_[next_busy_].at : kNever;
    const Ns te = early_.empty() ? kNever : early_.top().first;
    const Ns next = std::min({td, tr, te, tq, tb});
    if (next == kNever || next > t || (!inclusive && next == t)) break;
    sample_bins_until(next);  // the bins that end by now end before this event
    now_ = next;
    if (td == next) {
      Delivery d = in_flight_.top();
      in_flight_.pop();
      handle_delivery(d);
    } else if (tr == next) {
      reports_.pop();
      if (reporter >= kSharedBase) report_shared(reporter - kSharedBase);
      else if (reporter < hosts_.size()) handle_report(reporter);
      else hub_period(reporter - hosts_.size());
      reports_.push({next_event_of(reporter), reporter});
    } else if (te == next) {
      const size_t h = early_.top().second;
      early_.pop();
      handle_early(h);
    } else if (tq == next) {
      handle_request(requests_[next_request_++]);
    } else {
      handle_busy(busy_[next_busy_++]);
    }
  }
  sample_bins_until(t);
  now_ = std::max(now_, t);
}

// Records the applied factor at the end of every bin that ends at or before t
// (called before any event at t is handled: an event at a bin's end is the next bin's).
void ClusterSim::sample_bins_until(Ns t) {
  if (bins_.empty()) return;
  for (; bins_sampled_ < bins_[0].size() && (bins_sampled_ + 1) * s_.bin <= t; bins_sampled_++)
    for (size_t h = 0; h < hosts_.size(); h++) bins_[h][bins_sampled_].factor = hosts_[h].applied;
}

size_t ClusterSim::pick_host(uint32_t client) {
  const size_t n = s_.hosts - (s_.join_host >= 0 && !up(static_cast<size_t>(s_.join_host)));
  switch (s_.lb) {
    case LoadBalancer::RoundRobin: return skip_down(round_robin_++ % n, n);
    case LoadBalancer::Random: return skip_down(static_cast<size_t>(lb_rng_.uniform() * static_cast<double>(n)), n);
    case LoadBalancer::Sticky: {
      const size_t h = client % s_.hosts;
      return up(h) ? h : (h + 1) % s_.hosts;
    }
  }
  return 0;
}

size_t ClusterSim::bin_of(Ns t) const {
  return std::min<size_t>(t / s_.bin, timeline_.empty() ? 0 : timeline_[0][0].size() - 1);
}

// dt_xdp: one token or refuse.
void ClusterSim::handle_request(const Request &r) {
  const size_t h = r.host >= 0 ? static_cast<size_t>(r.host) : pick_host(r.client);
  Host &host = hosts_[h];
  const dt_key key = client_key(r.client);
  Bucket &b = host.buckets[key];  // a new bucket is full (tat 0)
  AdaptiveBin *bin = bins_.empty() || now_ / s_.bin >= bins_[h].size() ? nullptr : &bins_[h][now_ / s_.bin];
  if (bin) bin->offered++;
  __u64 next;
  if (dt_gcra_admit(b.tat, now_, &host.policy, &next)) {
    b.tat = next;
    b.passed++;
    announce(h, b, key);
    clients_[r.client].admitted_by_host[h]++;
    host_stats_[h].admitted++;
    timeline_[r.client][h][bin_of(now_)]++;
    if (host.adaptive) {
      const ReportEntry hit{key, 1};
      host.adaptive->add_packet_hits(std::span(&hit, 1));
    }
    if (bin) bin->admitted++;
  } else {
    clients_[r.client].refused++;
    host_stats_[h].refused++;
    if (bin) bin->refused++;
  }
}

// A busy signal from the protected service. Dropped unless the cluster admitted
// something since the host's last one: a busy answer needs a request, and the
// service behind the edge gets requests from every host, not only from this one.
// (Before the host's first report period nothing is measured: the controller then
// halves the limit itself.)
void ClusterSim::handle_busy(const BusySignal &s) {
  Host &host = hosts_[s.host];
  HostStats &st = host_stats_[s.host];
  uint64_t cluster_admitted = 0;
  for (const HostStats &hs : host_stats_) cluster_admitted += hs.admitted;
  if (cluster_admitted == host.admitted_at_busy) {
    st.busy_dropped++;
    return;
  }
  host.admitted_at_busy = cluster_admitted;
  st.busy++;
  if (st.first_busy == kNever) st.first_busy = now_;
  if (now_ / s_.bin < bins_[s.host].size()) bins_[s.host][now_ / s_.bin].busy++;
  host.adaptive->busy(AdaptiveKind::Packet, kAdaptiveRule, "simulated service", now_);
  apply_factor(s.host, std::min(host.applied, host.adaptive->status(now_).front().local_factor));
}

// Installs the factor's policy on host h (adaptive_policy keeps the bucket's time
// window: existing balances keep their meaning in time, as in the kernel).
void ClusterSim::apply_factor(size_t h, double f) {
  Host &host = hosts_[h];
  if (f == host.applied) return;
  host.applied = f;
  host.policy = adaptive_policy(policy_, f);
  if (f < 1.0 && host_stats_[h].first_backoff == kNever) host_stats_[h].first_backoff = now_;
}

// The end of host h's period for its AdaptiveSet; the policy follows the factor.
void ClusterSim::adaptive_period(size_t h) {
  Host &host = hosts_[h];
  const Ns span = now_ - host.last_period;
  host.last_period = now_;
  host.adaptive->on_period(now_, span);
  apply_factor(h, host.adaptive->factors(AdaptiveKind::Packet, 1)[DT_RULE_DEFAULT]);
}

// The end of host h's period: collect passed - reported (dt_collect), route and publish
// through the cluster core, check liveness.
void ClusterSim::handle_report(size_t h) {
  Host &host = hosts_[h];
  if (host.adaptive) adaptive_period(h);
  if (!s_.reports) {
    host.next_report += s_.period;
    return;
  }
  give_back_held(h);
  // With link liveness a joiner is a new subscriber everywhere: a heartbeat at this period's end.
  if (s_.join_host >= 0 && s_.cadence && s_.link_liveness && now_ >= s_.join_at && now_ < s_.join_at + s_.period)
    host.planner.force_broadcast();
  std::vector<ReportEntry> served;
  for (auto &[key, b] : host.buckets) {
    if (b.passed == b.reported) continue;
    served.push_back({key, b.passed - b.reported});
  }
  // Hash order is the standard library's business: sort, so the messages (and their
  // split into parts) are the same everywhere.
  std::sort(served.begin(), served.end(), [](const ReportEntry &a, const ReportEntry &b) {
    return memcmp(a.key.addr, b.key.addr, sizeof a.key.addr) < 0;
  });
  host_stats_[h].reports++;
  if (host.early.enabled()) {
    host.early.period_reported(served, now_);
    host.announced.clear();  // the kernel's next epoch: announced again at their next admission
    schedule_early(h, now_);
  }
  if (s_.scheme == Scheme::Threshold) {
    route_threshold(h, std::move(served));
  } else if (s_.scheme == Scheme::Hub) {
    mark_reported(h, served);
    publish_to_hubs(h, std::move(served));
  } else {
    mark_reported(h, served);
    send_period(h, std::move(served), owner_ready(h), s_.cadence);
  }
  end_period(h);
}

// After host h's report: resend requests and liveness (a lossy network only), the next period.
void ClusterSim::end_period(size_t h) {
  Host &host = hosts_[h];
  if (!ideal_) {
    request_resends(h);
    for (const auto &change : host.tracker.check_liveness(now_)) host_stats_[h].peer_downs += !change.up;
    if (s_.cadence && s_.link_liveness && s_.scheme != Scheme::Hub) link_liveness(h);
  }
  host.outbox->new_period();
  host.next_report += s_.period;
}

// dt_collect's second half: `entries` are reported (sent, or noted as their owner).
void ClusterSim::mark_reported(size_t h, const std::vector<ReportEntry> &entries) {
  for (const ReportEntry &e : entries) {
    hosts_[h].buckets[e.key].reported += e.hits;
    host_stats_[h].hits_reported += e.hits;
  }
}

// Host h's report period offset: the scenario's, a seeded random one, or 0.
Ns ClusterSim::report_offset(size_t h, uint64_t *seed) const {
  if (!s_.report_offset.empty()) return s_.report_offset[h];
  if (!s_.random_phase) return 0;
  return splitmix64(seed) % s_.period;
}

// Host h's period report (reported already: mark_reported), through the cluster core
// (report_sender.h): to owners and everyone, when its cadence says; a report to everyone is
// published even when empty: it says "alive".
void ClusterSim::send_period(size_t h, std::vector<ReportEntry> served, bool owners, bool cadence) {
  Host &host = hosts_[h];
  ReportBody body;
  body.rules = rules_.names;  // every simulated client is under the default rule
  body.entries = std::move(served);
  if (host.adaptive) body.factors = host.adaptive->report_factors();
  host.sender->period(host.outbox->header(++host.epoch, wall_ms(h)), std::move(body), owners, now_, cadence);
}

// What host h's outbox returns, on the wire: a directed message to its owner, any other to
// every peer (a PUB socket).
void ClusterSim::publish(size_t h, const std::vector<Outgoing> &out) {
  HostStats &st = host_stats_[h];
  for (const Outgoing &o : out) {
    MessagePtr msg = make_message(h, o.bytes);
    const uint64_t copies = hosts_.size() - 1;
    switch (o.kind) {
      case OutKind::Directed:
        st.directed++;
        send(h, static_cast<size_t>(std::stoul(o.to.substr(1))), msg);  // node ids are "h<index>"
        continue;
      case OutKind::Report: st.report_bytes += o.bytes->size() * copies; break;
      case OutKind::Resent: st.resends++, st.resend_bytes += o.bytes->size() * copies; break;
      case OutKind::ResendRequest: st.request_bytes += o.bytes->size() * copies; break;
      case OutKind::Relay:
      case OutKind::Bans: break;
    }
    broadcast(h, msg);
  }
}

// A message as it goes on the wire, decoded once: every receiver decodes the same bytes.
ClusterSim::MessagePtr ClusterSim::make_message(size_t from, std::shared_ptr<const std::string> bytes) {
  auto m = std::make_shared<Message>();
  m->from = from;
  std::string to;
  size_t inner = 0;
  m->directed = unwrap_directed(bytes->data(), bytes->size(), &to, &inner);
  m->decoded = decode_report(bytes->data() + inner, bytes->size() - inner, &m->hdr, &m->body);
  m->bytes = std::move(bytes);
  return m;
}

size_t ClusterSim::Message::entries() const {
  size_t n = body.entries.size();
  for (const RelayedReport &r : body.relayed) n += r.entries.size();
  return n;
}

// Ask for what is missing (cluster_core/outbox.h), at once when a gap shows and every
// period until it comes.
void ClusterSim::request_resends(size_t h) {
  if (!s_.resend) return;
  Host &host = hosts_[h];
  const auto req = host.outbox->resend_request(host.outbox->header(host.epoch, wall_ms(h)),
                                               host.tracker.resend_requests(now_, kMaxResendSeqs));
  if (req) publish(h, {*req});
}

// A PUB socket: one copy to every other host. In an ideal network every copy arrives
// after the same delay, in order: one event delivers them all (host order, as the
// copies' consecutive delivery orders would).
void ClusterSim::broadcast(size_t from, const MessagePtr &msg) {
  if (!ideal_) {
    for (size_t to = 0; to < hosts_.size(); to++)
      if (to != from) send(from, to, msg);
    return;
  }
  HostStats &st = host_stats_[from];
  st.messages_sent += hosts_.size() - 1;
  count(from, false, *msg, hosts_.size() - 1);
  in_flight_.push({now_ + s_.net.delay, delivery_order_++, kEveryPeer, msg});
}

// Publish again what a peer asks of host h (cluster_core/outbox.h: within its budget).
void ClusterSim::serve_resend(size_t h, const Message &m) {
  publish(h, hosts_[h].outbox->serve_resend(m.hdr.node_id, m.body.resend, now_).out);
}

Ns ClusterSim::cut_until(size_t a, size_t b, Ns t) const {
  Ns until = 0;
  for (const auto &p : s_.net.partitions)
    if (t >= p.start && t < p.end && p.side[a] != p.side[b]) until = std::max(until, p.end);
  return until;
}

Ns ClusterSim::cut_since(size_t a, size_t b, Ns t) const {
  Ns since = kNever;
  for (const auto &p : s_.net.partitions)
    if (t >= p.start && t < p.end && p.side[a] != p.side[b]) since = std::min(since, p.start);
  return since;
}

// The agent's link liveness (agent/cluster/cluster_links.cpp): a peer cut from h for the
// ZMTP timeout is down at once; a cut that healed during the period just ended gets a
// heartbeat to everyone from h (its peers see a new subscriber, and it sees theirs).
void ClusterSim::link_liveness(size_t h) {
  Host &host = hosts_[h];
  for (size_t p = 0; p < hosts_.size(); p++) {
    if (p == h) continue;
    const Ns since = cut_since(h, p, now_);
    LivenessChange change;
    if (since != kNever && now_ >= since + kSimLinkTimeout && host.tracker.link_dropped(hosts_[p].node_id, now_, &change))
      host_stats_[h].peer_downs++;
  }
  for (const auto &cut : s_.net.partitions)
    if (cut.end <= now_ && cut.end + s_.period > now_) host.planner.force_broadcast();
}

// One message to one receiver. Every send draws the same four random numbers
// whatever happens to it, so adding a partition or changing the loss does not
// reshuffle the fate of the other messages. A cut link holds the message (TCP and
// ZeroMQ's queue) until the heal, up to the high-water mark.
void ClusterSim::send(size_t from, size_t to, const MessagePtr &msg) {
  HostStats &st = host_stats_[from];
  const double u_loss = net_rng_.uniform(), u_dup = net_rng_.uniform();
  const double u_delay[2] = {net_rng_.uniform(), net_rng_.uniform()};
  st.messages_sent++;
  count(from, false, *msg);
  if (const Ns heal = cut_until(from, to, now_)) {
    uint64_t &held = held_[{from, to, heal}];
    if (held >= s_.net.queue_hwm) {
      st.cut++;
      return;
    }
    held++;
    st.queued++;
    in_flight_.push({heal + s_.net.delay, delivery_order_++, to, msg});
    return;
  }
  if (u_loss < s_.net.loss) {
    st.lost++;
    return;
  }
  const int copies = u_dup < s_.net.duplicate ? 2 : 1;
  st.duplicated += copies - 1;
  for (int i = 0; i < copies; i++) {
    const Ns jitter = static_cast<Ns>(u_delay[i] * static_cast<double>(s_.net.jitter + 1));
    in_flight_.push({now_ + s_.net.delay + std::min(jitter, s_.net.jitter), delivery_order_++, to, msg});
  }
}

// One delivery: to one host, or (an ideal network's fan-out) to every host but the sender.
void ClusterSim::handle_delivery(const Delivery &d) {
  if (d.to != kEveryPeer && d.to >= hosts_.size()) return hub_receive(d.to - hosts_.size(), *d.msg);
  if (d.to != kEveryPeer) {
    if (!up(d.to)) return;  // not running yet: nobody listens
    hosts_[d.to].direct_received++;
    count(d.to, true, *d.msg);
    return receive(d.to, *d.msg);
  }
  fan_out(*d.msg);
}

// An ideal network's copy to every host but the sender: counted once for all (hosts()
// and traffic() spread the counts); a plain report is a stream's next message, fresh:
// accepted (its sender's first one brings it up everywhere), then its entries charged.
void ClusterSim::fan_out(const Message &m) {
  if (m.aggregate) {  // a hub's: every host gets it
    fanouts_++;
    fanout_[period_of(now_)] += Traffic{m.body.entries.size(), m.wire_bytes(), 1};
    for (size_t to = 0; to < hosts_.size(); to++) apply_aggregate(to, m);
    return;
  }
  Host &sender = hosts_[m.from];
  const Traffic t{m.entries(), m.wire_bytes(), 1};
  fanouts_++, sender.fanned_out++;
  fanout_[period_of(now_)] += t;
  sender.own_fanout[period_of(now_)] += t;
  const bool plain = m.decoded == DecodeError::None && m.body.resend.empty() && m.body.relayed.empty() && !m.directed;
  if (plain) plain_fanouts_++, sender.plain_fanned_out++;
  if (plain && sender.plain_fanned_out == 1)
    for (size_t to = 0; to < hosts_.size(); to++) host_stats_[to].peer_ups += to != m.from;
  if (plain && sender.heard_by < hosts_.size() - 1)  // up where it is heard (owner_ready)
    for (size_t to = 0; to < hosts_.size(); to++)
      if (to != m.from && up(to)) heard_from(to, m.from);
  if (plain && m.body.entries.empty() && !sender.adaptive) return;  // "alive": nothing to do
  for (size_t to = 0; to < hosts_.size(); to++) {
    if (to == m.from || !up(to)) continue;
    if (plain) join_heard(to, m), apply_entries(to, m);
    else receive(to, m);
  }
}

size_t ClusterSim::period_of(Ns t) const { return std::min<size_t>(t / s_.period, fanout_.size() - 1); }

const std::vector<HostStats> &ClusterSim::hosts() const {
  for (size_t h = 0; h < hosts_.size(); h++) {
    const Host &host = hosts_[h];
    host_stats_[h].received = host.direct_received + fanouts_ - host.fanned_out;
    host_stats_[h].relayed = host.sender->counts().relayed_entries;
    host_stats_[h].accepted = host.direct_accepted + plain_fanouts_ - host.plain_fanned_out;
  }
  return host_stats_;
}

HostTraffic ClusterSim::traffic(size_t h, bool in) const {
  const Host &host = hosts_[h];
  HostTraffic r;
  r.periods = s_.duration / s_.period;
  for (size_t p = 0; p < fanout_.size(); p++) {
    Traffic t = in ? host.direct_in[p] : host.out[p];
    if (in) {
      t.entries += fanout_[p].entries - host.own_fanout[p].entries;
      t.bytes += fanout_[p].bytes - host.own_fanout[p].bytes;
      t.messages += fanout_[p].messages - host.own_fanout[p].messages;
    }
    r.total += t;
    r.max = Traffic{std::max(r.max.entries, t.entries), std::max(r.max.bytes, t.bytes),
                    std::max(r.max.messages, t.messages)};
  }
  return r;
}

// A message at host `to`: the tracker's verdict (arrive), then the cluster core's plan for
// it (cluster_core/inbound.h), acted on as the agent's Cluster does.
void ClusterSim::receive(size_t to, const Message &m) {
  HostStats &st = host_stats_[to];
  if (m.decoded != DecodeError::None) return void(st.decode_errors++);
  if (m.aggregate) return apply_aggregate(to, m);
  const Arrival a = arrive(to, m);
  const InboundPlan p = plan_inbound(m.hdr, m.body, a, s_.scheme == Scheme::Hub);
  if (p.kind == InboundKind::Dropped || p.kind == InboundKind::Bans) return;
  if (p.kind == InboundKind::ResendRequest) return p.stale || !s_.resend ? void() : serve_resend(to, m);
  if (p.join_heard) join_heard(to, m);
  if (p.ask_resends) request_resends(to);
  if (p.stale) {  // counted, nothing charged
    st.stale++;
    st.stale_hits += hits_of(m.body.entries);
    return;
  }
  if (p.kind == InboundKind::Relay) return apply_relays(to, m);
  apply_entries(to, m);
}

// The PeerTracker's verdict on a message (counted). In an ideal network every message is
// the next of its stream and fresh: the tracker is skipped.
Arrival ClusterSim::arrive(size_t to, const Message &m) {
  Host &host = hosts_[to];
  HostStats &st = host_stats_[to];
  Arrival a;
  a.verdict = Verdict::Accept;
  if (!ideal_) a = host.tracker.arrive(m.hdr, now_);
  else if (m.from < hosts_.size()) heard_from(to, m.from);
  if (a.verdict != Verdict::Accept) {  // a duplicate, or refused
    st.rejected++;
    return a;
  }
  host.direct_accepted++;
  st.peer_ups += a.came_up;
  st.recovered += a.recovered;
  return a;
}

// The report's entries as debits (cluster_core/rule_groups.h; an owner also notes them,
// Scheme::Owner), then the adaptive controller's share.
void ClusterSim::apply_entries(size_t to, const Message &m) {
  Host &host = hosts_[to];
  const ReportRuleMap map = map_report_rules(rules_, m.body.rules);
  uint64_t unknown = 0;
  const std::vector<dt_debit> debits = report_debits(rules_, map, m.body.entries, &unknown);
  charge(to, debits, m);
  std::vector<ReportEntry> charged;
  for (const dt_debit &d : debits) {
    if (m.directed) charged.push_back({d.key, d.hits});
    else host.planner.heard(d.key, now_);
  }
  if (!charged.empty()) {
    const RelayPlan r = host.planner.on_directed(m.hdr.node_id, charged, now_);
    if (!r.relays.empty()) send_relays(to, r.relays, r.ids);
  }
  if (host.adaptive) {
    host.adaptive->add_packet_hits(m.body.entries, map.adaptive);
    if (!m.directed) host.adaptive->on_peer_factors(m.hdr.node_id, m.body.factors, now_);
  }
}

// dt_debit: hits another host admitted (unseen here: the bucket is created full, then
// debited), a joiner's first debit of a source a burst more (join_guard.h).
void ClusterSim::charge(size_t to, std::vector<dt_debit> debits, const Message &m) {
  Host &host = hosts_[to];
  if (joiner_hears(to, m)) add_join_extra(host.join_guard, rules_, hosts_[m.from].node_id, m.hdr.epoch, &debits, now_);
  const Ns limit = s_.debt_cap ? dt_gcra_debt_limit(now_, &host.policy) : now_ + DT_TAT_HORIZON_NS;
  for (const dt_debit &d : debits) {
    Bucket &b = host.buckets.try_emplace(d.key).first->second;
    b.tat = dt_gcra_debit_upto(b.tat, now_, &host.policy, d.hits, limit);
    host_stats_[to].hits_debited += d.hits;
  }
}

// Per period: the traffic of `copies` copies of a message, into or out of host h (a
// fan-out's copies in are counted by fan_out()).
void ClusterSim::count(size_t h, bool in, const Message &m, uint64_t copies) {
  const Traffic t{m.entries() * copies, m.wire_bytes() * copies, copies};
  (in ? hosts_[h].direct_in : hosts_[h].out)[period_of(now_)] += t;
}

Traffic &Traffic::operator+=(const Traffic &o) {
  entries += o.entries, bytes += o.bytes, messages += o.messages;
  return *this;
}

int64_t ClusterSim::tokens_milli(size_t host, size_t client) const {
  auto it = hosts_[host].buckets.find(client_key(client));
  const uint64_t tat = it == hosts_[host].buckets.end() ? 0 : it->second.tat;
  return dt_gcra_tokens_milli(tat, now_, &hosts_[host].policy);
}

uint64_t ClusterSim::admitted_between(size_t client, Ns from, Ns to, int host) const {
  uint64_t n = 0;
  for (size_t h = 0; h < s_.hosts; h++) {
    if (host >= 0 && static_cast<size_t>(host) != h) continue;
    const auto &bins = timeline_[client][h];
    for (size_t b = from / s_.bin; b < to / s_.bin && b < bins.size(); b++) n += bins[b];
  }
  return n;
}

std::vector<AdaptiveRow> ClusterSim::adaptive_timeline() const {
  std::vector<AdaptiveRow> rows;
  for (size_t i = 0; i < bins_sampled_; i++) {
    AdaptiveRow r;
    r.start = i * s_.bin;
    r.end = r.start + s_.bin;
    for (size_t h = 0; h < hosts_.size(); h++) {
      const AdaptiveBin &b = bins_[h][i];
      r.offered += b.offered;
      r.admitted += b.admitted;
      r.throttled += b.refused;
      r.busy += b.busy;
      r.limit.push_back(s_.rate * b.factor);
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

double ClusterSim::applied_factor(size_t host) const { return hosts_[host].applied; }


}  // namespace dt::sim
