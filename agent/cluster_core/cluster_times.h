// cluster_times.h - a cluster node's timings from its few settings (the cluster core: no I/O).
// How often every peer hears from it (the heartbeat), when a silent peer is down, the
// cadence's tail and owner batches, the tracker's backlog slack, a silent hub's failover.
// The agent's ClusterConfig (cluster/cluster.h) and the simulator's Scenario (tools/sim) both
// come down to these settings; docs/cluster-scale.md "Cadence" explains the numbers.
#pragma once

#include <cstdint>

#include "cluster_core/report_cadence.h"

namespace dt {

constexpr uint64_t kReportMaxAgeOff = UINT64_MAX;  // a configured report max age: any age

// The report max age in force for a configured one: 0 is the default, kReportMaxAgePeriods
// periods; kReportMaxAgeOff is none (0: any age).
uint64_t report_max_age_ns(uint64_t configured_ns, uint64_t period_ns);

struct ClusterTimes {
  uint64_t period_ns = 200'000'000;
  uint64_t down_after_ns = 0;      // --down-after; 0: two heartbeats and a period
  uint64_t report_max_age_ns = 0;  // in force; 0: any age
  // Liveness from the link (keys in a full mesh): peers down when their link drops, a signed
  // heartbeat every kLinkHeartbeatNs, one-hit sources waiting for their owner's batch.
  bool link_liveness = false;
};

// kHeartbeatPeriods periods (kLinkHeartbeatNs with link liveness), or with a down_after D
// (D - period) / 2, never less than a period: a longer down_after makes a quiet cluster quieter.
uint64_t heartbeat_ns(const ClusterTimes &t);
// That heartbeat, the next message to everyone within half the report max age after one
// with hits, and with link liveness (no down_after) one-hit sources waiting for their owner
// up to kLinkBatchWaitNs, until its batch is quiet for kLinkBatchQuietNs.
CadenceOptions cadence_options(const ClusterTimes &t);
// A peer silent this long is down: down_after, or two heartbeats and a period.
uint64_t peer_down_after_ns(const ClusterTimes &t);
// How much earlier than its return a message may have been sent and not be a partition's
// backlog (TrackerOptions::backlog_slack_ns): with link liveness and no down_after that of
// the default heartbeat, else 0 (the tracker's down_after / 10).
uint64_t backlog_slack_ns(const ClusterTimes &t);
// How long a summing hub may be silent before its aggregates are taken from the other hub.
uint64_t aggregate_down_after_ns(const ClusterTimes &t);

}  // namespace dt
