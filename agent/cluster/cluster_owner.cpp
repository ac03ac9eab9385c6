// cluster_owner.cpp - the reporting scheme "owner" in the agent's full mesh
// (docs/cluster-scale.md, cluster_core/report_router.h): sources seen only here go to their
// owner alone, shared ones to every peer; an owner relays what turns out to be shared.
#include <algorithm>
#include <map>
#include <zmq.hpp>

#include "cluster/cluster.h"
#include "common/clock.h"

namespace dt {

// A message a member sent to us alone as the owner of its sources, checked as every
// message (signature, recipient, once only in its stream, age: Cluster::handle_message) and
// charged (cluster_core/receiver.h); what turned shared, the node relayed (cluster_node.h).
void Cluster::relay_directed(const ReportHeader &h, const Received &r) {
  const std::vector<RelayEntry> &relays = r.relay.relays;
  if (log_level() == LogLevel::Debug)
    DT_DEBUG("directed from %s: %zu entries applied, %zu relayed, sent %lld ms ago", h.node_id.c_str(),
             r.charges.empty() ? size_t{0} : r.charges.front().debits.size(), relays.size(),
             sent_ago_ms(h.sent_unix_ms));
  if (!relays.empty()) note_sent();
}

// A node an owner may relay hits of: a member (a role = node key in --curve-peers, not a
// hub's; without keys a peer we track), never us (we charged ours when we admitted them).
bool Cluster::relay_member(const std::string &node_id) const {
  if (node_id == cfg_.node_id) return false;
  return signed_ ? verifier_.knows_node(node_id) : node_.tracker().peers().count(node_id) != 0;
}

// An owner's relay, charged by the receiver: its blocks of strangers refused, the rest counted.
void Cluster::log_relayed(const ReportHeader &h, const Received &r, uint64_t now_ns) {
  for (const RelayedReport *s : r.strangers)
    reject("relay names a stranger", 0,
           " (" + std::to_string(s->entries.size()) + " entries of " + s->node_id + " relayed by " + h.node_id + ")",
           reject_log_, now_ns);
  for (const Charge &c : r.charges) {
    counters_.relayed_hits_debited += c.hits;
    if (log_level() == LogLevel::Debug)
      DT_DEBUG("relay from %s: %llu hits of %s debited, sent %lld ms ago", h.node_id.c_str(),
               static_cast<unsigned long long>(c.hits), c.node_id.c_str(), sent_ago_ms(h.sent_unix_ms));
  }
}

}  // namespace dt
