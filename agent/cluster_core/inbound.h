// inbound.h - what a peer's message asks of this node once it is read, checked (signature,
// recipient, not our own echo) and judged by the tracker (peer_tracker.h: once only in its
// stream, its age). The cluster core's one dispatch: the agent's Cluster and the simulator
// (tools/sim) act on the same plan.
#pragma once

#include "cluster_core/peer_protocol.h"
#include "cluster_core/peer_tracker.h"

namespace dt {

enum class InboundKind {
  Dropped,        // a duplicate, or refused by the tracker (counted by the caller)
  Directed,       // to us alone, as owner of its sources: charge, then relay what turned shared
  Bans,           // a peer's bans (bans/ban_sync.h)
  Verified,       // sources a peer's SYN cookies verified (verified_share.h)
  ResendRequest,  // a peer asks for messages it missed (serve: not stale)
  Relay,          // an owner's relay: every member's hits but ours
  Report,         // a report to everyone: charge its hits, its sources are shared
};

struct InboundPlan {
  InboundKind kind = InboundKind::Dropped;
  bool stale = false;        // too old to charge: its hits counted, not debited
  bool ask_resends = false;  // a gap in the sender's reports showed: ask for it at once
  bool join_heard = false;   // a report of the sender's stream: the join guard learns its period
};

// hubs: this node hears its peers through hubs (no join guard: a hub's sums come at its pace).
InboundPlan plan_inbound(const ReportHeader &h, const ReportBody &body, const Arrival &a, bool hubs);

}  // namespace dt
