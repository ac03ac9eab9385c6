// report_planner.h - who hears of which source, and when (the cluster core: no I/O): the
// owner scheme's routing (report_router.h) gated on a settled membership, and the cadence
// (report_cadence.h) of what goes out at the end of a period. The agent's Cluster and the
// simulator (tools/sim) run this one; they only publish what it decides.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cluster_core/peer_tracker.h"
#include "cluster_core/report_cadence.h"
#include "cluster_core/report_router.h"

namespace dt {

struct PlannerOptions {
  std::string node_id;
  // Reporting scheme "owner" (docs/cluster-scale.md): only in a full mesh (no hubs) of
  // configured_peers peers, and only while every one of them is up.
  bool owner_scheme = true;
  bool hubs = false;
  size_t configured_peers = 0;
  RouterOptions router;
  CadenceOptions cadence;
};

// Served sources, routed.
struct Routed {
  bool owners = false;                // routed to owners (else every source to every peer)
  std::vector<ReportEntry> everyone;  // for the report to every peer
  std::vector<std::pair<std::string, std::vector<ReportEntry>>> directed;  // owner id, entries: now
  std::vector<RelayEntry> relays;  // ours that turned shared: relay now (members() name them)
};

// An owner's relay: each entry names ids[from].
struct RelayPlan {
  std::vector<std::string> ids;
  std::vector<RelayEntry> relays;
};

class ReportPlanner {
 public:
  explicit ReportPlanner(const PlannerOptions &o = {});

  // The owner scheme needs members that agree on who owns what: exactly as many node ids up
  // (`up_peers`) as peers are configured (one more, say a forged or stray node id, could
  // otherwise own sources nobody receives). True if so (the members set to them and us).
  bool owner_ready(std::vector<std::string> up_peers);
  bool owner_ready(const std::map<std::string, PeerState> &peers);  // the tracker's up ones

  // Sources served here. period: the end of a period (sources for one owner wait in its
  // batch: plan() sends the batches due); else an early tick (they go to it now).
  Routed route(std::vector<ReportEntry> served, bool owners, bool period, uint64_t now_ns);
  // The end of a period: the batches due, and whether the report to everyone goes
  // (content: it has entries, tags or factors; else a heartbeat when one is due).
  PeriodPlan plan(bool content, uint64_t now_ns);
  // As owner: `charged`, what member `sender` sent us alone; what turned shared, to relay.
  RelayPlan on_directed(const std::string &sender, const std::vector<ReportEntry> &charged, uint64_t now_ns);
  // Sources a peer told everyone about (a report, a relay) are shared.
  void heard(const dt_key &k, uint64_t now_ns) { router_.heard(k, now_ns); }
  // A message to everyone sent outside plan() (a relay, an early report).
  void sent_to_everyone(bool content, uint64_t now_ns) { cadence_.sent_to_everyone(content, now_ns); }
  void force_broadcast() { cadence_.force_broadcast(); }

  // Membership changed (agent reload): this many peers configured now.
  void set_configured_peers(size_t n) { opt_.configured_peers = n; }
  bool owner_period() const { return owner_period_; }
  const ReportRouter &router() const { return router_; }
  const ReportCadence &cadence() const { return cadence_; }
  const PlannerOptions &options() const { return opt_; }

 private:
  std::vector<std::string> cadence_peers() const;

  PlannerOptions opt_;
  ReportRouter router_;
  ReportCadence cadence_;
  bool owner_period_ = false;  // this period's sources were routed to owners
};

}  // namespace dt
