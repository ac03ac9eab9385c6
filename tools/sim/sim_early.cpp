// sim_early.cpp - the simulator's early reports of new sources (Scenario::early_report,
// agent/cluster_core/early_report.h): the kernel's announcements, the agent's ticks.
#include <algorithm>
#include <cstring>

#include "sim/cluster_sim.h"

namespace dt::sim {

// dt_mark_active (bpf/announce.h): a source's first admission in the host's period is
// announced; the agent reads the announcements at its next tick.
void ClusterSim::announce(size_t h, Bucket &b, const dt_key &k) {
  Host &host = hosts_[h];
  if (!host.node->early().enabled()) return;
  const uint64_t epoch = host_stats_[h].reports + 1;
  if (b.announced == epoch) return;
  b.announced = epoch;
  host.announced.push_back(k);
}

// The node's next early tick, as an event (an older one in early_ is void).
void ClusterSim::schedule_early(size_t h) {
  const uint64_t t = hosts_[h].node->early_deadline();
  if (t != UINT64_MAX) early_.push({t, h});
}

// An early tick of the node (cluster_node.h): the new sources' hits so far, collected
// (dt_collect: reported = passed), those with fewer than min_hits held for the next tick or
// the period's report (period_served); and at Scenario::shared_period the shared sources
// whose bucket here is below half the burst (near its limit: where a late report costs).
void ClusterSim::handle_early(size_t h) {
  Host &host = hosts_[h];
  if (now_ != host.node->early_deadline()) return;  // the period's report came first and started anew
  EarlySources src;
  src.fresh = std::move(host.announced);
  host.announced.clear();
  src.collect = [&](const std::vector<dt_key> &keys) {
    std::vector<ReportEntry> collected;
    for (const dt_key &k : keys) {
      Bucket &b = host.buckets[k];
      collected.push_back({k, b.passed - b.reported});
      b.reported = b.passed;
    }
    return collected;
  };
  src.lookup = [&](const dt_key &k, BucketView *v) {
    auto it = host.buckets.find(k);
    if (it == host.buckets.end()) return false;
    v->bucket.tat_ns = it->second.tat, v->bucket.passed = it->second.passed, v->bucket.reported = it->second.reported;
    v->policy = host.policy;
    return true;
  };
  src.failed = [] { return false; };
  size_t shared = 0;
  std::vector<ReportEntry> entries = sorted(host.node->early_tick(src, now_, &shared));
  schedule_early(h);
  if (entries.empty()) return;
  host_stats_[h].early_entries += entries.size() - shared;
  host_stats_[h].hits_reported += hits_of(entries);
  // Routed and sent by the cluster core (report_sender.h): to their owners now, shared ones (or
  // all, without owners) to every peer.
  host_stats_[h].early_messages +=
      host.node->send_early(host.node->outbox().header(host.epoch, wall_ms(h)), std::move(entries), now_);
}

}  // namespace dt::sim
