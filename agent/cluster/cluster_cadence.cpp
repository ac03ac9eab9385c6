// cluster_cadence.cpp - what goes out at the end of a period (cluster/report_cadence.h):
// the report to everyone when it has something to say or a heartbeat is due, and the
// directed batches that are due.
#include <algorithm>

#include "cluster/cluster.h"

namespace dt {

// Who must hear from us: with owners, every member but us (each hears our messages to it
// alone as well as our reports); else our reports reach everyone and are all we send.
std::vector<std::string> Cluster::cadence_peers() const {
  if (!owner_period_) return {};
  std::vector<std::string> peers;
  for (const std::string &id : router_.members())
    if (id != cfg_.node_id) peers.push_back(id);
  return peers;
}

void Cluster::send_period(const ReportHeader &h, const ReportBody &body, uint64_t now_ns) {
  const bool content = !body.entries.empty() || !body.tags.empty() || !body.factors.empty();
  const PeriodPlan plan = cadence_.plan(cadence_peers(), content, now_ns);
  for (const auto &[to, entries] : plan.directed) {
    publish_directed(to, entries, now_ns);
    counters_.directed_batches++;
  }
  counters_.lazy_entries = cadence_.lazy_entries();
  counters_.batch_waiting = cadence_.waiting();
  if (!plan.broadcast) {
    counters_.quiet_periods++;
    return;
  }
  counters_.heartbeats_sent += plan.heartbeat;
  publish_report(h, body, now_ns);
}

}  // namespace dt
