// cluster_sim.cpp - the deterministic cluster simulator (see cluster_sim.h).
#include "sim/cluster_sim.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "cluster_core/cluster_times.h"
#include "cluster_core/peer_protocol.h"
#include "dataplane/policy.h"
#include "dthrottle/bucket.h"

namespace dt::sim {
namespace {

const char kAdaptiveRule[] = "default";

}  // namespace

uint64_t ClusterSim::wall_ms(size_t h) const {
  const int64_t skew = s_.clock_skew_ms.empty() ? 0 : s_.clock_skew_ms[h];
  return static_cast<uint64_t>(static_cast<int64_t>(kWallEpochMs + now_ / kMs) + skew);
}

std::unique_ptr<ClusterSim> ClusterSim::create(const Scenario &s, std::string *err) {
  if (!validate(s, err)) return nullptr;
  dt_policy p;
  make_policy(s.rate, s.burst, &p, err);
  return std::unique_ptr<ClusterSim>(new ClusterSim(s, p));
}

ClusterSim::ClusterSim(const Scenario &s, const dt_policy &p)
    : s_(s), policy_(p), lb_rng_{s.seed ^ 0x4c4200000000ull}, net_rng_{s.seed ^ 0x4e4554000000ull} {
  rules_.burst_hits = {s.burst};
  uint64_t boot_seed = s.seed, phase_seed = s.seed ^ 0x5048415345000000ull;
  ideal_ = s.net.loss == 0 && s.net.duplicate == 0 && s.net.jitter == 0 && s.net.partitions.empty();
  hosts_.resize(s.hosts);
  for (size_t h = 0; h < s.hosts; h++) {
    Host &host = hosts_[h];
    host.node_id = "h" + std::to_string(h);
    host.boot_id = splitmix64(&boot_seed);
    NodeOptions o = node_options(settings(h));  // the agent's (cluster_core/cluster_node.h), but:
    o.early.min_hits = s.early_min_hits;
    o.shared_early_ns = s.shared_period;
    o.resends = s.resend;
    host.node = std::make_unique<ClusterNode>(o, rules_);
    const auto header = [this, h] { return hosts_[h].node->outbox().header(hosts_[h].epoch, wall_ms(h)); };
    host.node->open(outbox_options(settings(h), host.boot_id), {},
                    NodeIo{[this, h](const Outgoing &o, uint64_t) { return publish(h, {o}), true; }, header, header});
    host.heard.assign(s.hosts, 0);
    // Local-only hosts still end periods when adaptive: the controller runs on them.
    host.next_report = s.reports || s.adaptive ? report_offset(h, &phase_seed) : kNever;
    if (static_cast<int>(h) == s.join_host && host.next_report != kNever)
      host.next_report += s.join_at - s.join_at % s.period + (host.next_report < s.join_at % s.period ? s.period : 0);
    if (host.next_report != kNever) reports_.push({host.next_report, h});
    host.policy = p;
    host.node->start(0);  // the first period starts at 0 (it ends at the host's phase)
    if (ideal_) host.node->set_up_peers([this, h] { return owner_ready(h); });
    schedule_early(h);
    if (s.adaptive) init_adaptive(h);
  }
  init_hubs(&phase_seed);
  host_stats_.resize(s.hosts);
  const size_t periods = s.duration / s.period + 2;
  traffic_.assign(s.hosts + hubs_.size(), TrafficLog{std::vector<Traffic>(periods), std::vector<Traffic>(periods)});
  build_requests();
  if (s.adaptive) bins_.assign(s.hosts, std::vector<AdaptiveBin>(s.duration / s.bin));
  busy_ = busy_signals_of(s);
}

// Host h as an agent (cluster_core/cluster_node.h): every other host a configured peer, no keys;
// without the agent's cadence a peer is down after 5 silent periods. Only a joiner starts empty.
NodeSettings ClusterSim::settings(size_t h) const {
  const Scenario &s = s_;
  NodeSettings n;
  n.node_id = "h" + std::to_string(h);
  const Ns age = report_max_age_ns(s.report_max_age, s.period);  // kNever is kReportMaxAgeOff
  const Ns down = s.cadence || s.peer_down_after ? s.peer_down_after : 5 * s.period;
  n.times = ClusterTimes{s.period, down, age, s.cadence && s.link_liveness && s.scheme != Scheme::Hub};
  n.owner_scheme = s.scheme == Scheme::Owner;
  n.peers = s.hosts - 1;
  n.hubs = s.scheme == Scheme::Hub ? kHubs : 0;
  n.early_report_ns = s.reports ? s.early_report : 0;
  n.starts_empty = s.join_empty && static_cast<int>(h) == s.join_host;
  return n;
}

// Host h's AdaptiveSet: the one rule, fed as the agent feeds it (its receiver: peers' hits and factors).
void ClusterSim::init_adaptive(size_t h) {
  Host &host = hosts_[h];
  AdaptiveRuleSpec spec;
  spec.name = kAdaptiveRule;
  spec.index = DT_RULE_DEFAULT;
  spec.rate = s_.rate;
  spec.params = s_.adaptive_params;
  host.adaptive = std::make_unique<AdaptiveSet>();
  host.adaptive->configure({spec}, s_.peer_down_after ? s_.peer_down_after : 5 * s_.period);
  host.node->set_adaptive(host.adaptive.get());
}

// The scenario's requests (the host is picked when one is handled) and its clients.
void ClusterSim::build_requests() {
  requests_ = requests_of(s_);
  const std::vector<CentralView> central = central_views(s_, policy_, requests_);
  clients_.resize(s_.clients.size());
  for (size_t i = 0; i < s_.clients.size(); i++) {
    static_cast<CentralView &>(clients_[i]) = central[i];
    clients_[i].name = s_.clients[i].name;
    clients_[i].admitted_by_host.assign(s_.hosts, 0);
  }
  const size_t bins = s_.duration / s_.bin + 1;
  timeline_.assign(s_.clients.size(), std::vector<std::vector<uint64_t>>(s_.hosts, std::vector<uint64_t>(bins, 0)));
}

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
      if (reporter < hosts_.size()) handle_report(reporter);
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

// The load balancer's pick among the n_up hosts that run (a joiner may not yet), as an index of all.
size_t ClusterSim::skip_down(size_t idx, size_t n_up) const {
  if (n_up == s_.hosts || idx < static_cast<size_t>(s_.join_host)) return idx;
  return idx + 1;
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
    if (bin) bin->admitted++;
  } else {
    clients_[r.client].refused++;
    host_stats_[h].refused++;
    if (bin) bin->refused++;
  }
}

// A busy signal from the protected service, dropped unless the cluster (the service gets
// requests from every host) admitted something since the host's last one. (Before the host's
// first report period nothing is measured: the controller then halves the limit itself.)
void ClusterSim::handle_busy(const BusySignal &s) {
  Host &host = hosts_[s.host];
  HostStats &st = host_stats_[s.host];
  uint64_t cluster_admitted = 0;
  for (const HostStats &hs : host_stats_) cluster_admitted += hs.admitted;
  if (cluster_admitted == host.admitted_at_busy) return;
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
// through the cluster core (local only: nowhere), the adaptive controller's period, liveness.
void ClusterSim::handle_report(size_t h) {
  Host &host = hosts_[h];
  // With link liveness a joiner is a new subscriber everywhere: a heartbeat at this period's end.
  if (s_.join_host >= 0 && s_.cadence && s_.link_liveness && now_ >= s_.join_at && now_ < s_.join_at + s_.period)
    host.node->planner().force_broadcast();
  std::vector<ReportEntry> served;  // dt_collect: passed - reported, then reported = passed
  for (auto &[key, b] : host.buckets) {
    if (b.passed == b.reported) continue;
    served.push_back({key, b.passed - b.reported});
    b.reported = b.passed;
  }
  served = sorted(host.node->period_served(std::move(served), now_));  // with what early ticks held back
  host_stats_[h].reports++;
  host_stats_[h].hits_reported += hits_of(served);
  if (host.node->early().enabled()) {
    host.announced.clear();  // the kernel's next epoch: announced again at their next admission
    schedule_early(h);
  }
  // Through the cluster core (report_sender.h): to owners and everyone, when the cadence says,
  // with the adaptive factors as they stand; then the controller's period, as in the agent.
  ReportBody body;
  body.entries = std::move(served);
  host.node->send_period(host.node->outbox().header(++host.epoch, wall_ms(h)), std::move(body), now_, s_.cadence);
  if (host.adaptive) adaptive_period(h);
  end_period(h);
}

// After host h's report: resend requests and liveness (a lossy network only), the next period.
void ClusterSim::end_period(size_t h) {
  Host &host = hosts_[h];
  host.next_report += s_.period;
  if (ideal_) return host.node->outbox().new_period();  // nothing goes missing, nobody goes silent
  for (const auto &change : host.node->end_period(now_)) host_stats_[h].peer_downs += !change.up;
  if (s_.cadence && s_.link_liveness && s_.scheme != Scheme::Hub) link_liveness(h);
}

// Hash order is the standard library's business: sorted, the messages (and their split into
// parts) are the same everywhere.
std::vector<ReportEntry> ClusterSim::sorted(std::vector<ReportEntry> entries) {
  std::sort(entries.begin(), entries.end(), [](const ReportEntry &a, const ReportEntry &b) {
    return memcmp(a.key.addr, b.key.addr, sizeof a.key.addr) < 0;
  });
  return entries;
}

// Host h's report period offset: the scenario's, a seeded random one, or 0.
Ns ClusterSim::report_offset(size_t h, uint64_t *seed) const {
  if (!s_.report_offset.empty()) return s_.report_offset[h];
  if (!s_.random_phase) return 0;
  return splitmix64(seed) % s_.period;
}

size_t ClusterSim::period_of(Ns t) const { return std::min<size_t>(t / s_.period, traffic_[0].in.size() - 1); }

HostTraffic ClusterSim::traffic(size_t h, bool in) const { return summary(in ? traffic_[h].in : traffic_[h].out); }

// Per period: the total, the busiest period.
HostTraffic ClusterSim::summary(const std::vector<Traffic> &periods) const {
  HostTraffic r;
  r.periods = s_.duration / s_.period;
  for (const Traffic &t : periods) {
    r.total += t;
    r.max = Traffic{std::max(r.max.entries, t.entries), std::max(r.max.bytes, t.bytes),
                    std::max(r.max.messages, t.messages)};
  }
  return r;
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
