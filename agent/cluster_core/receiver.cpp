// receiver.cpp - what a checked peer message does to this node (see receiver.h).
#include "cluster_core/receiver.h"

#include <utility>

namespace dt {

Received Receiver::receive(const ReportHeader &h, const ReportBody &body, const Arrival &a, uint64_t now_ns) {
  Received r;
  r.plan = plan_inbound(h, body, a, opt_.hubs);
  switch (r.plan.kind) {
    case InboundKind::Dropped:
    case InboundKind::Bans:
    case InboundKind::Verified:
    case InboundKind::ResendRequest: return r;  // the caller's (bans/ban_sync.h, verified_share.h, outbox.h)
    case InboundKind::Directed:
    case InboundKind::Relay:
    case InboundKind::Report: break;
  }
  if (r.plan.join_heard) guard_.heard(h.node_id, h.epoch, now_ns);
  if (r.plan.stale) {  // counted, nothing charged
    r.stale_hits = hits_of(body.entries);
    for (const TagHit &t : body.tags) r.stale_hits += t.hits;
    return r;
  }
  if (r.plan.kind == InboundKind::Directed) directed(h, body, now_ns, &r);
  else if (r.plan.kind == InboundKind::Relay) relayed(h, body, now_ns, &r);
  else report(h, body, now_ns, &r);
  return r;
}

void Receiver::charge(const ReportHeader &h, const ReportBody &body, const std::string &sender, uint64_t now_ns,
                      Received *r, std::vector<ReportEntry> *plain) {
  if (adaptive_ && !body.factors.empty()) adaptive_->on_peer_factors(h.node_id, body.factors, now_ns);
  if (body.entries.empty()) return;
  // The sender's rule names to ours; hits for rules we do not throttle are dropped.
  const ReportRuleMap map = map_report_rules(rules_, body.rules);
  if (adaptive_) adaptive_->add_packet_hits(body.entries, map.adaptive);
  Charge c{h.node_id, guard_.active(now_ns) ? sender : h.node_id, &body,
           report_debits(rules_, map, body.entries, &r->unknown_entries), 0};
  for (const dt_debit &d : c.debits) {
    c.hits += d.hits;
    if (plain) plain->push_back({d.key, d.hits});
  }
  if (!c.debits.empty()) {  // joining a running cluster: a burst more for each source in flight
    const JoinExtra x = add_join_extra(guard_, rules_, sender, h.epoch, &c.debits, now_ns);
    r->join.sources += x.sources;
    r->join.hits += x.hits;
  }
  r->charges.push_back(std::move(c));
}

Received Receiver::aggregate(AggregateIntake &intake, AggregateMessage m, uint64_t now_ns, bool *switched,
                             std::string *from) {
  Received r;
  const ReportHeader hub = m.header;  // its node id names the debits
  r.blocks = intake.on_message(std::move(m), now_ns, switched, from);
  for (const ReportBody &body : r.blocks) charge(hub, body, hub.node_id, now_ns, &r);
  return r;
}

// A report to everyone: its hits charged, its sources shared.
void Receiver::report(const ReportHeader &h, const ReportBody &body, uint64_t now_ns, Received *r) {
  charge(h, body, h.node_id, now_ns, r);
  for (const Charge &c : r->charges) note_shared(c, now_ns);
}

// To us alone, as the owner of its sources: charged, then what turned shared is relayed.
void Receiver::directed(const ReportHeader &h, const ReportBody &body, uint64_t now_ns, Received *r) {
  std::vector<ReportEntry> charged;
  charge(h, body, h.node_id, now_ns, r, &charged);
  r->relay = planner_.on_directed(h.node_id, charged, now_ns);
}

// An owner's relay: every member's hits but ours, as if that member had reported them.
void Receiver::relayed(const ReportHeader &h, const ReportBody &body, uint64_t now_ns, Received *r) {
  r->blocks.reserve(body.relayed.size());  // the charges point into it
  for (const RelayedReport &block : body.relayed) {
    if (block.node_id == opt_.node_id) continue;  // ours: charged here when we admitted them
    if (member_ && !member_(block.node_id)) {
      r->strangers.push_back(&block);
      continue;
    }
    ReportHeader from = h;
    from.node_id = block.node_id;
    ReportBody &hits = r->blocks.emplace_back();
    hits.rules = block.rules;
    hits.entries = block.entries;
    const size_t before = r->charges.size();
    charge(from, hits, h.node_id, now_ns, r);
    if (r->charges.size() > before) note_shared(r->charges.back(), now_ns);
  }
}

// Sources a peer told everyone about are shared: we tell everyone too, for a while.
void Receiver::note_shared(const Charge &c, uint64_t now_ns) {
  for (const dt_debit &d : c.debits) planner_.heard(d.key, now_ns);
}

}  // namespace dt
