// shared_early.cpp - which shared sources go out early (shared_early.h).
#include "cluster_core/shared_early.h"

#include "dthrottle/bucket.h"

namespace dt {

bool shared_early_due(const BucketView &v, uint64_t now_ns) {
  if (v.bucket.passed == v.bucket.reported || v.policy.interval_ns == 0) return false;
  // A full bucket's tokens: the state that admits a whole burst at now_ns (tat 0).
  const int64_t full_milli = dt_gcra_tokens_milli(0, now_ns, &v.policy);
  return dt_gcra_tokens_milli(v.bucket.tat_ns, now_ns, &v.policy) * 2 < full_milli;
}

std::vector<dt_key> select_shared_early(const ReportRouter &router, const BucketLookup &lookup, uint64_t now_ns,
                                        size_t max_keys) {
  std::vector<dt_key> due;
  for (const dt_key &k : router.shared_keys(now_ns, max_keys)) {
    BucketView v{};
    if (lookup(k, &v) && shared_early_due(v, now_ns)) due.push_back(k);
  }
  return due;
}

std::vector<ReportEntry> collect_shared_early(const ReportRouter &router, const BucketLookup &lookup,
                                              const CollectHits &collect, uint64_t now_ns) {
  const std::vector<dt_key> keys = select_shared_early(router, lookup, now_ns);
  if (keys.empty()) return {};
  std::vector<ReportEntry> collected = collect(keys);
  std::erase_if(collected, [](const ReportEntry &e) { return e.hits == 0; });
  return collected;
}

}  // namespace dt
