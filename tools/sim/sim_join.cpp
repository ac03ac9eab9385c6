// sim_join.cpp - a host joining a running cluster (Scenario::join_host, docs/cluster-scale.md
// "A node joining a running cluster"): down until join_at, then up with no buckets.
#include "sim/cluster_sim.h"

namespace dt::sim {

// The load balancer's pick among the n_up hosts that run, as an index of all hosts.
size_t ClusterSim::skip_down(size_t idx, size_t n_up) const {
  if (n_up == s_.hosts || idx < static_cast<size_t>(s_.join_host)) return idx;
  return idx + 1;
}

// As Cluster::owner_ready: owners only once every member is up and heard; until then every
// source goes to every peer. The others hear the joiner at its first report; the joiner has
// heard every peer a period after it joined.
bool ClusterSim::owner_ready(size_t h) const {
  if (s_.scheme != Scheme::Owner || s_.join_host < 0) return true;
  const auto j = static_cast<size_t>(s_.join_host);
  if (h == j) return now_ >= s_.join_at + s_.period + s_.net.delay;
  return now_ > join_first_report_ + s_.net.delay;
}

// Host h routes as a mesh: everything to everyone, and so shared.
std::vector<ReportEntry> ClusterSim::route_mesh(size_t h, std::vector<ReportEntry> served) {
  for (const ReportEntry &e : served) hosts_[h].router.heard(e.key, now_);
  return served;
}

// Scenario::join_empty: in its first join_guard, the joiner charges a source it hears of
// from a peer a burst more, once: it starts empty there (its balance elsewhere is unknown:
// a report carries hits, not balances). A client only it serves is never charged.
uint64_t ClusterSim::join_debit(size_t to, const dt_key &k, bool fresh) {
  (void)fresh;
  if (!s_.join_empty || static_cast<int>(to) != s_.join_host) return 0;
  const Ns age = s_.report_max_age && s_.report_max_age != kNever ? s_.report_max_age : kReportMaxAgePeriods * s_.period;
  const Ns guard = s_.join_guard ? s_.join_guard : age;
  if (now_ < s_.join_at || now_ >= s_.join_at + guard) return 0;
  if (!hosts_[to].join_charged.emplace(k, true).second) return 0;
  return s_.burst;
}

}  // namespace dt::sim
