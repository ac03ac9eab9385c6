// report_sender.h - what a node sends of the hits it served (the cluster core: no I/O): at
// the end of a period and at an early tick, its served sources routed by the planner
// (report_planner.h: owners, cadence), sealed by the outbox (outbox.h), and handed to the
// caller's publish (the agent's ZeroMQ PUB socket, the simulator's network). An owner's
// relays and the messages to one owner go the same way. The agent's Cluster and the
// simulator (tools/sim) send through this one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cluster_core/outbox.h"
#include "cluster_core/report_planner.h"

namespace dt {

// Puts one message on the wire at now_ns; false if it did not go out.
using Publish = std::function<bool(const Outgoing &, uint64_t now_ns)>;

// What went out, for the caller's counters (totals since the start).
struct SendCounts {
  uint64_t reports = 0, report_entries = 0, max_report_entries = 0, tags = 0;  // to everyone
  uint64_t directed_entries = 0, directed_batches = 0, relayed_entries = 0;
  uint64_t prefix_entries = 0, dest_entries = 0;  // in reports to everyone (rule_groups.h)
  uint64_t mesh_periods = 0, quiet_periods = 0, heartbeats = 0;
};

class ReportSender {
 public:
  ReportSender(ReportPlanner &planner, Outbox &outbox, Publish publish)
      : planner_(planner), outbox_(outbox), publish_(std::move(publish)) {}

  // The end of a period: `body` holds our rule names, what we served (entries), our tags and
  // factors; h names the period. Sources for one owner wait in its batch (owners), the
  // batches due go, then the report to everyone if it has something to say or a heartbeat
  // is due. cadence false (the simulator's every-period cadence): the batches go at once,
  // the report every period.
  void period(const ReportHeader &h, ReportBody body, bool owners, uint64_t now_ns, bool cadence = true);
  // An early tick: sources for one owner go to it now, the rest to everyone in one report.
  // Returns how many messages that made (one per owner, one to everyone).
  size_t early(const ReportHeader &h, ReportBody body, bool owners, uint64_t now_ns);
  // As owner: members' hits of sources now shared (RelayEntry::from indexes ids), to
  // everyone, in our report stream.
  void relays(const ReportHeader &h, const std::vector<RelayEntry> &relays, const std::vector<std::string> &ids,
              const std::vector<std::string> &rule_names, uint64_t now_ns);
  // Entries for one owner, in messages of their own (its stream), naming it.
  void directed(const std::string &to, const ReportHeader &h, const std::vector<std::string> &rule_names,
                const std::vector<ReportEntry> &entries, uint64_t now_ns);

  const SendCounts &counts() const { return counts_; }

 private:
  void routed(const ReportHeader &h, Routed &r, const std::vector<std::string> &rule_names, uint64_t now_ns);
  void report(const ReportHeader &h, ReportBody &body, uint64_t now_ns);

  ReportPlanner &planner_;
  Outbox &outbox_;
  Publish publish_;
  SendCounts counts_;
};

}  // namespace dt
