// period_end.cpp - the end of a node's period (see period_end.h).
#include "cluster_core/period_end.h"

namespace dt {

std::optional<Outgoing> resend_request(PeerTracker &tracker, Outbox &out, const ReportHeader &h, uint64_t now_ns) {
  return out.resend_request(h, tracker.resend_requests(now_ns, kMaxResendSeqs));
}

PeriodEnd end_period(PeerTracker &tracker, Outbox &out, const ReportHeader &h, uint64_t now_ns, bool resends) {
  PeriodEnd e;
  if (resends) e.resend_request = resend_request(tracker, out, h, now_ns);
  e.changes = tracker.check_liveness(now_ns);
  out.new_period();
  return e;
}

}  // namespace dt
