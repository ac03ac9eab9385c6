// sim_hub.cpp - the simulator's pair of summing hubs (Scheme::Hub, cluster_sim.h): the hub's
// core (hub/hub_core.h, as `agent hub --aggregate` runs it) on the simulated clock. Hosts
// publish to both hubs (publish()); each hub sums per source what it received in its period
// and sends one aggregate to every host, whose node takes one hub's sums at a time
// (cluster_node.h: the aggregate intake).
#include "cluster_core/aggregate_protocol.h"
#include "cluster_core/cluster_times.h"
#include "sim/cluster_sim.h"

namespace dt::sim {

// Two hubs, each on a seeded random phase (a hub starts when it starts, as an agent).
void ClusterSim::init_hubs(uint64_t *phase_seed) {
  if (s_.scheme != Scheme::Hub || !s_.reports) return;
  for (size_t j = 0; j < kHubs; j++) {
    const uint64_t boot = splitmix64(phase_seed);
    const Ns phase = splitmix64(phase_seed) % s_.hub_period;  // as a host's first report: at its phase
    Hub &hub = hubs_.emplace_back(Hub{HubCore("hub" + std::to_string(j + 1), boot), phase});
    reports_.push({hub.next_period, hosts_.size() + j});
    if (hub.next_period < hubs_[failing_hub_].next_period) failing_hub_ = j;  // the first heard: every host's
  }
}

bool ClusterSim::hub_alive(size_t j) const { return !(j == failing_hub_ && now_ >= s_.hub_fails_at); }

Ns ClusterSim::next_event_of(size_t reporter) const {
  return reporter < hosts_.size() ? hosts_[reporter].next_report : hubs_[reporter - hosts_.size()].next_period;
}

// A message arrives at hub j: what the hub's core makes of it (a dead hub hears nothing).
// Nothing here is relayed: behind hubs the hosts hear no peer, so they send only reports.
void ClusterSim::hub_receive(size_t j, const Message &m) {
  if (!hub_alive(j)) return;
  count(hosts_.size() + j, true, m);
  std::string why;
  hubs_[j].core.on_message(m.bytes->data(), m.bytes->size(), {}, &why);
}

// Hub j's period: this period's sums as one aggregate (in parts if large) to every host,
// even an empty one (the hosts judge a hub's liveness by them).
void ClusterSim::hub_period(size_t j) {
  Hub &hub = hubs_[j];
  hub.next_period += s_.hub_period;
  if (!hub_alive(j)) return;
  for (auto &bytes : hub.core.period(kWallEpochMs + now_ / kMs)) {
    auto m = std::make_shared<Message>();
    m->from = hosts_.size() + j;
    m->aggregate.emplace();
    m->decoded = decode_aggregate(bytes.data(), bytes.size(), &*m->aggregate);
    m->body = m->aggregate->body;
    m->bytes = std::make_shared<const std::string>(std::move(bytes));
    broadcast(m->from, m);
  }
}

// An aggregate at host `to`: what its node takes of it, debited as a report's.
void ClusterSim::apply_aggregate(size_t to, const Message &m) {
  if (m.decoded != DecodeError::None) return void(host_stats_[to].decode_errors++);
  bool switched = false;
  std::string from;
  for (const Charge &c : hosts_[to].node->aggregate(*m.aggregate, now_, &switched, &from).charges) charge(to, c.debits);
}

HostTraffic ClusterSim::hub_traffic(size_t j, bool in) const { return traffic(hosts_.size() + j, in); }

AggregateCounters ClusterSim::aggregate_counters(size_t h) const { return hosts_[h].node->intake().counters(); }

}  // namespace dt::sim
