// cluster_status.h - the cluster status files `agent stats` reads (.cluster.json and
// .cluster.txt): the counters of cluster_counters.h, the rejections by reason, the peers.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "cluster/cluster_counters.h"
#include "cluster_core/peer_tracker.h"

namespace dt {

// Who writes the cluster status file, and when.
struct ClusterStatusHead {
  std::string node_id;
  uint64_t written_unix_ms = 0;  // wall clock
  uint64_t now_ns = 0;           // monotonic, the clock of the peers' last_heard_ns
  uint32_t epoch = 0;
  uint64_t period_ns = 0;
  std::string security = "keys";  // "keys" (--curve-key) or "insecure" (--insecure-cluster)
};

// The cluster status file (Cluster::status_json): one line of JSON, every string escaped.
std::string cluster_status_json(const ClusterStatusHead &head, const ClusterCounters &c,
                                const std::map<std::string, PeerState> &peers);

// The same as aligned human-readable lines (Cluster::status_text): the counters by line
// of the table, the rejections by reason, then a table of the peers.
std::string cluster_status_text(const ClusterStatusHead &head, const ClusterCounters &c,
                                const std::map<std::string, PeerState> &peers);

}  // namespace dt
