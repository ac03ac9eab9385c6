// cluster_early.cpp - early reports of sources new to this host (cluster/early_report.h,
// docs/cluster-scale.md "First contact"): at ticks within a period, the sources the kernel
// announced since the last tick that this host has not reported lately, with their hits so
// far, to their owner (or to every peer), as the period's report would send them.
#include <cstring>

#include "cluster/cluster.h"

namespace dt {

void Cluster::on_early_tick(uint64_t now_ns) {
  next_early_ns_ = early_.next_tick(next_early_ns_);  // the ticks keep their pace
  if (next_early_ns_ <= now_ns) next_early_ns_ = UINT64_MAX;  // held up past it: wait for the period
  int err = 0;
  const std::vector<dt_key> fresh = collector_.take_fresh(&err);
  const std::vector<dt_key> due = err ? std::vector<dt_key>{} : early_.due(fresh);
  std::vector<ReportEntry> collected;
  if (!due.empty()) collected = collector_.collect(due, &err);
  if (err != 0) {
    counters_.collect_errors++;
    uint64_t suppressed = 0;
    if (reject_log_.allow(now_ns, &suppressed)) DT_WARN("collecting new sources' hits early failed: %s", strerror(-err));
  }
  std::vector<ReportEntry> entries = early_.tick(collected);
  if (entries.empty()) return;
  counters_.early_ticks++;
  counters_.early_entries_sent += entries.size();
  if (adaptive_) adaptive_->add_packet_hits(entries);  // served here, as the period's report's
  ReportBody body;
  body.rules = rule_names_;
  body.entries = route_served(std::move(entries), now_ns, false);
  if (body.entries.empty()) return;
  counters_.prefix_entries_sent += name_prefix_groups(&body);
  publish_report(message_header(collector_.epoch() - 1), body, now_ns);
  cadence_.sent_to_everyone(true, now_ns);
}

}  // namespace dt
