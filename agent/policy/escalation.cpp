// escalation.cpp - offences, bans that grow with repeats, the caps, save and load.
#include "policy/escalation.h"

#include <algorithm>
#include <istream>
#include <ostream>
#include <sstream>

#include "common/log.h"

namespace dt {
namespace {

constexpr uint64_t kPruneEveryNs = 10'000'000'000ull;
LogLimiter g_skip_log{10'000'000'000ull, 3};  // exempt offenders, the cap: a few lines per 10 s

std::string seconds_text(uint64_t ns) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.0fs", static_cast<double>(ns) / 1e9);
  return buf;
}

}  // namespace

// A prefix budget's offence has no drops of its own (the kernel counts them per level).
std::string AutoBan::evidence() const {
  const std::string what = drops ? std::to_string(drops) + " dropped in " + seconds_text(over_ns) + " over budget"
                                 : "out of budget for " + seconds_text(over_ns);
  return what + ", offence " + std::to_string(offence);
}

bool parse_offence(const std::string &evidence, uint32_t *offence) {
  const std::string tag = ", offence ";
  const size_t at = evidence.rfind(tag);
  if (at == std::string::npos) return false;
  const std::string digits = evidence.substr(at + tag.size());
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
  *offence = static_cast<uint32_t>(std::stoul(digits));
  return *offence > 0;
}

Escalation::Escalation(Clock clock, size_t max_in_force, size_t max_tracked)
    : clock_(std::move(clock)), max_in_force_(max_in_force), max_tracked_(max_tracked ? max_tracked : 1) {}

// The offender's state, made most recently seen; a new one may push out the least recent.
Escalation::Offender &Escalation::touch(const BanPrefix &p) {
  auto it = offenders_.find(p);
  if (it != offenders_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second;
  }
  while (offenders_.size() >= max_tracked_ && !lru_.empty()) {
    in_offence_.erase(lru_.back());
    offenders_.erase(lru_.back());
    lru_.pop_back();
    counters_.evicted++;
  }
  lru_.push_front(p);
  Offender &st = offenders_[p];
  st.lru = lru_.begin();
  return st;
}

uint64_t start_estimate(uint64_t floor_ns, uint64_t first_seen_ns, uint64_t first_drops, uint64_t more_drops,
                        uint64_t dt_ns) {
  if (first_seen_ns <= floor_ns) return first_seen_ns;
  if (!first_drops || !more_drops || !dt_ns) return floor_ns;  // no rate: the earliest it can be
  const double took = static_cast<double>(first_drops) * static_cast<double>(dt_ns) / static_cast<double>(more_drops);
  const double span = static_cast<double>(first_seen_ns - floor_ns);
  return took >= span ? floor_ns : first_seen_ns - static_cast<uint64_t>(took);
}

void Escalation::observe(const OverBudget &o, uint64_t now) {
  if (!rules_.count(o.rule)) return;
  Offender &st = touch(o.prefix);
  if (st.ban_end > now) return;  // banned (or would be): not a new offence
  if (!st.over_since) {
    // Its drops happened since the last check (not before the end of its last ban: it
    // could not be over budget while banned); it counts from then until placed.
    st.floor = last_check_ && now - last_check_ <= kOffenceGapNs ? std::max(last_check_, st.ban_end) : now;
    st.over_since = st.floor;
    st.first_seen = now;
    st.first_drops = o.drops;
    st.placed = false;
    st.drops = 0;
    counters_.offences++;
    in_offence_.insert(o.prefix);
  } else if (!st.placed && o.drops && last_check_ && now > last_check_) {
    st.over_since = start_estimate(st.floor, st.first_seen, st.first_drops, o.drops, now - last_check_);
    st.placed = true;
  }
  st.rule = o.rule;
  st.last_over = now;
  st.drops += o.drops;
}

bool Escalation::learn(const BanPrefix &p, const std::string &rule, uint32_t offence, uint64_t ban_end) {
  auto r = std::find_if(rules_.begin(), rules_.end(), [&](const auto &kv) { return kv.second.name == rule; });
  if (r == rules_.end() || !offence) return false;
  auto known = offenders_.find(p);
  if (known != offenders_.end() && known->second.bans >= offence && known->second.ban_end >= ban_end) return false;
  Offender &st = touch(p);
  st.rule = r->first;
  st.bans = std::max(st.bans, offence);
  st.ban_end = std::max(st.ban_end, ban_end);
  st.over_since = 0;  // banned now: an offence under way here is over
  in_offence_.erase(p);
  counters_.learned++;
  return true;
}

// Offences not seen over budget for kOffenceGapNs are over.
void Escalation::end_quiet_offences(uint64_t now) {
  for (auto it = in_offence_.begin(); it != in_offence_.end();) {
    auto o = offenders_.find(*it);
    if (o == offenders_.end() || now - o->second.last_over > kOffenceGapNs) {
      if (o != offenders_.end()) o->second.over_since = 0;
      it = in_offence_.erase(it);
    } else {
      ++it;
    }
  }
}

uint64_t Escalation::next_due() const {
  uint64_t due = UINT64_MAX;
  for (const BanPrefix &p : in_offence_) {
    auto o = offenders_.find(p);
    auto r = o == offenders_.end() ? rules_.end() : rules_.find(o->second.rule);
    if (r != rules_.end() && o->second.over_since) due = std::min(due, o->second.over_since + r->second.cfg.after_ns);
  }
  return due;
}

size_t Escalation::in_force() {
  const uint64_t now = clock_();
  ends_.erase(ends_.begin(), ends_.upper_bound(now));
  return ends_.size();
}

AutoBan Escalation::make_ban(const BanPrefix &p, Offender &st, const EscalationRule &r, uint64_t now) {
  // A repeat: the offence started within `forget` of the last ban's end.
  if (!st.ban_end || st.over_since > st.ban_end + r.cfg.forget_ns) st.bans = 0;
  AutoBan b;
  b.prefix = p;
  b.rule = r.name;
  b.offence = ++st.bans;
  b.duration_ns = escalated_ban_ns(r.cfg, b.offence);
  b.expires_ns = now + b.duration_ns;
  b.drops = st.drops;
  b.over_ns = st.last_over - st.over_since;
  b.dry_run = r.dry_run;
  st.ban_end = b.expires_ns;
  st.over_since = 0;
  ends_.insert(b.expires_ns);
  (b.dry_run ? counters_.would_ban : counters_.bans)++;
  return b;
}

// An offender in offence: banned once it lasted `after`, unless exempt or at the cap.
// True when it is done with (banned, exempt: no longer in offence).
bool Escalation::decide(const BanPrefix &p, Offender &st, uint64_t now, std::vector<AutoBan> *out) {
  auto r = rules_.find(st.rule);
  if (r == rules_.end()) return true;
  // Seen over budget `after` after the offence began (not merely not seen since).
  if (st.last_over - st.over_since < r->second.cfg.after_ns) return false;
  uint64_t suppressed = 0;
  std::string why;
  if (exempt_ && exempt_(p, &why)) {
    counters_.exempt++;
    if (g_skip_log.allow(now, &suppressed))
      DT_INFO("escalation: %s over rule %s's budget for %s is not banned: %s", ban_prefix_text(p).c_str(),
              r->second.name.c_str(), seconds_text(now - st.over_since).c_str(), why.c_str());
    return true;  // the offence ends; a new one, should it go on, is checked after `after`
  }
  if (in_force() >= max_in_force_) {
    counters_.cap_reached++;
    if (g_skip_log.allow(now, &suppressed))
      DT_WARN("escalation: %s not banned: %zu automatic bans in force, the most allowed (--auto-ban-max)%s",
              ban_prefix_text(p).c_str(), max_in_force_,
              suppressed ? (" (" + std::to_string(suppressed) + " lines suppressed)").c_str() : "");
    return false;
  }
  out->push_back(make_ban(p, st, r->second, now));
  return true;
}

std::vector<AutoBan> Escalation::check(const std::vector<OverBudget> &over) {
  const uint64_t now = clock_();
  for (const OverBudget &o : over) observe(o, now);
  end_quiet_offences(now);
  std::vector<AutoBan> out;
  for (auto it = in_offence_.begin(); it != in_offence_.end();) {
    auto o = offenders_.find(*it);
    if (o != offenders_.end() && !decide(*it, o->second, now, &out)) {
      ++it;
      continue;
    }
    if (o != offenders_.end()) o->second.over_since = 0;
    it = in_offence_.erase(it);
  }
  prune(now);
  last_check_ = now;
  return out;
}

// Offenders whose history no longer matters (not in offence, last ban forgotten, or
// none) go, every kPruneEveryNs.
void Escalation::prune(uint64_t now) {
  if (now < next_prune_) return;
  next_prune_ = now + kPruneEveryNs;
  for (auto it = offenders_.begin(); it != offenders_.end();) {
    const Offender &st = it->second;
    auto r = rules_.find(st.rule);
    const uint64_t forget = r == rules_.end() ? 0 : r->second.cfg.forget_ns;
    const bool idle = !st.over_since && (!st.ban_end || now > st.ban_end + forget);
    if (!idle) {
      ++it;
      continue;
    }
    lru_.erase(it->second.lru);
    it = offenders_.erase(it);
  }
}

// "v1" then "PREFIX RULE BANS BAN_END_UNIX_MS" per offender with a ban history.
void Escalation::save(std::ostream &out, uint64_t now_unix_ms) {
  const uint64_t now = clock_();
  out << "dthrottle-escalation v1\n";
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    const Offender &st = offenders_.at(*it);
    if (!st.ban_end) continue;
    auto r = rules_.find(st.rule);
    const long long rel_ms = (static_cast<long long>(st.ban_end) - static_cast<long long>(now)) / 1'000'000;
    out << ban_prefix_text(*it) << ' ' << (r == rules_.end() ? "-" : r->second.name) << ' ' << st.bans << ' '
        << static_cast<long long>(now_unix_ms) + rel_ms << '\n';
  }
}

size_t Escalation::load(std::istream &in, uint64_t now_unix_ms) {
  const uint64_t now = clock_();
  std::string line;
  if (!std::getline(in, line) || line != "dthrottle-escalation v1") return 0;
  size_t n = 0;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string prefix, rule, err;
    uint32_t bans = 0;
    long long end_ms = 0;
    BanPrefix p;
    if (!(ls >> prefix >> rule >> bans >> end_ms) || !parse_ban_prefix(prefix, &p, &err) || !bans) continue;
    const long long rel_ns = (end_ms - static_cast<long long>(now_unix_ms)) * 1'000'000;
    const long long end = static_cast<long long>(now) + rel_ns;
    if (end <= 0) continue;  // ended before this boot's clock began: long forgotten
    Offender &st = touch(p);
    for (const auto &[id, r] : rules_)
      if (r.name == rule) st.rule = id;
    st.bans = bans;
    st.ban_end = static_cast<uint64_t>(end);
    if (st.ban_end > now) ends_.insert(st.ban_end);
    n++;
  }
  return n;
}

}  // namespace dt
