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

}  // namespace dt::sim
