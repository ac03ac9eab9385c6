// sim_receive.cpp - the simulator's receiving side: the tracker's verdict, the core's plan,
// debits and the traffic counts (see cluster_sim.h).
#include "sim/cluster_sim.h"

#include <algorithm>
#include <utility>

#include "dthrottle/bucket.h"
#include "cluster_core/peer_protocol.h"

namespace dt::sim {

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

}  // namespace dt::sim
