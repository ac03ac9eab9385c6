// attack_watch.cpp - a rule's drops over a threshold and back (attack_watch.h).
#include "events/attack_watch.h"

#include <algorithm>

#include "common/address.h"
#include "common/clock.h"

namespace dt {

uint64_t AttackDetector::threshold(const std::string &rule) const {
  auto it = cfg_.per_rule.find(rule);
  return it != cfg_.per_rule.end() ? it->second : cfg_.drops_per_s;
}

const AttackDetector::State *AttackDetector::state(uint32_t id) const {
  auto it = rules_.find(id);
  return it == rules_.end() ? nullptr : &it->second;
}

AttackChange AttackDetector::update(uint32_t id, const std::string &name, uint64_t dropped, uint64_t now_ns) {
  auto [it, fresh] = rules_.try_emplace(id);
  State &s = it->second;
  const uint64_t prev = s.last_dropped, prev_ns = s.last_ns;
  s.last_dropped = dropped, s.last_ns = now_ns;
  if (fresh || dropped < prev || now_ns <= prev_ns) return AttackChange::None;  // first reading, or a counter reset
  s.rate = static_cast<double>(dropped - prev) * 1e9 / static_cast<double>(now_ns - prev_ns);
  const uint64_t limit = threshold(name);
  if (!s.active) {
    if (limit == 0 || s.rate < static_cast<double>(limit)) return AttackChange::None;
    s.active = true, s.started_ns = now_ns, s.started_dropped = prev, s.quiet_since_ns = 0, s.peak = s.rate;
    return AttackChange::Started;
  }
  s.peak = std::max(s.peak, s.rate);
  if (limit != 0 && s.rate >= static_cast<double>(limit) / 2) {
    s.quiet_since_ns = 0;
    return AttackChange::None;
  }
  if (!s.quiet_since_ns) s.quiet_since_ns = prev_ns;
  if (now_ns - s.quiet_since_ns < cfg_.quiet_ns) return AttackChange::None;
  s.active = false;
  return AttackChange::Ended;
}

std::vector<TopSource> top_dropping_sources(const MapFds &m, uint32_t rule_id, size_t n, bool dry_run) {
  std::vector<TopSource> top;
  auto worse = [](const TopSource &a, const TopSource &b) { return a.dropped > b.dropped; };  // a min-heap
  for_each_bucket(m.buckets, m.drop_pending, [&](const dt_key &k, const dt_bucket &b) {
    const uint64_t d = dry_run ? b.would_drop : b.dropped;
    if (k.rule != rule_id || d == 0) return;
    if (top.size() == n && d <= top.front().dropped) return;
    if (top.size() == n) std::pop_heap(top.begin(), top.end(), worse), top.pop_back();
    top.push_back({key_to_string(k), d});
    std::push_heap(top.begin(), top.end(), worse);
  });
  std::sort_heap(top.begin(), top.end(), worse);
  return top;
}

void AttackWatch::poll(const MapFds &m, uint64_t now_ns) {
  const RuleCounterTable t = read_rule_table(m);
  std::vector<RuleCounters> rules = t.named;
  if (t.named.empty() || t.named.front().id != 0) rules.insert(rules.begin(), t.rule0);
  for (RuleCounters &r : rules) {
    if (r.name.empty()) r.name = "default";
    const bool dry_run = r.dropped == 0 && r.would_drop > 0;
    const AttackChange ch = detector_.update(r.id, r.name, r.dropped + r.would_drop, now_ns);
    if (ch != AttackChange::None) tell(m, r, dry_run, ch, now_ns);
  }
}

void AttackWatch::tell(const MapFds &m, const RuleCounters &r, bool dry_run, AttackChange ch, uint64_t now_ns) {
  const AttackDetector::State &s = *detector_.state(r.id);
  Json top = Json::array();
  for (const TopSource &t : top_dropping_sources(m, r.id, kAttackTopSources, dry_run))
    top.push_back({{"source", t.source}, {"dropped", t.dropped}});
  Json f = {{"rule", r.name},
            {"threshold", detector_.threshold(r.name)},
            {"drops_per_s", static_cast<uint64_t>(s.rate)},
            {"dry_run", dry_run}};
  if (ch == AttackChange::Ended) {
    f["duration_s"] = (now_ns - s.started_ns) / 1'000'000'000ull;
    f["dropped"] = s.last_dropped - s.started_dropped;
    f["peak_drops_per_s"] = static_cast<uint64_t>(s.peak);
  }
  f["top"] = top;
  bus_.emit(ch == AttackChange::Started ? kEventAttackStarted : kEventAttackEnded, f, unix_now_ms());
}

}  // namespace dt
