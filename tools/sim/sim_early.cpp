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

void ClusterSim::schedule_early(size_t h, Ns after) {
  const uint64_t t = hosts_[h].node->early().next_tick(after);
  hosts_[h].next_early = t == UINT64_MAX ? kNever : t;
  if (t != UINT64_MAX) early_.push({t, h});
}

// An early tick: the new sources' hits so far, collected
// (dt_collect: reported = passed) and routed as a period's report is; those with fewer
// than min_hits are held for the next tick, or the period's report (give_back_held).
void ClusterSim::handle_early(size_t h) {
  Host &host = hosts_[h];
  if (now_ != host.next_early) return;  // the period's report came first and started anew
  schedule_early(h, now_);
  std::vector<ReportEntry> entries = host.node->early().collect_tick(host.announced, [&](const std::vector<dt_key> &keys) {
    std::vector<ReportEntry> collected;
    for (const dt_key &k : keys) {
      Bucket &b = host.buckets[k];
      collected.push_back({k, b.passed - b.reported});
      b.reported = b.passed;
    }
    return collected;
  });
  host.announced.clear();
  if (entries.empty()) return;
  std::sort(entries.begin(), entries.end(), [](const ReportEntry &a, const ReportEntry &b) {
    return memcmp(a.key.addr, b.key.addr, sizeof a.key.addr) < 0;
  });
  host_stats_[h].early_entries += entries.size();
  host_stats_[h].hits_reported += hits_of(entries);
  publish_early(h, std::move(entries));
}

// Entries collected at an early tick, routed and sent by the cluster core (report_sender.h):
// to their owners now, shared ones (or all, without owners) to every peer.
void ClusterSim::publish_early(size_t h, std::vector<ReportEntry> entries) {
  Host &host = hosts_[h];
  ReportBody body;
  body.rules = rules_.names;
  body.entries = std::move(entries);
  const ReportHeader hdr = host.node->outbox().header(host.epoch, wall_ms(h));
  host_stats_[h].early_messages += host.node->sender().early(hdr, std::move(body), owner_ready(h), now_);
}

// At the period's end, hits collected early but held back are unreported again: the
// period's report takes them with the rest (the agent merges them: merge_entries).
void ClusterSim::give_back_held(size_t h) {
  Host &host = hosts_[h];
  for (const ReportEntry &e : host.node->early().take_held()) host.buckets[e.key].reported -= e.hits;
}

}  // namespace dt::sim
