// sim_hub.cpp - the simulator's pair of summing hubs (Scheme::Hub, cluster_sim.h): the
// agent's own code on the simulated clock. A host's report goes to both hubs; each hub
// sums per source what it received in its period (hub/aggregator.h, as `agent hub
// --aggregate`) and sends one aggregate (cluster_core/aggregate_protocol.h, the real encoding:
// its bytes are the wire's) to every host; a host takes one hub's aggregates at a time and
// debits the sums less its own hits (cluster_core/aggregate_intake.h, as Cluster does).
#include "cluster_core/aggregate_protocol.h"
#include "cluster_core/cluster_times.h"
#include "sim/cluster_sim.h"

namespace dt::sim {
namespace {

constexpr size_t kHubs = 2;  // a pair: no single point of failure

}  // namespace

// Two hubs, each on a seeded random phase (a hub starts when it starts, as an agent), and
// every host's intake with the agent's settings (Cluster's constructor).
void ClusterSim::init_hubs(uint64_t *phase_seed) {
  if (s_.scheme != Scheme::Hub || !s_.reports) return;
  const Ns down_after = aggregate_down_after_ns(ClusterTimes{s_.period, s_.peer_down_after});
  const size_t periods = s_.duration / s_.period + 2;
  hubs_.resize(kHubs);
  for (size_t j = 0; j < kHubs; j++) {
    Hub &hub = hubs_[j];
    hub.stream = AggregateStream("hub" + std::to_string(j + 1), splitmix64(phase_seed));
    hub.next_period = splitmix64(phase_seed) % s_.hub_period;  // as a host's first report: at its phase
    hub.in.resize(periods), hub.out.resize(periods);
    reports_.push({hub.next_period, hosts_.size() + j});
    if (hub.next_period < hubs_[failing_hub_].next_period) failing_hub_ = j;  // the first heard: every host's
  }
  for (size_t h = 0; h < hosts_.size(); h++) {
    hosts_[h].intake = std::make_unique<AggregateIntake>(down_after, 2 * down_after + 2 * s_.period);
    hosts_[h].intake->set_own(hosts_[h].node_id, hosts_[h].boot_id);
  }
}

bool ClusterSim::hub_alive(size_t j) const { return !(j == failing_hub_ && now_ >= s_.hub_fails_at); }

Ns ClusterSim::next_event_of(size_t reporter) const {
  return reporter < hosts_.size() ? hosts_[reporter].next_report : hubs_[reporter - hosts_.size()].next_period;
}

// A host's period: its served sources as one report (in parts if large) to each hub; each
// part kept as the intake needs it (what this host reported under that seq).
void ClusterSim::publish_to_hubs(size_t h, std::vector<ReportEntry> entries) {
  Host &host = hosts_[h];
  ReportBody body;
  body.rules = {"default"};
  body.entries = std::move(entries);
  Outbox &out = host.node->outbox();
  for (const Outgoing &o : out.report(out.header(++host.epoch, wall_ms(h)), body, now_)) {
    MessagePtr msg = make_message(h, o.bytes);
    host.intake->remember_own(o.seq, msg->body, now_);
    host_stats_[h].report_bytes += msg->wire_bytes() * hubs_.size();
    for (size_t j = 0; j < hubs_.size(); j++) send_to_hub(h, j, msg);
  }
}

// One message from host h to hub j: lost with the network's probability, else delayed.
void ClusterSim::send_to_hub(size_t h, size_t j, const MessagePtr &msg) {
  const double u_loss = net_rng_.uniform(), u_delay = net_rng_.uniform();
  host_stats_[h].messages_sent++;
  count(h, false, *msg);
  if (u_loss < s_.net.loss) {
    host_stats_[h].lost++;
    return;
  }
  const Ns jitter = std::min(static_cast<Ns>(u_delay * static_cast<double>(s_.net.jitter + 1)), s_.net.jitter);
  in_flight_.push({now_ + s_.net.delay + jitter, delivery_order_++, hosts_.size() + j, msg});
}

// A report arrives at hub j: summed (a dead hub hears nothing).
void ClusterSim::hub_receive(size_t j, const Message &m) {
  if (!hub_alive(j) || m.decoded != DecodeError::None) return;
  Hub &hub = hubs_[j];
  hub.in[period_of(now_)] += Traffic{m.body.entries.size(), m.wire_bytes(), 1};
  hub.agg.add(m.hdr, m.body);
}

// Hub j's period: this period's sums as one aggregate (in parts if large) to every host,
// even an empty one (the hosts judge a hub's liveness by them).
void ClusterSim::hub_period(size_t j) {
  Hub &hub = hubs_[j];
  hub.next_period += s_.hub_period;
  if (!hub_alive(j)) return;
  auto parts = hub.stream.period(hub.agg, kWallEpochMs + now_ / kMs);
  for (auto &bytes : parts) {
    auto m = std::make_shared<Message>();
    m->from = hosts_.size() + j;
    m->aggregate.emplace();
    m->decoded = decode_aggregate(bytes.data(), bytes.size(), &*m->aggregate);
    m->body = m->aggregate->body;
    m->bytes = std::make_shared<const std::string>(std::move(bytes));
    const Traffic one{m->body.entries.size(), m->wire_bytes(), 1};
    hub.out[period_of(now_)] += Traffic{one.entries * hosts_.size(), one.bytes * hosts_.size(), hosts_.size()};
    if (ideal_) {  // one event delivers every copy (sim_network.cpp's fan-out)
      in_flight_.push({now_ + s_.net.delay, delivery_order_++, kEveryPeer, m});
      continue;
    }
    for (size_t to = 0; to < hosts_.size(); to++) {
      const double u_loss = net_rng_.uniform(), u_delay = net_rng_.uniform();
      if (u_loss < s_.net.loss) continue;
      const Ns jitter = std::min(static_cast<Ns>(u_delay * static_cast<double>(s_.net.jitter + 1)), s_.net.jitter);
      in_flight_.push({now_ + s_.net.delay + jitter, delivery_order_++, to, m});
    }
  }
}

// An aggregate at host `to`: the intake says what to debit (the active hub's sums less our
// own hits; after a failover the new hub's kept aggregates first), debited as a report's.
void ClusterSim::apply_aggregate(size_t to, const Message &m) {
  if (m.decoded != DecodeError::None) return void(host_stats_[to].decode_errors++);
  bool switched = false;
  std::string from;
  const Received r = hosts_[to].node->receiver().aggregate(*hosts_[to].intake, *m.aggregate, now_, &switched, &from);
  for (const Charge &c : r.charges) charge(to, c.debits);
}

HostTraffic ClusterSim::hub_traffic(size_t j, bool in) const {
  HostTraffic r;
  r.periods = s_.duration / s_.period;
  for (const Traffic &t : in ? hubs_[j].in : hubs_[j].out) {
    r.total += t;
    r.max = Traffic{std::max(r.max.entries, t.entries), std::max(r.max.bytes, t.bytes),
                    std::max(r.max.messages, t.messages)};
  }
  return r;
}

AggregateCounters ClusterSim::aggregate_counters(size_t h) const {
  return hosts_[h].intake ? hosts_[h].intake->counters() : AggregateCounters{};
}

}  // namespace dt::sim
