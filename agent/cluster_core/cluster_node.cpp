// cluster_node.cpp - one member of the cluster (see cluster_node.h).
#include "cluster_core/cluster_node.h"

#include <utility>

#include "cluster_core/period_end.h"

namespace dt {

ClusterNode::ClusterNode(const NodeOptions &o, const LocalRules &rules)
    : opt_(o),
      tracker_(o.tracker),
      planner_(o.planner),
      join_guard_(o.join),
      receiver_(o.receiver, planner_, join_guard_, rules),
      early_(o.early) {}

void ClusterNode::open(const OutboxOptions &o, Seal seal, NodeIo io) {
  io_ = std::move(io);
  out_ = std::make_unique<Outbox>(o, std::move(seal));
  send_ = std::make_unique<ReportSender>(planner_, *out_, io_.publish);
}

std::vector<ReportEntry> ClusterNode::period_served(std::vector<ReportEntry> served, uint64_t now_ns) {
  if (!early_.enabled()) return served;
  served = merge_entries(early_.take_held(), served);  // collected early, held back: theirs now
  early_.period_reported(served, now_ns);
  return served;
}

Received ClusterNode::receive(const ReportHeader &h, const ReportBody &body, const Arrival &a, uint64_t now_ns,
                              Outbox::Resends *served) {
  Received r = receiver_.receive(h, body, a, now_ns);  // receiver.h
  switch (r.plan.kind) {
    case InboundKind::Dropped:
    case InboundKind::Bans:
    case InboundKind::Verified: break;
    case InboundKind::ResendRequest:
      if (r.plan.stale || !opt_.resends) break;
      if (served) *served = serve_resend(h.node_id, body.resend, now_ns);
      else serve_resend(h.node_id, body.resend, now_ns);
      break;
    case InboundKind::Directed:
    case InboundKind::Relay:
    case InboundKind::Report:
      if (r.plan.ask_resends) request_resends(now_ns);
      break;
  }
  return r;
}

void ClusterNode::request_resends(uint64_t now_ns) {
  if (!opt_.resends) return;
  if (const auto req = resend_request(tracker_, *out_, io_.header(), now_ns)) io_.publish(*req, now_ns);
}

Outbox::Resends ClusterNode::serve_resend(const std::string &from, const std::vector<ResendRequest> &reqs,
                                          uint64_t now_ns) {
  Outbox::Resends r = out_->serve_resend(from, reqs, now_ns);
  for (const Outgoing &o : r.out) io_.publish(o, now_ns);
  return r;
}

std::vector<LivenessChange> ClusterNode::end_period(uint64_t now_ns) {
  PeriodEnd end = dt::end_period(tracker_, *out_, io_.header(), now_ns, opt_.resends);  // period_end.h
  if (end.resend_request) io_.publish(*end.resend_request, now_ns);
  return std::move(end.changes);
}

}  // namespace dt
