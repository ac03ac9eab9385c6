// adaptive.cpp - the adaptive-limit controller and the set of adaptive rules.
#include "adaptive/adaptive.h"

#include <algorithm>
#include <cmath>

#include "dataplane/policy.h"
#include "dthrottle/bucket.h"

namespace dt {

bool validate_adaptive_params(const AdaptiveParams &p, std::string *err) {
  if (!(p.decrease > 0 && p.decrease < 1)) {
    *err = "decrease must be between 0 and 1 (exclusive), e.g. 0.5 halves the limit on a busy signal";
    return false;
  }
  if (!(p.recovery > 1 && p.recovery <= 100)) {
    *err = "recovery must be above 1 and at most 100 (the factor's growth per second), e.g. 3";
    return false;
  }
  if (!(p.floor >= 0.001 && p.floor <= 1)) {
    *err = "floor must be between 0.001 and 1 (the lowest fraction of the rate), e.g. 0.01";
    return false;
  }
  if (!(p.recovery_add >= 0)) {
    *err = "recovery_add must not be negative";
    return false;
  }
  return true;
}

void AdaptiveLimit::observe(uint64_t now_ns, uint64_t hits, uint64_t span_ns) {
  if (span_ns == 0) return;
  samples_.push_back({now_ns, hits, span_ns});
  // Keep the last second's samples, and always the newest one.
  while (samples_.size() > 1 && now_ns - samples_.front().at_ns >= 1'000'000'000ull) samples_.pop_front();
}

double AdaptiveLimit::observed(uint64_t now_ns) const {
  // The mean over the last second, not the peak period: peers' reports do not line
  // up with our periods, so one period may hold two of a peer's and the next none.
  uint64_t hits = 0, span = 0;
  for (const Sample &s : samples_)
    if (now_ns - s.at_ns < 1'000'000'000ull) hits += s.hits, span += s.span_ns;
  // Periods of a second or more: the latest period is the best measure there is.
  if (span == 0 && !samples_.empty()) hits = samples_.back().hits, span = samples_.back().span_ns;
  return span ? static_cast<double>(hits) * 1e9 / static_cast<double>(span) : 0.0;
}

bool AdaptiveLimit::busy(uint64_t now_ns) {
  busy_signals_++;
  busy_seen_ = true;
  last_busy_ns_ = now_ns;
  // Nothing measured yet (the agent just started): lower the limit itself, once,
  // without starting the hold, so that the first measured signal can set it properly.
  const bool measured = !samples_.empty();
  if (!measured) {
    if (unmeasured_decrease_) return false;
    unmeasured_decrease_ = true;
  } else {
    if (decreased_ && now_ns - last_decrease_ns_ < p_.hold_ns) return false;
    decreased_ = true;
    last_decrease_ns_ = now_ns;
  }
  // The rate admitted in the last second, but never more than the limit (a burst
  // can exceed it for a moment; halving that would not halve the limit).
  const double admitted = measured ? std::min(observed(now_ns), limit()) : limit();
  const double next = std::max(p_.floor, p_.decrease * admitted / rate_);
  if (next >= factor_) return false;
  factor_ = next;
  decreases_++;
  return true;
}

bool AdaptiveLimit::tick(uint64_t now_ns) {
  // Recovery runs over time that is at least `hold` after the last busy signal.
  uint64_t from = std::max(last_tick_ns_, busy_seen_ ? last_busy_ns_ + p_.hold_ns : 0);
  last_tick_ns_ = std::max(last_tick_ns_, now_ns);
  if (factor_ >= 1.0 || now_ns <= from) return false;
  const double seconds = static_cast<double>(now_ns - from) / 1e9;
  const double before = factor_;
  if (p_.recovery_add > 0) factor_ += p_.recovery_add * seconds / rate_;
  else factor_ *= std::pow(p_.recovery, seconds);
  factor_ = std::min(1.0, factor_);
  return factor_ != before;
}

dt_policy adaptive_policy(const dt_policy &base, double f) {
  if (base.action != DT_ACT_THROTTLE || base.interval_ns == 0 || !(f < 1.0)) return base;
  dt_policy p = base;
  // interval / f, bounded so that no bucket arithmetic can overflow (bucket.h).
  constexpr double kMaxInterval = 1e15;
  const double interval = std::min(kMaxInterval, std::ceil(static_cast<double>(base.interval_ns) / f));
  p.interval_ns = static_cast<uint64_t>(interval);
  p.burst_ns = std::max(base.burst_ns, p.interval_ns);  // at least one token
  return p;
}

const char *adaptive_kind_name(AdaptiveKind k) { return k == AdaptiveKind::Packet ? "rule" : "tag rule"; }

void AdaptiveSet::configure(const std::vector<AdaptiveRuleSpec> &specs, uint64_t peer_hold_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Rule> next;
  next.reserve(specs.size());
  for (const auto &s : specs) {
    Rule *old = find_locked(s.kind, s.name);
    if (old) {
      next.push_back(std::move(*old));
      next.back().spec = s;
      next.back().limit.set_rate(s.rate, s.params);
    } else {
      next.push_back(Rule{s, AdaptiveLimit(s.rate, s.params), 1.0, {}, {}, {}, {}});
    }
    if (!s.params.cluster) next.back().peers.clear();
  }
  rules_ = std::move(next);
  packet_by_index_.clear();
  tag_by_index_.clear();
  for (size_t i = 0; i < rules_.size(); i++) {
    auto &by = rules_[i].spec.kind == AdaptiveKind::Packet ? packet_by_index_ : tag_by_index_;
    const uint32_t idx = rules_[i].spec.index;
    if (by.size() <= idx) by.resize(idx + 1, -1);
    by[idx] = static_cast<int>(i);
  }
  peer_hold_ns_ = peer_hold_ns;
}

bool AdaptiveSet::empty() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rules_.empty();
}

AdaptiveSet::Rule *AdaptiveSet::find_locked(AdaptiveKind kind, std::string_view name) {
  for (auto &r : rules_)
    if (r.spec.kind == kind && r.spec.name == name) return &r;
  return nullptr;
}

void AdaptiveSet::log_change_locked(Rule &r, double before, const char *why, uint64_t now_ns) {
  uint64_t suppressed = 0;
  if (!log_.allow(now_ns, &suppressed)) return;
  const double rate = r.spec.rate;
  DT_INFO("adaptive %s '%s': %s: limit %.6g/s -> %.6g/s (factor %.4f -> %.4f)%s%s", adaptive_kind_name(r.spec.kind),
          r.spec.name.c_str(), why, rate * before, rate * r.applied, before, r.applied,
          suppressed ? "; earlier adaptive changes not logged: " : "",
          suppressed ? std::to_string(suppressed).c_str() : "");
}

bool AdaptiveSet::busy(AdaptiveKind kind, std::string_view name, const char *source, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  Rule *r = find_locked(kind, name);
  if (!r) return false;
  const double observed = r->limit.observed(now_ns);
  if (r->limit.busy(now_ns)) {
    uint64_t suppressed = 0;
    if (log_.allow(now_ns, &suppressed))
      DT_INFO("adaptive %s '%s': busy signal (%s): own limit -> %.6g/s (factor %.4f; busiest key admitted %.6g/s)",
              adaptive_kind_name(kind), r->spec.name.c_str(), source, r->limit.limit(), r->limit.factor(), observed);
  }
  return true;
}

void AdaptiveSet::add_packet_hits(std::span<const ReportEntry> entries, std::span<const int64_t> local_rule) {
  std::lock_guard<std::mutex> lock(mu_);
  if (packet_by_index_.empty()) return;
  for (const ReportEntry &e : entries) {
    int64_t id = dt_key_is_prefix(e.key.rule) ? -1 : e.key.rule & ~DT_KEY_DEST;  // a destination's: its rule's
    if (!local_rule.empty()) id = e.key.rule < local_rule.size() ? local_rule[e.key.rule] : -1;
    if (id < 0 || static_cast<size_t>(id) >= packet_by_index_.size() || packet_by_index_[id] < 0) continue;
    dt_key k = e.key;
    k.rule = static_cast<uint32_t>(id);
    rules_[packet_by_index_[id]].packet_hits[k] += e.hits;
  }
}

void AdaptiveSet::add_tag_hits(uint32_t tag_rule_index, std::string_view tag, uint64_t hits) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tag_rule_index >= tag_by_index_.size() || tag_by_index_[tag_rule_index] < 0) return;
  rules_[tag_by_index_[tag_rule_index]].tag_hits[std::string(tag)] += hits;
}

void AdaptiveSet::on_peer_factors(const std::string &node_id, const std::vector<RuleFactor> &factors, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const RuleFactor &f : factors) {
    Rule *r = find_locked(f.tag ? AdaptiveKind::Tag : AdaptiveKind::Packet, f.name);
    if (!r || !r->spec.params.cluster || f.factor_ppm == 0 || f.factor_ppm > 1'000'000) continue;
    // Our floor holds whatever a peer says (its floor may differ, or its report lie).
    r->peers[node_id] = {std::max(r->spec.params.floor, f.factor_ppm / 1e6), now_ns};
  }
}

bool AdaptiveSet::on_period(uint64_t now_ns, uint64_t span_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  bool changed = false;
  for (Rule &r : rules_) {
    uint64_t peak = 0;
    for (const auto &[k, h] : r.packet_hits) peak = std::max(peak, h);
    for (const auto &[k, h] : r.tag_hits) peak = std::max(peak, h);
    r.packet_hits.clear();
    r.tag_hits.clear();
    r.limit.observe(now_ns, peak, span_ns);
    r.limit.tick(now_ns);

    double applied = r.limit.factor();
    std::string from;
    for (auto it = r.peers.begin(); it != r.peers.end();) {
      if (now_ns - it->second.second > peer_hold_ns_) {
        it = r.peers.erase(it);
        continue;
      }
      if (it->second.first < applied) applied = it->second.first, from = it->first;
      ++it;
    }
    const double before = r.applied;
    if (applied == before) continue;
    r.applied = applied;
    r.applied_from = from;
    changed = true;
    // Log decreases, and recovery only where it ends: a recovering rule changes every
    // period, which would flood the log.
    if (applied < before)
      log_change_locked(r, before, from.empty() ? "busy" : ("peer " + from + " is backing off").c_str(), now_ns);
    else if (applied >= 1.0) log_change_locked(r, before, "recovered", now_ns);
  }
  return changed;
}

std::vector<double> AdaptiveSet::factors(AdaptiveKind kind, size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<double> out(n, 1.0);
  for (const Rule &r : rules_)
    if (r.spec.kind == kind && r.spec.index < n) out[r.spec.index] = r.applied;
  return out;
}

std::vector<RuleFactor> AdaptiveSet::report_factors() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RuleFactor> out;
  for (const Rule &r : rules_) {
    if (!r.spec.params.cluster) continue;
    RuleFactor f;
    f.tag = r.spec.kind == AdaptiveKind::Tag;
    f.name = r.spec.name;
    f.factor_ppm = static_cast<uint32_t>(std::clamp(std::llround(r.limit.factor() * 1e6), 1ll, 1'000'000ll));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<AdaptiveStatus> AdaptiveSet::status(uint64_t now_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<AdaptiveStatus> out;
  for (const Rule &r : rules_)
    out.push_back({r.spec.kind, r.spec.name, r.spec.index, r.spec.rate, r.limit.factor(), r.applied, r.applied_from,
                   r.limit.observed(now_ns), r.limit.busy_signals(), r.limit.decreases(), r.spec.params.cluster});
  return out;
}

}  // namespace dt
