// early_report.cpp - which sources go out before the period ends (early_report.h).
#include "cluster_core/early_report.h"

#include <cstring>
#include <unordered_map>

namespace dt {

void EarlyReport::period_reported(const std::vector<ReportEntry> &served, uint64_t now_ns) {
  for (const ReportEntry &e : served) current_.insert(e.key);
  previous_.swap(current_);
  current_.clear();
  period_start_ns_ = now_ns;
}

uint64_t EarlyReport::next_tick(uint64_t tick_ns) const {
  if (!enabled()) return UINT64_MAX;
  const uint64_t next = tick_ns + opt_.delay_ns;
  // The last tick must leave a little of the period: a report right before the period's
  // own would only add a message.
  return next + opt_.delay_ns / 2 <= period_start_ns_ + opt_.period_ns ? next : UINT64_MAX;
}

std::vector<dt_key> EarlyReport::pick_new(const std::vector<dt_key> &candidates) {
  ticks_++;
  std::vector<dt_key> out;
  for (const dt_key &k : candidates) {
    if (out.size() >= opt_.max_per_tick) break;
    if (known(k)) continue;
    current_.insert(k);
    out.push_back(k);
  }
  picked_ += out.size();
  return out;
}

std::vector<dt_key> EarlyReport::due(const std::vector<dt_key> &candidates) {
  std::vector<dt_key> keys = pick_new(candidates);
  for (const auto &[k, hits] : held_) keys.push_back(k);
  return keys;
}

std::vector<ReportEntry> EarlyReport::tick(const std::vector<ReportEntry> &collected) {
  std::vector<ReportEntry> out;
  for (const ReportEntry &e : collected) {
    auto it = held_.find(e.key);
    const uint64_t hits = e.hits + (it == held_.end() ? 0 : it->second);
    if (hits >= opt_.min_hits) {
      out.push_back({e.key, hits});
      if (it != held_.end()) held_.erase(it);
    } else if (hits > 0) {
      held_[e.key] = hits;
    }
  }
  return out;
}

std::vector<ReportEntry> EarlyReport::collect_tick(const std::vector<dt_key> &candidates, const CollectHits &collect) {
  const std::vector<dt_key> keys = due(candidates);
  return tick(keys.empty() ? std::vector<ReportEntry>{} : collect(keys));
}

std::vector<ReportEntry> EarlyReport::take_held() {
  std::vector<ReportEntry> out;
  out.reserve(held_.size());
  for (const auto &[k, hits] : held_) out.push_back({k, hits});
  held_.clear();
  return out;
}

std::vector<ReportEntry> merge_entries(std::vector<ReportEntry> early, const std::vector<ReportEntry> &later) {
  if (early.empty()) return later;
  std::unordered_map<dt_key, size_t, KeyHash, KeyEq> at;
  for (size_t i = 0; i < early.size(); i++) at.emplace(early[i].key, i);
  for (const ReportEntry &e : later) {
    auto [it, fresh] = at.emplace(e.key, early.size());
    if (fresh) early.push_back(e);
    else early[it->second].hits += e.hits;
  }
  return early;
}

}  // namespace dt
