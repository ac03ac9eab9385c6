// sim_join.cpp - a host joining a running cluster (Scenario::join_host, docs/cluster-scale.md
// "A node joining a running cluster"): down until join_at, then up with no buckets.
#include "sim/cluster_sim.h"

namespace dt::sim {

// The load balancer's pick among the n_up hosts that run, as an index of all hosts.
size_t ClusterSim::skip_down(size_t idx, size_t n_up) const {
  if (n_up == s_.hosts || idx < static_cast<size_t>(s_.join_host)) return idx;
  return idx + 1;
}

// The cluster core's owner readiness (report_planner.h) in an ideal network (no tracker): from
// the peers host h has heard (nobody goes silent there); asked again only when that changed.
bool ClusterSim::owner_ready(size_t h) {
  Host &host = hosts_[h];
  if (host.heard_count != host.ready_count) {
    std::vector<std::string> up;
    for (size_t p = 0; p < hosts_.size(); p++)
      if (host.heard[p]) up.push_back(hosts_[p].node_id);
    host.owners = host.node->planner().owner_ready(std::move(up));
    host.ready_count = host.heard_count;
  }
  return host.owners;
}

bool ClusterSim::heard_from(size_t to, size_t from) {
  if (hosts_[to].heard[from]) return false;
  hosts_[to].heard[from] = 1;
  hosts_[to].heard_count++;
  return true;
}

}  // namespace dt::sim
