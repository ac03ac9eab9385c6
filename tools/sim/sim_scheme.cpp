// sim_scheme.cpp - the simulator's reporting schemes (cluster_sim.h, docs/cluster-scale.md):
// which peers hear of which sources. Mesh and Owner are the cluster
// core's (report_sender.h); Threshold picks a period's served sources here.
#include <algorithm>
#include <cstring>

#include "dthrottle/bucket.h"
#include "cluster_core/shared_early.h"
#include "sim/cluster_sim.h"

namespace dt::sim {

// Threshold: a source goes to every peer once its unreported hits reach the threshold,
// then every period while it is shared (anyone reported it lately); the rest waits.
void ClusterSim::route_threshold(size_t h, std::vector<ReportEntry> served) {
  Host &host = hosts_[h];
  std::vector<ReportEntry> everyone;
  for (const ReportEntry &e : served) {
    if (!host.node->planner().router().shared(e.key, now_) && e.hits < s_.threshold) continue;  // stays unreported
    host.node->planner().heard(e.key, now_);
    everyone.push_back(e);
  }
  mark_reported(h, everyone);
  send_period(h, std::move(everyone), false, false);  // every period, to everyone
}

// Scenario::shared_period, as the agent's early ticks (shared_early.h): between two reports,
// what host h admitted of the sources it knows to be shared and whose bucket here is below
// half the burst (near its limit: where a late report costs), routed as an early tick's.
void ClusterSim::report_shared(size_t h) {
  Host &host = hosts_[h];
  host.next_shared += s_.shared_period;
  if (!owner_ready(h)) return;
  const BucketLookup lookup = [&](const dt_key &k, BucketView *v) {
    auto it = host.buckets.find(k);
    if (it == host.buckets.end()) return false;
    v->bucket.tat_ns = it->second.tat, v->bucket.passed = it->second.passed, v->bucket.reported = it->second.reported;
    v->policy = host.policy;
    return true;
  };
  std::vector<ReportEntry> shared = collect_shared_early(host.node->planner().router(), lookup, [&](const std::vector<dt_key> &keys) {
    std::vector<ReportEntry> collected;
    for (const dt_key &k : keys) collected.push_back({k, host.buckets[k].passed - host.buckets[k].reported});
    mark_reported(h, collected);
    return collected;
  }, now_);
  if (shared.empty()) return;
  std::sort(shared.begin(), shared.end(), [](const ReportEntry &a, const ReportEntry &b) {
    return memcmp(a.key.addr, b.key.addr, sizeof a.key.addr) < 0;
  });
  publish_early(h, std::move(shared));
}

// An owner's relay (report_sender.h: in its report stream), each block naming the member
// that admitted its hits.
void ClusterSim::send_relays(size_t owner, const std::vector<RelayEntry> &relays, const std::vector<std::string> &ids) {
  Host &host = hosts_[owner];
  host.node->sender().relays(host.node->outbox().header(host.epoch, wall_ms(owner)), relays, ids, rules_.names, now_);
}

}  // namespace dt::sim
