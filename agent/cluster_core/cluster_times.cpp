// cluster_times.cpp - a cluster node's timings from its settings (see cluster_times.h).
#include "cluster_core/cluster_times.h"

#include <algorithm>

#include "cluster_core/peer_tracker.h"

namespace dt {

uint64_t report_max_age_ns(uint64_t configured_ns, uint64_t period_ns) {
  if (configured_ns == kReportMaxAgeOff) return 0;
  return configured_ns ? configured_ns : kReportMaxAgePeriods * period_ns;
}

uint64_t heartbeat_ns(const ClusterTimes &t) {
  if (!t.down_after_ns)
    return t.link_liveness ? std::max(t.period_ns, kLinkHeartbeatNs) : kHeartbeatPeriods * t.period_ns;
  const uint64_t half = t.down_after_ns > t.period_ns ? (t.down_after_ns - t.period_ns) / 2 : 0;
  return std::max(t.period_ns, half);
}

CadenceOptions cadence_options(const ClusterTimes &t) {
  CadenceOptions o{t.period_ns, heartbeat_ns(t), kMaxBatchEntries, 0};
  if (t.report_max_age_ns) o.tail_ns = std::max(t.period_ns, t.report_max_age_ns / 2);
  if (t.link_liveness && !t.down_after_ns) {
    o.batch_wait_ns = std::max(t.period_ns, kLinkBatchWaitNs);
    o.batch_quiet_ns = std::max(t.period_ns, kLinkBatchQuietNs);
  }
  return o;
}

uint64_t peer_down_after_ns(const ClusterTimes &t) {
  return t.down_after_ns ? t.down_after_ns : 2 * heartbeat_ns(t) + t.period_ns;
}

uint64_t backlog_slack_ns(const ClusterTimes &t) {
  return t.link_liveness && !t.down_after_ns ? (2 * kHeartbeatPeriods + 1) * t.period_ns / 10 : 0;
}

uint64_t aggregate_down_after_ns(const ClusterTimes &t) { return t.down_after_ns ? t.down_after_ns : 5 * t.period_ns; }

}  // namespace dt
