// cluster_links.cpp - liveness from the link (cluster.h: link_liveness(); docs/cluster-scale.md
// "Cadence"). With CurveZMQ in a full mesh our SUB socket holds one connection to each
// peer's --listen port, authenticated with the server key of that peer's .pub file (so with
// its node id), and ZMTP heartbeats close it within about 2 s of silence. A peer whose
// connection drops is down at once (killed: its kernel closes the connection; a partition
// or a stopped host: the heartbeat timeout); its signed heartbeats (every 20 s) are then only
// the report sequence's. A subscriber that connects to our PUB socket (a peer that started,
// or came back from a partition) hears a heartbeat from us at the next period's end.
#include <zmq.h>

#include "cluster/cluster.h"
#include "common/address.h"
#include "common/endpoint.h"

namespace dt {

// Which node each of our SUB socket's connections reaches: the node id of the .pub file
// naming the peer's endpoint, under the endpoint as configured and as resolved; and, with
// keys, the members whose messages their connection's address proves (link_senders.h).
void Cluster::map_peer_links() {
  map_link_senders();
  link_nodes_.clear();
  if (!link_liveness(cfg_)) return;
  for (const std::string &ep : cfg_.peers) {
    const CurvePeer *peer = find_curve_peer(curve_.peers, ep);
    if (!peer || peer->node_id.empty()) continue;
    link_nodes_[ep] = peer->node_id;
    HostPort hp;
    if (!parse_host_port(ep, {.tcp_scheme = true}, &hp)) continue;
    // As ZeroMQ names a connection in its monitor events: "tcp://ADDR:PORT" for every
    // address the host resolves to (one that does not resolve keeps its configured name).
    std::string unresolved;
    for (const dt_key &addr : resolve_endpoint_hosts({ep}, &unresolved))
      link_nodes_["tcp://" + HostPort{key_to_string(addr), hp.port}.text()] = peer->node_id;
  }
}

void Cluster::map_link_senders() {
  std::vector<std::pair<std::string, std::string>> links;
  if (signed_) {
    for (const std::string &ep : cfg_.peers) {
      // A .pub whose key changed since we connected (a reload) no longer speaks for what
      // comes on that connection: its messages are checked against the new key.
      const CurvePeer *peer = find_curve_peer(curve_.peers, ep);
      const auto key = connected_keys_.find(ep);
      const bool proves =
          peer && peer->role == KeyRole::Node && key != connected_keys_.end() && key->second == peer->public_key;
      links.emplace_back(ep, proves ? peer->node_id : std::string());
    }
    for (const std::string &ep : cfg_.hubs) links.emplace_back(ep, std::string());
  }
  link_senders_.configure(links);
}

// A monitor event of ours (poll_monitor): true if it was a link event, handled here.
bool Cluster::on_link_event(bool pub, uint16_t event, const std::string &endpoint, uint64_t now_ns) {
  if (pub && event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
    node_.planner().force_broadcast();
    counters_.subscribers_joined++;
    return true;
  }
  if (pub || event != ZMQ_EVENT_DISCONNECTED) return false;
  const auto it = link_nodes_.find(endpoint);
  LivenessChange down;
  if (it != link_nodes_.end() && node_.tracker().link_dropped(it->second, now_ns, &down)) {
    counters_.link_drops++;
    log_limited(peer_log_, LogLevel::Warn, now_ns, "peer %s is down: its link dropped (last heard %.1fs ago)",
                down.node_id.c_str(), down.silent_ns / 1e9);
    if (peer_events_) peer_events_(down.node_id, false, "link", down.silent_ns / 1e9);
  }
  return true;
}

}  // namespace dt
