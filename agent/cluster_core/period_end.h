// period_end.h - the end of a node's period, after its report (the cluster core: no I/O).
// It asks the peers for what is missing in their streams, takes the peers silent for
// down_after down, and starts the outbox's resend budget again. Every node (cluster_node.h:
// the agent's and the simulator's) ends its periods with this one; a receiver that saw a gap
// asks at once (resend_request).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "cluster_core/outbox.h"
#include "cluster_core/peer_tracker.h"

namespace dt {

struct PeriodEnd {
  std::optional<Outgoing> resend_request;  // to publish
  std::vector<LivenessChange> changes;     // peers gone down now
};

// A request for the messages missing in the peers' streams (not yet stale), headed h; none
// if nothing is missing.
std::optional<Outgoing> resend_request(PeerTracker &tracker, Outbox &out, const ReportHeader &h, uint64_t now_ns);

// resends false: no request (a cluster that never asks again).
PeriodEnd end_period(PeerTracker &tracker, Outbox &out, const ReportHeader &h, uint64_t now_ns, bool resends = true);

}  // namespace dt
