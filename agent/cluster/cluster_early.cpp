// cluster_early.cpp - early reports (cluster_core/early_report.h, docs/cluster-scale.md "First
// contact"): at ticks within a period, the sources the kernel announced since the last tick
// that this host has not reported lately, with their hits so far, to their owner (or to
// every peer), as the period's report would send them; and, in the owner scheme, the hits
// of shared sources whose bucket here is below half the burst, to every peer
// (cluster_core/shared_early.h).
#include <bpf/bpf.h>

#include <cstring>
#include <map>

#include "cluster/cluster.h"
#include "cluster_core/shared_early.h"
#include "dataplane/dataplane.h"
#include "dataplane/policy.h"

namespace dt {

void Cluster::on_early_tick(uint64_t now_ns) {
  int err = 0;
  EarlySources src;
  src.fresh = collector_.take_fresh(&err);
  src.collect = [&](const std::vector<dt_key> &keys) { return collector_.collect(keys, &err); };
  src.lookup = shared_lookup();
  src.failed = [&err] { return err != 0; };
  size_t shared = 0;
  std::vector<ReportEntry> entries = node_.early_tick(src, now_ns, &shared);  // cluster_core/cluster_node.h
  counters_.shared_early_entries += shared;
  if (err != 0) {
    counters_.collect_errors++;
    uint64_t suppressed = 0;
    if (reject_log_.allow(now_ns, &suppressed)) DT_WARN("collecting sources' hits early failed: %s", strerror(-err));
  }
  if (log_level() == LogLevel::Debug)  // first contact, traced (docs/cluster-scale.md "First contact")
    DT_DEBUG("early tick: %zu announced, %zu to send (%llu hits)", src.fresh.size(), entries.size(),
             static_cast<unsigned long long>(hits_of(entries)));
  if (entries.empty()) return;
  counters_.early_ticks++;
  counters_.early_entries_sent += entries.size();
  // To their owners now; shared ones to everyone.
  node_.send_early(message_header(collector_.epoch() - 1), std::move(entries), now_ns);
  note_sent();
}

// Source and destination buckets (key_by, judged by their rule's policy); a prefix bucket's
// budget is the rule's prefix policy, reported at the period's end.
BucketLookup Cluster::shared_lookup() {
  auto policies = std::make_shared<std::map<uint32_t, dt_policy>>();  // per rule, read once a tick
  return [this, policies](const dt_key &k, BucketView *v) {
    if (k.rule & DT_KEY_PREFIX) return false;
    if (bpf_map_lookup_elem(dp_.buckets_fd(), &k, &v->bucket) != 0) return false;
    const uint32_t rule = k.rule & DT_KEY_RULE_MASK;  // a destination bucket's too (DT_KEY_DEST)
    auto [it, fresh] = policies->try_emplace(rule);
    if (fresh && read_live_policy(dp_.policy_fd(), dp_.config_fd(), rule, &it->second) != 0) it->second = {};
    v->policy = it->second;
    return v->policy.action == DT_ACT_THROTTLE;
  };
}

}  // namespace dt
