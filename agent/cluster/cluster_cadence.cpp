// cluster_cadence.cpp - what goes out at the end of a period (cluster_core/report_cadence.h):
// the report to everyone when it has something to say or a heartbeat is due, and the
// directed batches that are due.
#include <algorithm>

#include "cluster/cluster.h"

namespace dt {

void Cluster::send_period(const ReportHeader &h, const ReportBody &body, uint64_t now_ns) {
  const bool content = !body.entries.empty() || !body.tags.empty() || !body.factors.empty();
  const PeriodPlan plan = planner_.plan(content, now_ns);
  for (const auto &[to, entries] : plan.directed) {
    publish_directed(to, entries, now_ns);
    counters_.directed_batches++;
  }
  counters_.lazy_entries = planner_.cadence().lazy_entries();
  counters_.batch_waiting = planner_.cadence().waiting();
  if (!plan.broadcast) {
    counters_.quiet_periods++;
    return;
  }
  counters_.heartbeats_sent += plan.heartbeat;
  publish_report(h, body, now_ns);
}

}  // namespace dt
