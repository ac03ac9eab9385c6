// inbound.cpp - what a checked peer message asks of this node (see inbound.h).
#include "cluster_core/inbound.h"

namespace dt {

InboundPlan plan_inbound(const ReportHeader &h, const ReportBody &body, const Arrival &a, bool hubs) {
  InboundPlan p;
  p.stale = a.stale;
  if (a.verdict != Verdict::Accept) return p;
  if (!h.to.empty()) return p.kind = InboundKind::Directed, p;
  if (!body.bans.empty()) return p.kind = InboundKind::Bans, p;  // not a report
  if (!body.verified.empty()) return p.kind = InboundKind::Verified, p;
  if (!body.resend.empty()) return p.kind = InboundKind::ResendRequest, p;
  p.join_heard = !hubs;
  p.ask_resends = a.gap;  // at once: every period of delay is over-admission
  p.kind = body.relayed.empty() ? InboundKind::Report : InboundKind::Relay;
  return p;
}

}  // namespace dt
