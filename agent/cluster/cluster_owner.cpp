// cluster_owner.cpp - the reporting scheme "owner" in the agent's full mesh
// (docs/cluster-scale.md, cluster_core/report_router.h): sources seen only here go to their
// owner alone, shared ones to every peer; an owner relays what turns out to be shared.
#include <algorithm>
#include <map>
#include <zmq.hpp>

#include "cluster/cluster.h"
#include "common/clock.h"

namespace dt {
// The owner scheme needs members that agree on who owns what (report_planner.h): else
// every source goes to every peer, as in the mesh: more bytes, never less accuracy.
bool Cluster::owner_ready() { return planner_.owner_ready(tracker_.peers()); }

// A message a member sent to us alone as the owner of its sources, checked as every
// message (signature, recipient, once only in its stream, age: Cluster::handle_message),
// charged, then noted as owner.
void Cluster::handle_directed(const ReportHeader &h, const ReportBody &body, const Arrival &a, uint64_t now_ns) {
  if (a.stale) return skip_stale(h, body, a, now_ns);
  counters_.directed_applied++;
  const std::vector<dt_debit> debits = apply_report(h, body, now_ns);
  std::vector<ReportEntry> charged;
  for (const dt_debit &d : debits) charged.push_back({d.key, d.hits});
  const RelayPlan relay = planner_.on_directed(h.node_id, charged, now_ns);
  const std::vector<RelayEntry> &relays = relay.relays;
  if (log_level() == LogLevel::Debug)
    DT_DEBUG("directed from %s: %zu entries applied, %zu relayed, sent %lld ms ago", h.node_id.c_str(), debits.size(),
             relays.size(), sent_ago_ms(h.sent_unix_ms));
  if (relays.empty()) return;
  send_->relays(message_header(collector_.epoch() - 1), relays, relay.ids, rules_.names, now_ns);
  note_sent();
}

// An owner's relay: every member's hits but ours, as if that member had reported them.
// A node an owner may relay hits of: a member (a role = node key in --curve-peers, not a
// hub's; without keys a peer we track), never us (we charged ours when we admitted them).
bool Cluster::relay_member(const std::string &node_id) const {
  if (node_id == cfg_.node_id) return false;
  return signed_ ? verifier_.knows_node(node_id) : tracker_.peers().count(node_id) != 0;
}

void Cluster::apply_relayed(const ReportHeader &h, const ReportBody &body, uint64_t now_ns) {
  for (const RelayedReport &r : body.relayed) {
    if (r.node_id == cfg_.node_id) continue;  // ours: charged here when we admitted them
    if (!relay_member(r.node_id)) {
      reject("relay names a stranger", 0,
             " (" + std::to_string(r.entries.size()) + " entries of " + r.node_id + " relayed by " + h.node_id + ")",
             reject_log_, now_ns);
      continue;
    }
    ReportHeader from = h;
    from.node_id = r.node_id;
    ReportBody hits;
    hits.rules = r.rules;
    hits.entries = r.entries;
    const std::vector<dt_debit> debits = apply_report(from, hits, now_ns, h.node_id);
    uint64_t debited = 0;
    for (const dt_debit &d : debits) debited += d.hits;
    counters_.relayed_hits_debited += debited;
    if (log_level() == LogLevel::Debug)
      DT_DEBUG("relay from %s: %llu hits of %s debited, sent %lld ms ago", h.node_id.c_str(),
               static_cast<unsigned long long>(debited), r.node_id.c_str(), sent_ago_ms(h.sent_unix_ms));
    note_shared(debits, now_ns);
  }
}

// Sources a peer told everyone about are shared: we tell everyone too, for a while.
void Cluster::note_shared(const std::vector<dt_debit> &debits, uint64_t now_ns) {
  for (const dt_debit &d : debits) planner_.heard(d.key, now_ns);
}

}  // namespace dt
