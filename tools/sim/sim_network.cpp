// sim_network.cpp - the simulator's network: publishing, resends, links that are cut and heal,
// loss, duplicates and delays, and an ideal network's fan-out (see cluster_sim.h).
#include <algorithm>
#include <utility>

#include "cluster_core/peer_protocol.h"
#include "sim/cluster_sim.h"

namespace dt::sim {

// What host h's outbox returns, on the wire: a directed message to its owner, any other to
// every peer (a PUB socket), or behind summing hubs to both hubs.
void ClusterSim::publish(size_t h, const std::vector<Outgoing> &out) {
  if (!s_.reports) return;  // local only (adaptive hosts still end their periods)
  HostStats &st = host_stats_[h];
  for (const Outgoing &o : out) {
    MessagePtr msg = make_message(h, o.bytes);
    const uint64_t copies = hubs_.empty() ? hosts_.size() - 1 : hubs_.size();
    switch (o.kind) {
      case OutKind::Directed:
        st.directed++;
        send(h, static_cast<size_t>(std::stoul(o.to.substr(1))), msg);  // node ids are "h<index>"
        continue;
      case OutKind::Report: st.report_bytes += o.bytes->size() * copies; break;
      case OutKind::Resent: st.resends++, st.resend_bytes += o.bytes->size() * copies; break;
      case OutKind::ResendRequest: st.request_bytes += o.bytes->size() * copies; break;
      case OutKind::Relay:
      case OutKind::Bans:
      case OutKind::Verified: break;
    }
    if (hubs_.empty()) broadcast(h, msg);
    for (size_t j = 0; j < hubs_.size(); j++) send(h, hosts_.size() + j, msg);
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

// A PUB socket (a host's, or a hub's: hosts + j): one copy to every other host. In an ideal
// network every copy arrives after the same delay, in order: one event delivers them all (host
// order, as the copies' consecutive delivery orders would).
void ClusterSim::broadcast(size_t from, const MessagePtr &msg) {
  if (!ideal_) {
    for (size_t to = 0; to < hosts_.size(); to++)
      if (to != from) send(from, to, msg);
    return;
  }
  const uint64_t copies = hosts_.size() - (from < hosts_.size());
  if (from < hosts_.size()) host_stats_[from].messages_sent += copies;
  count(from, false, *msg, copies);
  in_flight_.push({now_ + s_.net.delay, delivery_order_++, kEveryPeer, msg});
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
    if (since != kNever && now_ >= since + kSimLinkTimeout &&
        host.node->tracker().link_dropped(hosts_[p].node_id, now_, &change))
      host_stats_[h].peer_downs++;
  }
  for (const auto &cut : s_.net.partitions)
    if (cut.end <= now_ && cut.end + s_.period > now_) host.node->planner().force_broadcast();
}

// One message to one receiver (from or to a hub: index hosts + j). Every send draws the same
// four random numbers whatever happens to it, so adding a partition or changing the loss does
// not reshuffle the fate of the other messages. A cut link holds the message (TCP and
// ZeroMQ's queue) until the heal, up to the high-water mark.
void ClusterSim::send(size_t from, size_t to, const MessagePtr &msg) {
  HostStats hub_stats;
  HostStats &st = from < hosts_.size() ? host_stats_[from] : hub_stats;
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

// One delivery: to one host, or (an ideal network's fan-out) to every running host but the
// sender, in host order. There a plain report is the next of its stream and fresh: "alive"
// (no entries) it only counts; nothing goes missing, so no receiver asks for resends.
void ClusterSim::handle_delivery(const Delivery &d) {
  if (d.to != kEveryPeer && d.to >= hosts_.size()) return hub_receive(d.to - hosts_.size(), *d.msg);
  const Message &m = *d.msg;
  const bool alive = ideal_ && m.decoded == DecodeError::None && !m.aggregate && m.body.resend.empty() &&
                     m.body.relayed.empty() && !m.directed && m.body.entries.empty() && !hosts_[m.from].adaptive;
  for (size_t to = d.to == kEveryPeer ? 0 : d.to; to < hosts_.size(); to++) {
    if (to != m.from && up(to)) {  // not running yet: nobody listens
      host_stats_[to].received++;
      count(to, true, m);
      if (alive) arrive(to, m);
      else receive(to, m);
    }
    if (d.to != kEveryPeer) break;
  }
}

}  // namespace dt::sim
