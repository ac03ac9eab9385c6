// cluster_node.h - one member of the cluster: its protocol state and the decisions it takes
// on its own (the cluster core: no I/O). It owns the peers' tracker, the planner (owners,
// cadence), the joiner's guard, the receiver, the early reports and, once open, its message
// streams (outbox) and sender. The caller reads and checks messages, collects its buckets'
// hits and writes debits; the node says what to send (through the caller's publish), serves
// and asks for resends, and ends the periods. The agent's Cluster wraps it with ZeroMQ and
// the BPF maps, the simulator (tools/sim) with its simulated network and buckets.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "cluster_core/aggregate_intake.h"
#include "cluster_core/cluster_times.h"
#include "cluster_core/early_report.h"
#include "cluster_core/join_guard.h"
#include "cluster_core/outbox.h"
#include "cluster_core/peer_tracker.h"
#include "cluster_core/receiver.h"
#include "cluster_core/report_planner.h"
#include "cluster_core/report_sender.h"
#include "cluster_core/rule_groups.h"
#include "cluster_core/shared_early.h"

namespace dt {

struct NodeOptions {
  TrackerOptions tracker;
  PlannerOptions planner;
  JoinGuardOptions join;
  ReceiverOptions receiver;
  EarlyReportOptions early;
  bool resends = true;  // ask peers again for what went missing, and serve their requests
  // The shared sources' early reports (shared_early.h) at most this often, at the early ticks
  // (shared_early_pace; owner scheme only); 0: none.
  uint64_t shared_early_ns = 0;
  // Behind summing hubs (receiver.hubs): a hub silent this long is taken over by the other;
  // our own reports are kept this long for the sums that hold them (aggregate_intake.h).
  uint64_t hub_down_after_ns = 0, hub_keep_ns = 0;
};

// What a node's options come down to: the agent's ClusterConfig (cluster/cluster.h) and the
// simulator's Scenario (tools/sim) are both turned into these, then into NodeOptions.
struct NodeSettings {
  std::string node_id;
  ClusterTimes times;  // the period, --down-after, the report max age in force, link liveness
  bool owner_scheme = true;
  size_t peers = 0;              // configured (full mesh) peers
  size_t hubs = 0;               // hubs we hear the peers through (no owners, no early reports then)
  bool authenticated = false;    // every message's signature is checked before the tracker
  uint64_t early_report_ns = 0;  // early reports' tick; 0: none
  bool starts_empty = true;      // a new node (not one that took over its buckets): join guard
};

constexpr uint64_t kResendKeepNs = 5'000'000'000ull;  // messages kept for resends without a max age
constexpr uint64_t kSharedKeepPeriods = 25;           // owner scheme: a source heard of lately is shared
constexpr size_t kTrackedPerConfigured = 4;           // node ids tracked per configured peer or hub
// A peer's first period number that says it ran before us: 10 periods (2 s at the default
// period), more than agents started together are apart when they first hear each other.
constexpr uint64_t kJoinRunningEpoch = 10;

// Node ids tracked at most: a few per configured peer or hub (a hub relays every agent behind
// it, and node ids change when agents are renamed), never fewer than kMinTrackedPeers.
TrackerOptions tracker_options(const NodeSettings &s);
// The node's options for `s`: the tracker's, the planner's (owners, cadence), the join guard
// (a new node's: the report max age), the receiver's, the early reports (and the shared
// sources' pace), the hubs' failover.
NodeOptions node_options(const NodeSettings &s);
// Our message streams: kept for resends for the report max age (kResendKeepNs without one).
OutboxOptions outbox_options(const NodeSettings &s, uint64_t boot_id);

// The caller's side of an early tick: the sources first admitted since the last tick (the
// kernel's announcements), how it collects hits (dt_collect) and reads its buckets, and whether
// a read failed (then nothing more is collected at this tick).
struct EarlySources {
  std::vector<dt_key> fresh;
  CollectHits collect;
  BucketLookup lookup;
  std::function<bool()> failed;
};

// How the node's messages leave: publish puts one on the wire; header is the header of a
// message sent now in the current period (a resend request's), report_header in the period
// just ended (our report stream's: an owner's relays).
struct NodeIo {
  Publish publish;
  std::function<ReportHeader()> header;
  std::function<ReportHeader()> report_header;
};

class ClusterNode {
 public:
  // `rules` (the rules peers' hits are charged to) outlives the node.
  ClusterNode(const NodeOptions &o, const LocalRules &rules);

  // The message streams, once the node can seal them (the agent's signing key): every
  // message goes out through `io` (behind hubs, each report kept for their sums first).
  void open(const OutboxOptions &o, Seal seal, NodeIo io);

  // Whether this period's sources go to their owners (report_planner.h): the tracker's up
  // peers, or the caller's own account of them (set_up_peers: the simulator's ideal network
  // runs no tracker).
  bool owner_ready() { return up_peers_ ? up_peers_() : planner_.owner_ready(tracker_.peers()); }
  void set_up_peers(std::function<bool()> owner_ready) { up_peers_ = std::move(owner_ready); }
  // The period's served sources with what the early ticks held back (merged), noted as
  // reported in this period (early_report.h); the first early tick of the next period is due.
  std::vector<ReportEntry> period_served(std::vector<ReportEntry> served, uint64_t now_ns);
  // The first period starts at now_ns: its early ticks are due (else they start with the
  // period after the first report).
  void start(uint64_t now_ns);
  // When the next early tick is due (UINT64_MAX: none).
  uint64_t early_deadline() const { return next_early_ns_; }
  // An early tick (early_report.h): the new sources' hits, and at the shared pace those of the
  // shared sources near their limit (owners only); what to send now (send_early), of which
  // *shared were shared ones.
  std::vector<ReportEntry> early_tick(const EarlySources &src, uint64_t now_ns, size_t *shared);
  // Adaptive limits: every hit we serve (send_early, send_period) and the peers' (receiver.h)
  // go to `a`, our reports carry its factors (nullptr: none).
  void set_adaptive(AdaptiveSet *a) {
    adaptive_ = a;
    receiver_.set_adaptive(a);
  }
  // Entries collected at an early tick, routed as the period's report is: to their owners
  // now, shared ones (or all, without owners) to every peer. Messages sent.
  size_t send_early(const ReportHeader &h, std::vector<ReportEntry> entries, uint64_t now_ns);
  // The period's report (its entries from period_served; the caller's tags; the adaptive
  // controller's factors as they stand before its own period, which the caller ends after this),
  // to the owners and everyone as owner_ready() and the cadence (report_sender.h) decide; without
  // `cadence`, a report to everyone and the owners' batches every period.
  void send_period(const ReportHeader &h, ReportBody body, uint64_t now_ns, bool cadence = true);
  // A message the tracker judged (`a`): what the receiver makes of it. A resend request is
  // served here (*served: what it asked of us), and a gap in a report's stream asked for at
  // once; an owner's relays (what turned shared) go out here. The caller acts on the rest
  // (bans, verified, stale counts, charges).
  Received receive(const ReportHeader &h, const ReportBody &body, const Arrival &a, uint64_t now_ns,
                   Outbox::Resends *served = nullptr);
  // A summing hub's aggregate: what the intake takes of it, charged as a report of the hub's
  // (receiver.h: *switched and *from say when it made its hub the one we take).
  Received aggregate(AggregateMessage m, uint64_t now_ns, bool *switched, std::string *from);
  // Asks the peers for the messages missing in their streams (not yet stale).
  void request_resends(uint64_t now_ns);
  // Publishes again what a peer asks of us (outbox.h: within the period's budget).
  Outbox::Resends serve_resend(const std::string &from, const std::vector<ResendRequest> &reqs, uint64_t now_ns);
  // After the period's report: missing messages asked for, silent peers taken down (returned),
  // the resend budget started again.
  std::vector<LivenessChange> end_period(uint64_t now_ns);

  PeerTracker &tracker() { return tracker_; }
  const PeerTracker &tracker() const { return tracker_; }
  ReportPlanner &planner() { return planner_; }
  const ReportPlanner &planner() const { return planner_; }
  JoinGuard &join_guard() { return join_guard_; }
  Receiver &receiver() { return receiver_; }
  const AggregateIntake &intake() const { return intake_; }
  EarlyReport &early() { return early_; }
  const EarlyReport &early() const { return early_; }
  Outbox &outbox() { return *out_; }
  const Outbox &outbox() const { return *out_; }
  ReportSender &sender() { return *send_; }
  const ReportSender &sender() const { return *send_; }

 private:
  void remember_own(const Outgoing &o, uint64_t now_ns);

  NodeOptions opt_;
  const LocalRules &rules_;
  PeerTracker tracker_;
  ReportPlanner planner_;
  JoinGuard join_guard_;
  Receiver receiver_;
  EarlyReport early_;
  AggregateIntake intake_;
  std::unique_ptr<Outbox> out_;
  std::unique_ptr<ReportSender> send_;
  NodeIo io_;
  std::function<bool()> up_peers_;
  AdaptiveSet *adaptive_ = nullptr;
  uint64_t next_early_ns_ = UINT64_MAX;
  uint64_t next_shared_ns_ = 0;
};

}  // namespace dt
