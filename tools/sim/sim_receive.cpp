// sim_receive.cpp - the simulator's receiving side: the tracker's verdict, the core's receiver,
// debits and the traffic counts (see cluster_sim.h).
#include <algorithm>
#include <utility>

#include "cluster_core/peer_protocol.h"
#include "dthrottle/bucket.h"
#include "sim/cluster_sim.h"

namespace dt::sim {

// A message at host `to`: the tracker's verdict (arrive), then what the cluster core's node
// (cluster_core/cluster_node.h) makes of it (a resend request served, a gap asked for, an
// owner's relays sent); the rest acted on here: stale hits counted, debits.
void ClusterSim::receive(size_t to, const Message &m) {
  HostStats &st = host_stats_[to];
  if (m.decoded != DecodeError::None) return void(st.decode_errors++);
  if (m.aggregate) return apply_aggregate(to, m);
  const Arrival a = arrive(to, m);
  if (a.verdict != Verdict::Accept) return;  // a duplicate, or refused: nothing to act on
  const Received r = hosts_[to].node->receive(m.hdr, m.body, a, now_);
  st.relayed = hosts_[to].node->sender().counts().relayed_entries;
  const InboundKind k = r.plan.kind;
  if (k != InboundKind::Report && k != InboundKind::Directed && k != InboundKind::Relay) return;
  if (r.plan.stale) {  // counted, nothing charged
    st.stale++;
    st.stale_hits += r.stale_hits;
    return;
  }
  for (const Charge &c : r.charges) charge(to, c.debits);
}

// The PeerTracker's verdict on a message (counted). In an ideal network every message is
// the next of its stream and fresh: the tracker is skipped.
Arrival ClusterSim::arrive(size_t to, const Message &m) {
  Host &host = hosts_[to];
  HostStats &st = host_stats_[to];
  Arrival a;
  a.verdict = Verdict::Accept;
  if (!ideal_) a = host.node->tracker().arrive(m.hdr, now_);
  else a.came_up = heard_from(to, m.from);
  if (a.verdict != Verdict::Accept) {  // a duplicate, or refused
    st.rejected++;
    return a;
  }
  st.accepted++;
  st.peer_ups += a.came_up;
  st.recovered += a.recovered;
  return a;
}

// The cluster core's owner readiness (report_planner.h) in an ideal network (no tracker): from
// the peers host h has heard (nobody goes silent there); asked again only when that changed.
bool ClusterSim::owner_ready(size_t h) {
  Host &host = hosts_[h];
  if (host.heard_count != host.ready_count) {
    std::vector<std::string> up;
    for (size_t p = 0; p < hosts_.size(); p++)
      if (host.heard[p]) up.push_back(hosts_[p].node_id);
    host.owners = host.node->planner().owner_ready(std::move(up));
    host.ready_count = host.heard_count;
  }
  return host.owners;
}

bool ClusterSim::heard_from(size_t to, size_t from) {
  if (hosts_[to].heard[from]) return false;
  hosts_[to].heard[from] = 1;
  hosts_[to].heard_count++;
  return true;
}

// dt_debit: hits another host admitted (unseen here: the bucket is created full, then
// debited), down to the debt cap.
void ClusterSim::charge(size_t to, const std::vector<dt_debit> &debits) {
  Host &host = hosts_[to];
  const Ns limit = s_.debt_cap ? dt_gcra_debt_limit(now_, &host.policy) : now_ + DT_TAT_HORIZON_NS;
  for (const dt_debit &d : debits) {
    Bucket &b = host.buckets.try_emplace(d.key).first->second;
    b.tat = dt_gcra_debit_upto(b.tat, now_, &host.policy, d.hits, limit);
    host_stats_[to].hits_debited += d.hits;
  }
}

// Per period: the traffic of `copies` copies of a message, into or out of a host or hub.
void ClusterSim::count(size_t node, bool in, const Message &m, uint64_t copies) {
  const Traffic t{m.entries() * copies, m.wire_bytes() * copies, copies};
  (in ? traffic_[node].in : traffic_[node].out)[period_of(now_)] += t;
}

Traffic &Traffic::operator+=(const Traffic &o) {
  entries += o.entries, bytes += o.bytes, messages += o.messages;
  return *this;
}

}  // namespace dt::sim
