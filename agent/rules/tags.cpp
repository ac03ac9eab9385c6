// tags.cpp - prefix rules and one GCRA bucket per tag (see tags.h for the model).
#include "rules/tags.h"

#include <algorithm>
#include <cstring>

#include "common/parse_values.h"
#include "dataplane/policy.h"
#include "dthrottle/bucket.h"

namespace dt {
namespace {

// How many buckets from the least-recently-used end make_room looks at for a full one.
constexpr int kEvictScan = 16;

bool same_policy(const dt_policy &a, const dt_policy &b) {
  return a.interval_ns == b.interval_ns && a.burst_ns == b.burst_ns;
}

// The TAT that gives a bucket under `to` the balance (in tokens) it has at `now` under
// `from`, capped at the new burst. A full bucket (tat <= now) stays full.
uint64_t rebase_tat(uint64_t tat, uint64_t now, const dt_policy &from, const dt_policy &to) {
  if (tat <= now || same_policy(from, to)) return tat;
  // The balance as time under `from` (negative in debt), then as time under `to`.
  const __int128 balance = static_cast<__int128>(now) + from.burst_ns - tat;
  const __int128 scaled = balance * to.interval_ns / from.interval_ns;
  if (scaled >= static_cast<__int128>(to.burst_ns)) return now;
  const __int128 next = static_cast<__int128>(now) + to.burst_ns - scaled;
  const __int128 limit = static_cast<__int128>(now) + DT_TAT_HORIZON_NS;
  return static_cast<uint64_t>(std::min(next, limit));
}

}  // namespace

bool parse_tag_rule(const std::string &spec_in, TagRule *out, std::string *err) {
  std::string spec = spec_in;
  bool strict = false, fallback_local = false;
  for (const std::string_view suffix : {"!strict", "!strict-local"}) {
    if (spec.ends_with(suffix)) {
      strict = true;
      fallback_local = suffix == "!strict-local";
      spec.resize(spec.size() - suffix.size());
    }
  }
  const size_t eq = spec.rfind('=');
  const size_t slash = spec.rfind('/');
  if (eq == std::string::npos || slash == std::string::npos || slash < eq) {
    *err = "tag rule '" + spec_in + "' is not PREFIX=RATE/BURST[!strict|!strict-local] (e.g. 'api:=100/20', '=10/10')";
    return false;
  }
  TagRule r;
  r.prefix = spec.substr(0, eq);
  if (r.prefix.size() > kMaxTagLen) {
    *err = "tag rule prefix is longer than " + std::to_string(kMaxTagLen) + " bytes";
    return false;
  }
  std::string why;
  if (!parse_rate(spec.substr(eq + 1, slash - eq - 1), &r.rate, &why) ||
      !parse_count(spec.substr(slash + 1), 1, DT_BURST_MAX, &r.burst, &why)) {
    *err = "tag rule '" + spec + "': " + why;
    return false;
  }
  dt_policy p{};
  if (!make_policy(r.rate, r.burst, &p, &why)) {
    *err = "tag rule '" + spec + "': " + why;
    return false;
  }
  r.strict = strict;
  r.strict_fallback_local = fallback_local;
  *out = std::move(r);
  return true;
}

TagTable::TagTable(const Options &opt) : opt_(opt) {}

bool TagTable::replace_rules(const std::vector<TagRule> &rules, std::string *err) {
  CompiledRules c;
  c.rules = rules;
  for (size_t i = 0; i < rules.size(); i++) {
    const TagRule &r = rules[i];
    dt_policy p{};
    std::string why;
    if (r.prefix.size() > kMaxTagLen) why = "prefix longer than " + std::to_string(kMaxTagLen) + " bytes";
    else if (!make_policy(r.rate, r.burst, &p, &why)) {
    } else if (!c.by_prefix.emplace(r.prefix, static_cast<uint32_t>(i)).second) why = "duplicate prefix";
    if (!why.empty()) {
      *err = "tag rule " + std::to_string(i + 1) + " (prefix '" + r.prefix + "'): " + why;
      return false;
    }
    c.policies.push_back(p);
    c.base_policies.push_back(p);
    c.lengths.push_back(r.prefix.size());
    c.any_strict |= r.strict;
  }
  std::sort(c.lengths.begin(), c.lengths.end(), std::greater<>());
  c.lengths.erase(std::unique(c.lengths.begin(), c.lengths.end()), c.lengths.end());

  std::lock_guard<std::mutex> lock(mu_);
  rules_ = std::move(c);
  // Buckets re-resolve lazily: a reload costs nothing per bucket up front.
  if (++rules_gen_ == 0) rules_gen_ = 1;
  return true;
}

std::vector<TagRule> TagTable::rules() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rules_.rules;
}

std::optional<uint32_t> TagTable::rule_of(std::string_view tag) const {
  std::lock_guard<std::mutex> lock(mu_);
  return match_index_locked(tag);
}

std::optional<std::string> TagTable::rule_prefix_of(std::string_view tag) const {
  std::lock_guard<std::mutex> lock(mu_);
  const std::optional<uint32_t> i = match_index_locked(tag);
  if (!i) return std::nullopt;
  return rules_.rules[*i].prefix;
}

void TagTable::set_factors(const std::vector<double> &factors) {
  std::lock_guard<std::mutex> lock(mu_);
  bool changed = false;
  for (size_t i = 0; i < rules_.policies.size(); i++) {
    const dt_policy p = adaptive_policy(rules_.base_policies[i], i < factors.size() ? factors[i] : 1.0);
    if (memcmp(&p, &rules_.policies[i], sizeof p) == 0) continue;
    rules_.policies[i] = p;
    changed = true;
  }
  if (changed && ++rules_gen_ == 0) rules_gen_ = 1;
}

std::optional<uint32_t> TagTable::match_index_locked(std::string_view tag) const {
  for (size_t len : rules_.lengths) {
    if (len > tag.size()) continue;
    auto it = rules_.by_prefix.find(tag.substr(0, len));
    if (it != rules_.by_prefix.end()) return it->second;
  }
  return std::nullopt;
}

const dt_policy *TagTable::match_locked(std::string_view tag) const {
  const std::optional<uint32_t> i = match_index_locked(tag);
  return i ? &rules_.policies[*i] : nullptr;
}

// The tag's bucket if it has one, brought up to date with the current rule set.
TagTable::Node *TagTable::find_locked(std::string_view tag, uint64_t now_ns) {
  auto it = map_.find(tag);
  if (it == map_.end()) return nullptr;
  Node *n = &*it;
  Bucket &b = n->second;
  if (b.rules_gen != rules_gen_) {
    const dt_policy *p = match_locked(tag);
    if (!p) {
      c_.dropped_unruled++;
      drop_locked(n);
      return nullptr;
    }
    b.tat = rebase_tat(b.tat, now_ns, b.policy, *p);
    b.policy = *p;
    b.rules_gen = rules_gen_;
  }
  return n;
}

// A new, full bucket for `tag` under `pol`, making room first if the table is full.
TagTable::Node *TagTable::get_locked(std::string_view tag, const dt_policy &pol, uint64_t now_ns) {
  if (opt_.max_buckets > 0 && map_.size() >= opt_.max_buckets) make_room_locked(now_ns);
  Node *n = &*map_.emplace(std::string(tag), Bucket{}).first;
  Bucket &b = n->second;
  b.policy = pol;
  b.rules_gen = rules_gen_;
  b.serial = next_serial_++;
  c_.created++;
  touch_locked(n);
  return n;
}

void TagTable::make_room_locked(uint64_t now_ns) {
  Node *full_clean = nullptr, *full = nullptr, *unpinned = nullptr;
  int scanned = 0;
  for (Node *n = lru_tail_; n && scanned < kEvictScan && !full_clean; n = n->second.lru_prev, scanned++) {
    const Bucket &b = n->second;
    const bool is_full = b.tat <= now_ns;
    if (is_full && b.hits == 0) full_clean = n;
    else if (is_full && !full) full = n;
    else if (b.reservations == 0 && !unpinned) unpinned = n;
  }
  Node *victim = full_clean ? full_clean : full ? full : unpinned ? unpinned : lru_tail_;
  if (!victim) return;
  if (victim->second.tat <= now_ns) c_.evicted_full++;
  else c_.evicted_active++;
  drop_locked(victim);
}

void TagTable::drop_locked(Node *n) {
  Bucket &b = n->second;
  if (b.dirty != kClean) {
    Node *last = dirty_.back();
    dirty_[b.dirty] = last;
    last->second.dirty = b.dirty;
    dirty_.pop_back();
    if (orphans_.size() < opt_.max_orphan_tags) orphans_.push_back({n->first, b.hits});
    else c_.lost_hits += b.hits;
  }
  lru_unlink_locked(n);
  map_.erase(map_.find(std::string_view(n->first)));
}

void TagTable::lru_unlink_locked(Node *n) {
  Bucket &b = n->second;
  if (b.lru_prev) b.lru_prev->second.lru_next = b.lru_next;
  else if (lru_head_ == n) lru_head_ = b.lru_next;
  if (b.lru_next) b.lru_next->second.lru_prev = b.lru_prev;
  else if (lru_tail_ == n) lru_tail_ = b.lru_prev;
  b.lru_prev = b.lru_next = nullptr;
}

void TagTable::touch_locked(Node *n) {
  if (lru_head_ == n) return;
  lru_unlink_locked(n);
  n->second.lru_next = lru_head_;
  if (lru_head_) lru_head_->second.lru_prev = n;
  lru_head_ = n;
  if (!lru_tail_) lru_tail_ = n;
}

void TagTable::add_hit_locked(Node *n) {
  Bucket &b = n->second;
  if (b.dirty == kClean) {
    b.dirty = static_cast<uint32_t>(dirty_.size());
    dirty_.push_back(n);
  }
  b.hits++;
}

// Reservations whose time has come are no longer outstanding.
void TagTable::expire_locked(uint64_t now_ns) {
  while (!due_.empty() && due_.top().due_ns <= now_ns) {
    const Reservation &r = due_.top();
    auto it = map_.find(std::string_view(r.tag));
    if (it != map_.end() && it->second.serial == r.serial && it->second.reservations > 0) it->second.reservations--;
    c_.outstanding--;
    due_.pop();
  }
}

TagTable::Node *TagTable::bucket_locked(std::string_view tag, uint64_t now_ns) {
  Node *n = find_locked(tag, now_ns);
  if (!n) {
    const dt_policy *p = match_locked(tag);
    if (!p) {
      c_.unruled++;
      return nullptr;
    }
    n = get_locked(tag, *p, now_ns);
  }
  touch_locked(n);
  return n;
}

bool TagTable::take_locked(Node *n, uint64_t now_ns) {
  Bucket &b = n->second;
  __u64 next;
  if (!dt_gcra_admit(b.tat, now_ns, &b.policy, &next)) return false;
  b.tat = next;
  add_hit_locked(n);
  c_.admitted++;
  return true;
}

bool TagTable::admit_locked(std::string_view tag, uint64_t now_ns) {
  Node *n = bucket_locked(tag, now_ns);
  if (!n || take_locked(n, now_ns)) return true;
  c_.denied++;
  return false;
}

std::optional<uint64_t> TagTable::reserve_locked(std::string_view tag, uint64_t now_ns, uint64_t max_wait_ns) {
  Node *n = bucket_locked(tag, now_ns);
  if (!n || take_locked(n, now_ns)) return 0;
  Bucket &b = n->second;
  // No token now: the next one accrues when the bucket could admit it, i.e. at the
  // time t where base + interval == t + burst.
  const __u64 next = dt_gcra_base(b.tat, now_ns) + b.policy.interval_ns;
  const uint64_t wait = next - b.policy.burst_ns - now_ns;
  if (wait > max_wait_ns) {
    c_.reserve_too_far++;
    c_.denied++;
    return std::nullopt;
  }
  if (b.reservations >= opt_.max_reservations_per_tag || c_.outstanding >= opt_.max_reservations) {
    c_.reserve_bounded++;
    c_.denied++;
    return std::nullopt;
  }
  b.tat = next;
  add_hit_locked(n);
  b.reservations++;
  c_.outstanding++;
  c_.reserved++;
  due_.push({now_ns + wait, b.serial, std::string(tag)});
  return wait;
}

bool TagTable::admit(std::string_view tag, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  return admit_locked(tag, now_ns);
}

std::optional<uint64_t> TagTable::reserve(std::string_view tag, uint64_t now_ns, uint64_t max_wait_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  expire_locked(now_ns);
  return reserve_locked(tag, now_ns, max_wait_ns);
}

bool TagTable::has_strict_rules() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rules_.any_strict;
}

void TagTable::answer_batch(std::span<TagQuery> queries, uint64_t now_ns, uint64_t max_wait_ns, StrictMode strict) {
  std::lock_guard<std::mutex> lock(mu_);
  expire_locked(now_ns);
  const bool defer = strict == StrictMode::Defer && rules_.any_strict;
  for (TagQuery &q : queries) {
    q.wait_ns = 0;
    q.strict = false;
    if (defer) {
      // Strict tags are Redis's to answer: their buckets here are left alone.
      const std::optional<uint32_t> i = match_index_locked(q.tag);
      const TagRule *r = i ? &rules_.rules[*i] : nullptr;
      const dt_policy *p = i ? &rules_.policies[*i] : nullptr;
      if (r && r->strict) {
        q.answer = TagAnswer::No;
        q.strict = true;
        q.strict_fallback_local = r->strict_fallback_local;
        q.strict_interval_ns = p->interval_ns;
        q.strict_burst = r->burst;
        continue;
      }
    }
    if (!q.reserve) {
      q.answer = admit_locked(q.tag, now_ns) ? TagAnswer::Ok : TagAnswer::No;
      continue;
    }
    std::optional<uint64_t> w = reserve_locked(q.tag, now_ns, max_wait_ns);
    if (!w) q.answer = TagAnswer::No;
    else if (*w == 0) q.answer = TagAnswer::Ok;
    else {
      q.answer = TagAnswer::Wait;
      q.wait_ns = *w;
    }
  }
}

void TagTable::debit(std::string_view tag, uint64_t hits, uint64_t now_ns) {
  const TagHit one{std::string(tag), hits};
  debit_batch(std::span<const TagHit>(&one, 1), now_ns);
}

void TagTable::debit_batch(std::span<const TagHit> hits, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const TagHit &h : hits) {
    if (h.hits == 0) continue;
    Node *n = find_locked(h.tag, now_ns);
    if (!n) {
      const dt_policy *p = match_locked(h.tag);
      if (!p) {
        c_.debit_unruled += h.hits;
        continue;
      }
      n = get_locked(h.tag, *p, now_ns);
    }
    touch_locked(n);
    Bucket &b = n->second;
    b.tat = dt_gcra_debit(b.tat, now_ns, &b.policy, h.hits);
    c_.debited_hits += h.hits;
  }
}

std::vector<TagHit> TagTable::collect() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TagHit> out;
  out.swap(orphans_);
  out.reserve(out.size() + dirty_.size());
  for (Node *n : dirty_) {
    out.push_back({n->first, n->second.hits});
    n->second.hits = 0;
    n->second.dirty = kClean;
  }
  dirty_.clear();
  return out;
}

std::optional<int64_t> TagTable::tokens_milli(std::string_view tag, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  Node *n = find_locked(tag, now_ns);
  if (!n) return std::nullopt;
  return dt_gcra_tokens_milli(n->second.tat, now_ns, &n->second.policy);
}

TagCounters TagTable::counters(uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  expire_locked(now_ns);
  TagCounters c = c_;
  c.buckets = map_.size();
  return c;
}

size_t TagTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size();
}

}  // namespace dt
