// query_strict.cpp - strict tags on the query socket (strict_redis.h): the strict queries
// of a batch decided by Redis in one pipelined round trip; those Redis cannot answer are
// denied or answered by the local bucket, as their rule's on_redis_error says.
#include <algorithm>

#include "query/query_loop.h"

namespace dt {

void QueryServer::Loop::answer_strict(uint64_t now) {
  collect_strict();
  if (strict_reqs.empty()) return;
  const uint64_t trips = redis->counters().round_trips;
  redis->decide(strict_reqs, now);
  c.strict_round_trips += redis->counters().round_trips - trips;
  uint64_t denied = 0;
  c.strict_decided += apply_strict(&denied);
  c.strict_denied += denied;
  if (!fallback.empty()) answer_fallback(now);
  uint64_t suppressed = 0;
  if ((denied || !fallback.empty()) && redis_log.allow(now, &suppressed))
    DT_WARN(
        "strict tags: redis did not answer (%s): %llu denied, %zu answered by the local bucket "
        "(%llu similar messages suppressed)",
        redis->last_error().c_str(), static_cast<unsigned long long>(denied), fallback.size(),
        static_cast<unsigned long long>(suppressed));
}

void QueryServer::Loop::collect_strict() {
  strict_idx.clear();
  strict_reqs.clear();
  for (size_t i = 0; i < queries.size(); i++) {
    const TagQuery &q = queries[i];
    if (!q.strict) continue;
    StrictRequest r;
    r.tag = q.tag;
    r.interval_us = std::max<uint64_t>(q.strict_interval_ns / 1000, 1);
    r.burst = q.strict_burst;
    r.max_wait_us = q.reserve ? cfg.max_reserve_wait_ns / 1000 : 0;
    strict_idx.push_back(i);
    strict_reqs.push_back(r);
  }
}

// Redis's answers into their queries; a failed one with on_redis_error local goes to
// `fallback`, the others are denied (already No) and counted in *denied.
uint64_t QueryServer::Loop::apply_strict(uint64_t *denied) {
  fallback.clear();
  uint64_t decided = 0;
  for (size_t k = 0; k < strict_reqs.size(); k++) {
    TagQuery &q = queries[strict_idx[k]];
    const StrictRequest &r = strict_reqs[k];
    q.wait_ns = 0;
    switch (r.result) {
      case StrictResult::Ok:
        q.answer = TagAnswer::Ok;
        decided++;
        break;
      case StrictResult::No:
        q.answer = TagAnswer::No;
        decided++;
        break;
      case StrictResult::Wait:
        q.answer = TagAnswer::Wait;
        q.wait_ns = r.wait_us * 1000;
        decided++;
        break;
      case StrictResult::Error:
        if (q.strict_fallback_local) fallback.push_back(q);
        else (*denied)++;  // already No
        break;
    }
  }
  return decided;
}

void QueryServer::Loop::answer_fallback(uint64_t now) {
  table.answer_batch(fallback, now, cfg.max_reserve_wait_ns, StrictMode::Local);
  size_t f = 0;
  for (size_t k = 0; k < strict_reqs.size(); k++)
    if (strict_reqs[k].result == StrictResult::Error && queries[strict_idx[k]].strict_fallback_local)
      queries[strict_idx[k]] = fallback[f++];
  c.strict_local += fallback.size();
}

}  // namespace dt
