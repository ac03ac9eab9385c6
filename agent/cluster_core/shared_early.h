// shared_early.h - early reports of shared sources near their limit (docs/cluster-scale.md
// "Why the ratio moves with the seed"): at the early ticks between two reports, the hits
// of the sources this host knows to be shared whose bucket here is below half the burst go
// to every peer at once. That is where a late report costs: the cluster's debt for such a
// source is paid on every host at the same instant, and each host admits again until the
// others' reports land; a quarter-period lag instead of a period keeps that step short.
// Pure logic; the agent's Cluster (cluster_early.cpp) and the simulator use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "cluster_core/early_report.h"
#include "cluster_core/report_router.h"
#include "dthrottle/common.h"

namespace dt {

// At most this many shared sources are looked at a tick (bounded map lookups).
constexpr size_t kSharedEarlyMaxKeys = 4096;

// A bucket as the packet path keeps it, with the policy of its rule.
struct BucketView {
  dt_bucket bucket;
  dt_policy policy;
};
// Fills *out for k; false if k has no bucket here (or no policy to judge it by).
using BucketLookup = std::function<bool(const dt_key &k, BucketView *out)>;

// k's bucket has hits never reported and fewer than half the burst's tokens at now_ns.
bool shared_early_due(const BucketView &v, uint64_t now_ns);

// The shared sources (router.shared_keys, at most max_keys looked at) that are due.
std::vector<dt_key> select_shared_early(const ReportRouter &router, const BucketLookup &lookup, uint64_t now_ns,
                                        size_t max_keys = kSharedEarlyMaxKeys);
// Those due sources' hits, collected (early_report.h: CollectHits); sources with none left out.
std::vector<ReportEntry> collect_shared_early(const ReportRouter &router, const BucketLookup &lookup,
                                              const CollectHits &collect, uint64_t now_ns);

}  // namespace dt
