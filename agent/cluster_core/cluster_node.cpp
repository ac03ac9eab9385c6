// cluster_node.cpp - one member of the cluster (see cluster_node.h).
#include "cluster_core/cluster_node.h"

#include <algorithm>
#include <utility>

#include "cluster_core/period_end.h"

namespace dt {
namespace {

// How long our messages are kept for resends: the report max age (kResendKeepNs without one).
uint64_t resend_keep_ns(const ClusterTimes &t) { return t.report_max_age_ns ? t.report_max_age_ns : kResendKeepNs; }

}  // namespace

TrackerOptions tracker_options(const NodeSettings &s) {
  TrackerOptions o;
  o.down_after_ns = peer_down_after_ns(s.times);
  o.backlog_slack_ns = backlog_slack_ns(s.times);
  o.max_age_ns = s.times.report_max_age_ns;
  o.authenticated = s.authenticated;
  o.max_peers = std::max(kMinTrackedPeers, kTrackedPerConfigured * (s.peers + s.hubs));
  return o;
}

NodeOptions node_options(const NodeSettings &s) {
  const ClusterTimes &t = s.times;
  NodeOptions o;
  o.tracker = tracker_options(s);
  o.planner = PlannerOptions{s.node_id,
                             s.owner_scheme,
                             s.hubs > 0,
                             s.peers,
                             RouterOptions{kSharedKeepPeriods * t.period_ns, resend_keep_ns(t)},
                             cadence_options(t)};
  // A new node's guard lasts the report max age (the default one when none is in force).
  o.join =
      JoinGuardOptions{s.starts_empty ? report_max_age_ns(t.report_max_age_ns, t.period_ns) : 0, kJoinRunningEpoch};
  o.receiver = ReceiverOptions{s.node_id, s.hubs > 0};
  o.early = EarlyReportOptions{t.period_ns, s.hubs ? 0 : s.early_report_ns};
  o.shared_early_ns = shared_early_pace(t.period_ns, o.early.delay_ns);
  o.hub_down_after_ns = aggregate_down_after_ns(t);
  o.hub_keep_ns = 2 * o.hub_down_after_ns + 2 * t.period_ns;
  return o;
}

OutboxOptions outbox_options(const NodeSettings &s, uint64_t boot_id) {
  return OutboxOptions{s.node_id, boot_id, resend_keep_ns(s.times), s.times.period_ns / 2, kMaxMessageBytes};
}

ClusterNode::ClusterNode(const NodeOptions &o, const LocalRules &rules)
    : opt_(o),
      rules_(rules),
      tracker_(o.tracker),
      planner_(o.planner),
      join_guard_(o.join),
      receiver_(o.receiver, planner_, join_guard_, rules),
      early_(o.early),
      intake_(o.hub_down_after_ns, o.hub_keep_ns) {}

void ClusterNode::open(const OutboxOptions &o, Seal seal, NodeIo io) {
  io_ = std::move(io);
  intake_.set_own(o.node_id, o.boot_id);
  if (opt_.receiver.hubs)  // summing hubs send our reports back in their sums
    io_.publish = [this, publish = std::move(io_.publish)](const Outgoing &m, uint64_t now_ns) {
      if (m.kind == OutKind::Report) remember_own(m, now_ns);
      return publish(m, now_ns);
    };
  out_ = std::make_unique<Outbox>(o, std::move(seal));
  send_ = std::make_unique<ReportSender>(planner_, *out_, io_.publish);
}

std::vector<ReportEntry> ClusterNode::period_served(std::vector<ReportEntry> served, uint64_t now_ns) {
  if (!early_.enabled()) return served;
  served = merge_entries(early_.take_held(), served);  // collected early, held back: theirs now
  early_.period_reported(served, now_ns);
  next_early_ns_ = early_.next_tick(now_ns);
  return served;
}

void ClusterNode::start(uint64_t now_ns) {
  early_.period_reported({}, now_ns);
  next_early_ns_ = early_.next_tick(now_ns);
}

std::vector<ReportEntry> ClusterNode::early_tick(const EarlySources &src, uint64_t now_ns, size_t *shared) {
  *shared = 0;
  next_early_ns_ = early_.next_tick(next_early_ns_);          // the ticks keep their pace
  if (next_early_ns_ <= now_ns) next_early_ns_ = UINT64_MAX;  // held up past it: wait for the period
  if (src.failed()) return early_.tick({});
  std::vector<ReportEntry> entries = early_.collect_tick(src.fresh, src.collect);
  if (src.failed() || !opt_.shared_early_ns || now_ns < next_shared_ns_) return entries;
  // After the new ones: a key in both was collected already.
  const uint64_t tick = early_.options().delay_ns;
  next_shared_ns_ = now_ns + opt_.shared_early_ns - tick / 2;  // the tick nearest the pace
  if (!owner_ready()) return entries;
  const std::vector<ReportEntry> more = collect_shared_early(planner_.router(), src.lookup, src.collect, now_ns);
  *shared = more.size();
  entries.insert(entries.end(), more.begin(), more.end());
  return entries;
}

size_t ClusterNode::send_early(const ReportHeader &h, std::vector<ReportEntry> entries, uint64_t now_ns) {
  if (adaptive_) adaptive_->add_packet_hits(entries);  // served here, as the period's report's
  ReportBody body;
  body.rules = rules_.names;
  body.entries = std::move(entries);
  return send_->early(h, std::move(body), owner_ready(), now_ns);
}

void ClusterNode::send_period(const ReportHeader &h, ReportBody body, uint64_t now_ns, bool cadence) {
  body.rules = rules_.names;
  if (adaptive_) {
    adaptive_->add_packet_hits(body.entries);  // all we served, wherever it goes
    body.factors = adaptive_->report_factors();
  }
  send_->period(h, std::move(body), owner_ready(), now_ns, cadence);
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
      if (Outbox::Resends r = serve_resend(h.node_id, body.resend, now_ns); served) *served = std::move(r);
      break;
    case InboundKind::Directed:
    case InboundKind::Relay:
    case InboundKind::Report:
      if (r.plan.ask_resends) request_resends(now_ns);
      if (!r.relay.relays.empty())  // as owner: what turned shared, to everyone
        send_->relays(io_.report_header(), r.relay.relays, r.relay.ids, rules_.names, now_ns);
      break;
  }
  return r;
}

Received ClusterNode::aggregate(AggregateMessage m, uint64_t now_ns, bool *switched, std::string *from) {
  return receiver_.aggregate(intake_, std::move(m), now_ns, switched, from);
}

// One of our reports, as the hubs will sum it: its entries and tags (decoded back, so that
// each seq holds exactly what it carried; factors are not summed).
void ClusterNode::remember_own(const Outgoing &o, uint64_t now_ns) {
  ReportHeader h;
  ReportBody body;
  if (decode_report(o.bytes->data(), o.bytes->size(), &h, &body) != DecodeError::None) return;  // ours: cannot happen
  body.factors.clear();
  intake_.remember_own(o.seq, std::move(body), now_ns);
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
