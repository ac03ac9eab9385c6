// receiver.h - what a peer's message does to this node once it is read and judged (the
// cluster core: no I/O). After the caller's checks (signature, recipient, not our own echo)
// and the tracker's verdict: the plan (inbound.h), the joiner's guard, its hits as debits of
// our rules with a joiner's extra burst (rule_groups.h), the sources it makes shared, what an
// owner relays now, and the adaptive controller's share (peers' factors, every peer hit). The
// caller acts on what it returns: debits its buckets (BPF maps, the simulator's), publishes
// relays, serves resends, applies bans. The agent's Cluster and the simulator (tools/sim)
// receive with this one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "adaptive/adaptive.h"
#include "cluster_core/aggregate_intake.h"
#include "cluster_core/inbound.h"
#include "cluster_core/join_guard.h"
#include "cluster_core/peer_protocol.h"
#include "cluster_core/peer_tracker.h"
#include "cluster_core/report_planner.h"
#include "cluster_core/rule_groups.h"

namespace dt {

struct ReceiverOptions {
  std::string node_id;  // ours: a relay's block of our own hits is skipped
  bool hubs = false;    // we hear peers through hubs (inbound.h: no join guard)
};

// The hits of one member in a message with entries (a report, one block of a relay, a hub's
// sums): `body` names them as it came (rules, entries).
struct Charge {
  std::string node_id;               // whose hits
  std::string from;                  // who to name for the debits (the sender while joining)
  const ReportBody *body = nullptr;  // into the message, or Received::blocks
  std::vector<dt_debit> debits;      // our buckets' (may be empty), a joiner's extra burst included
  uint64_t hits = 0;                 // the debits' hits without that extra
};

// What one message asks of us (the caller acts in this order: resend request, stale count,
// charges, relay).
struct Received {
  InboundPlan plan;
  uint64_t stale_hits = 0;  // plan.stale: counted, not debited (entries and tags)
  std::vector<Charge> charges;
  std::vector<ReportBody> blocks;                // a relay's blocks, a hub's sums taken (charges point into them)
  std::vector<const RelayedReport *> strangers;  // relay blocks of no member's: not charged
  RelayPlan relay;                               // Directed: what turned shared, for us to relay now
  JoinExtra join;                                // what the joiner's guard added
  uint64_t unknown_entries = 0;                  // entries of rules or prefix levels we do not have
};

// Whether an owner may relay hits of `node_id` (a member: not a hub, not a stranger).
using RelayMember = std::function<bool(const std::string &node_id)>;

class Receiver {
 public:
  Receiver(const ReceiverOptions &o, ReportPlanner &planner, JoinGuard &guard, const LocalRules &rules)
      : opt_(o), planner_(planner), guard_(guard), rules_(rules) {}

  // Peers' factors and every hit they report go to `a` (nullptr: none).
  void set_adaptive(AdaptiveSet *a) { adaptive_ = a; }
  // Unset: every node but us.
  void set_relay_member(RelayMember m) { member_ = std::move(m); }

  // A message the tracker judged (`a`), read at now_ns.
  Received receive(const ReportHeader &h, const ReportBody &body, const Arrival &a, uint64_t now_ns);
  // The hits of h.node_id in `body` (a report, a hub's sums), sent by `sender`: factors to the
  // controller, then a charge if it has entries.
  // *plain (if given): the debits' keys and hits without a joiner's extra.
  void charge(const ReportHeader &h, const ReportBody &body, const std::string &sender, uint64_t now_ns, Received *r,
              std::vector<ReportEntry> *plain = nullptr);
  // A summing hub's aggregate, decoded: what `intake` takes of it (aggregate_intake.h: the
  // active hub's sums less our own hits; after a failover the new hub's kept ones first) in
  // blocks, each charged as a report of the hub's; *switched and *from as on_message's.
  Received aggregate(AggregateIntake &intake, AggregateMessage m, uint64_t now_ns, bool *switched, std::string *from);

 private:
  void report(const ReportHeader &h, const ReportBody &body, uint64_t now_ns, Received *r);
  void directed(const ReportHeader &h, const ReportBody &body, uint64_t now_ns, Received *r);
  void relayed(const ReportHeader &h, const ReportBody &body, uint64_t now_ns, Received *r);
  void note_shared(const Charge &c, uint64_t now_ns);

  ReceiverOptions opt_;
  ReportPlanner &planner_;
  JoinGuard &guard_;
  const LocalRules &rules_;
  AdaptiveSet *adaptive_ = nullptr;
  RelayMember member_;
};

}  // namespace dt
