// escalation_driver.cpp - escalation on the running agent: the evidence from the maps,
// the exemptions, the bans made, the state file and the status.
#include "daemon/escalation_driver.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string_view>

#include "bans/ban_policy.h"
#include "common/address.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/runtime_files.h"
#include "dthrottle/bucket.h"
#include "policy/escalation_rows.h"

namespace dt {
namespace {

constexpr const char *kEscalationState = ".escalation";
constexpr size_t kMaxVerifiedScan = 1u << 20;  // bounds a pass over the verified map

uint64_t rule_drops(const MapFds &fds, uint32_t id) {
  const RuleCounters c = read_rule_counters(fds, id);
  return c.dropped + c.would_drop;
}

// The cluster_exempt map's keys (the peers' and hubs' connections), at most a bounded number.
std::vector<dt_exempt_key> read_exempt_keys(int fd) {
  std::vector<dt_exempt_key> out;
  dt_exempt_key key{}, next{};
  const dt_exempt_key *prev = nullptr;
  while (fd >= 0 && out.size() < 65536 && bpf_map_get_next_key(fd, prev, &next) == 0) {
    out.push_back(next);
    key = next;
    prev = &key;
  }
  return out;
}

BanPrefix prefix_of(const uint8_t *addr, bool v6, uint8_t len) {
  BanPrefix p;
  memcpy(p.addr, addr, 16);
  p.is_v6 = v6;
  p.len = len;
  return p;
}

}  // namespace

EscalationDriver::EscalationDriver(const MapFds &fds, int cluster_exempt_fd, BanStore &store, std::string pin_dir,
                                   BanMinPrefix min_prefix, size_t max_in_force, uint64_t period_ns)
    : fds_(fds),
      store_(store),
      pin_dir_(std::move(pin_dir)),
      state_file_(runtime_file(pin_dir_, kEscalationState)),
      min_prefix_(min_prefix),
      logic_(mono_now_ns, max_in_force),
      exempt_fd_(cluster_exempt_fd),
      period_ns_(period_ns ? period_ns : 200'000'000ull) {
  logic_.set_exempt([this](const BanPrefix &p, std::string *why) { return exempt(p, why); });
  verified_fd_ = bpf_obj_get((pin_dir_ + "/" + DT_MAP_VERIFIED).c_str());
}

EscalationDriver::~EscalationDriver() {
  if (verified_fd_ >= 0) close(verified_fd_);
}

void EscalationDriver::configure(const LoadedRules &rules) {
  std::map<uint32_t, EscalationRule> esc;
  std::map<uint32_t, RuleInfo> info;
  for (const PacketRule &r : rules.set.rules) {
    if (!r.escalate.enabled || r.id >= rules.compiled.policies.size()) continue;
    esc[r.id] = EscalationRule{r.name, r.escalate, r.dry_run};
    DT_INFO("escalation: rule %s: %s%s", r.name.c_str(), describe_escalate(r.escalate).c_str(),
            r.dry_run ? " (dry run: bans logged and counted, none made)" : "");
    RuleInfo ri;
    const dt_policy &pol = rules.compiled.policies[r.id];
    ri.policy = pol;
    ri.v4_bits = static_cast<uint8_t>(pol.v4_key_bits ? pol.v4_key_bits : 32);
    ri.v6_bits = static_cast<uint8_t>(pol.v6_key_bits ? pol.v6_key_bits : 128);
    ri.prefixes = !r.prefix_limits.empty() && r.id < rules.compiled.prefix.size();
    if (ri.prefixes) ri.levels = rules.compiled.prefix[r.id];
    ri.sources = !ri.prefixes || r.escalate.sources;
    ri.drops = rule_drops(fds_, r.id);
    read_prefix_drops(fds_, r.id, ri.level_drops);
    info[r.id] = ri;
  }
  logic_.set_rules(std::move(esc));
  info_ = std::move(info);
  never_.set_allow(rules.allow);
  if (!loaded_) {
    loaded_ = true;
    std::ifstream in(state_file_);
    if (in && active())
      if (size_t n = logic_.load(in, unix_now_ms()))
        DT_INFO("escalation: %zu offenders' ban history kept from before (%s)", n, state_file_.c_str());
  }
}

// The gate: whether any escalating rule (or one of its levels) dropped since the last check.
bool EscalationDriver::rules_dropped() {
  bool any = false;
  for (auto &[id, ri] : info_) {
    const uint64_t d = rule_drops(fds_, id);
    any |= d != ri.drops;
    ri.drops = d;
    uint64_t levels[DT_PREFIX_SLOTS] = {};
    read_prefix_drops(fds_, id, levels);
    for (unsigned i = 0; i < DT_PREFIX_SLOTS; i++) {
      ri.level_dropped[i] = levels[i] != ri.level_drops[i];
      any |= ri.level_dropped[i];
      ri.level_drops[i] = levels[i];
    }
  }
  return any;
}

void EscalationDriver::scan_source(const dt_key &k, const dt_bucket &b, uint32_t rid, uint64_t now_ns,
                                   std::vector<OverBudget> *out) {
  const RuleInfo &ri = info_.at(rid);
  const uint64_t drops = b.dropped + b.would_drop;
  if (!ri.sources || !drops) return;
  __u64 next = 0;
  const uint64_t cost = (ri.policy.flags & DT_POL_BYTES) ? 1518 : 1;                   // a full frame for a byte budget
  if (!seeded_ && dt_gcra_admit_n(b.tat_ns, now_ns, &ri.policy, cost, &next)) return;  // old drops, a token now
  auto seen = drops_seen_.find(k);
  uint64_t before = seen == drops_seen_.end() ? 0 : seen->second;
  if (before > drops) before = 0;  // a new bucket of the same key
  if (drops == before) return;
  const bool v6 = !addr_is_v4(k.addr);
  out->push_back({prefix_of(k.addr, v6, v6 ? ri.v6_bits : ri.v4_bits), rid, drops - before});
}

void EscalationDriver::scan_prefix(const dt_key &k, const dt_bucket &b, uint32_t rid, uint64_t now_ns,
                                   std::vector<OverBudget> *out) {
  const RuleInfo &ri = info_.at(rid);
  const dt_policy *level = ri.prefixes ? dt_prefix_level_of(&ri.levels, k.rule) : nullptr;
  if (!level) return;
  const bool v6 = dt_key_prefix_v6(k.rule);
  const uint32_t bits = dt_key_prefix_bits(k.rule);
  unsigned slot = v6 ? DT_PREFIX_LEVELS : 0;
  for (unsigned i = 0; i < DT_PREFIX_LEVELS; i++)
    if ((v6 ? ri.levels.v6[i].v6_key_bits : ri.levels.v4[i].v4_key_bits) == bits) slot += i;
  __u64 next = 0;
  const uint64_t cost = (level->flags & DT_POL_BYTES) ? 1518 : 1;  // a full frame for a byte budget
  if (!ri.level_dropped[slot % DT_PREFIX_SLOTS] || dt_gcra_admit_n(b.tat_ns, now_ns, level, cost, &next)) return;
  out->push_back({prefix_of(k.addr, v6, static_cast<uint8_t>(bits)), rid, 0});
}

// One pass over the bucket table: the offenders over budget now.
std::vector<OverBudget> EscalationDriver::scan(uint64_t now_ns) {
  std::vector<OverBudget> out;
  std::unordered_map<dt_key, uint64_t, KeyHash, KeyEq> seen;
  const long n = for_each_bucket(fds_.buckets, fds_.drop_pending, [&](const dt_key &k, const dt_bucket &b) {
    const uint32_t rid = dt_key_rule_id(k.rule);
    if ((k.rule & DT_KEY_DEST) || !info_.count(rid)) return;
    if (dt_key_is_prefix(k.rule)) return scan_prefix(k, b, rid, now_ns, &out);
    scan_source(k, b, rid, now_ns, &out);
    if (b.dropped + b.would_drop) seen[k] = b.dropped + b.would_drop;
  });
  if (n < 0) {
    DT_WARN("escalation: cannot read the bucket table: %s", strerror(static_cast<int>(-n)));
    return {};
  }
  drops_seen_ = std::move(seen);
  seeded_ = true;
  return out;
}

void EscalationDriver::tick(uint64_t now_ns) {
  if (!active()) return;
  never_fresh_ = false;
  // Nothing dropped: nobody over budget (every offence under way goes on counting its gap).
  std::vector<OverBudget> over;
  if (rules_dropped()) over = scan(now_ns);  // the buckets' drops are kept from the last pass
  const std::vector<AutoBan> bans = logic_.check(over);
  for (const AutoBan &b : bans) apply(b);
  if (!bans.empty()) save();
  // The next period, or sooner the moment an offence lasts `after` (one already due and
  // not banned, its drops not seen to grow or the cap reached, waits for the period).
  deadline_ = now_ns + period_ns_;
  const uint64_t due = logic_.next_due();
  if (due > now_ns && due < deadline_) deadline_ = due;
}

bool EscalationDriver::covers_verified(const BanPrefix &p) {
  if (verified_fd_ < 0) return false;
  const uint64_t now = mono_now_ns();
  dt_key key{}, next{};
  const dt_key *prev = nullptr;
  for (size_t i = 0; i < kMaxVerifiedScan && bpf_map_get_next_key(verified_fd_, prev, &next) == 0; i++) {
    key = next;
    prev = &key;
    dt_verified v{};
    if (bpf_map_lookup_elem(verified_fd_, &key, &v) != 0 || v.expires_ns <= now) continue;
    if ((key.rule == DT_VERIFIED_V6) == p.is_v6 && ban_prefix_covers(p, key.addr)) return true;
  }
  return false;
}

bool EscalationDriver::exempt(const BanPrefix &p, std::string *why) {
  if (ban_too_wide(p, min_prefix_))
    return *why = "wider than --peer-ban-min-prefix " + ban_min_prefix_text(min_prefix_), true;
  if (!never_fresh_) {
    never_.set_cluster(read_exempt_keys(exempt_fd_));
    never_fresh_ = true;
  }
  if (never_.overlaps(p, why)) return true;
  if (covers_verified(p)) return *why = "a source verified by a SYN cookie", true;
  return false;
}

namespace {
// An automatic ban's origin and the prefix of its `who` (the rule follows): written by
// store_ban, read back from a peer's ban (origin "NODE/auto") by learn_peer_ban.
constexpr std::string_view kAutoOrigin = "auto";
constexpr std::string_view kRuleWhoPrefix = "rule ";

bool is_peer_auto_origin(const std::string &origin) {
  return origin.size() > kAutoOrigin.size() + 1 && origin.ends_with(kAutoOrigin) &&
         origin[origin.size() - kAutoOrigin.size() - 1] == '/';
}
}  // namespace

// The ban into the store (cluster-wide from there); false when held already or refused.
bool EscalationDriver::store_ban(const AutoBan &b, Ban *made) {
  if (auto held = store_.find(b.prefix); held && held->expires_ns > mono_now_ns()) return false;  // banned already
  Ban ban;
  ban.prefix = b.prefix;
  ban.expires_ns = b.expires_ns;
  ban.reason = b.evidence().substr(0, kMaxBanReason);
  ban.origin = kAutoOrigin;
  ban.who = (std::string(kRuleWhoPrefix) + b.rule).substr(0, kMaxBanWho);
  std::string err;
  if (!store_.set(ban, &err)) {
    failed_++;
    DT_WARN("escalation: cannot ban %s: %s", ban_prefix_text(b.prefix).c_str(), err.c_str());
    return false;
  }
  const auto stored = store_.find(b.prefix);
  *made = stored ? *stored : ban;
  return true;
}

void EscalationDriver::apply(const AutoBan &b) {
  const std::string prefix = ban_prefix_text(b.prefix), evidence = b.evidence();
  uint64_t suppressed = 0;
  const bool log = ban_log_.allow(mono_now_ns(), &suppressed);
  const std::string more = suppressed ? " (" + std::to_string(suppressed) + " lines suppressed)" : "";
  if (b.dry_run) {
    if (log)
      DT_INFO("escalation (dry run): would ban %s for %s (rule %s: %s)%s", prefix.c_str(),
              format_remaining(b.duration_ns).c_str(), b.rule.c_str(), evidence.c_str(), more.c_str());
    if (on_ban_) on_ban_(b, nullptr);
    return;
  }
  Ban made;
  if (!store_ban(b, &made)) return;
  if (log)
    DT_INFO("escalation: banned %s for %s (rule %s: %s)%s", prefix.c_str(), format_remaining(b.duration_ns).c_str(),
            b.rule.c_str(), evidence.c_str(), more.c_str());
  if (on_ban_) on_ban_(b, &made);
}

bool EscalationDriver::learn_peer_ban(const Ban &b) {
  const bool automatic = b.remote && is_peer_auto_origin(b.origin);
  uint32_t offence = 0;
  if (!active() || !automatic || !b.who.starts_with(kRuleWhoPrefix) || !parse_offence(b.reason, &offence)) return false;
  const std::string rule = b.who.substr(kRuleWhoPrefix.size());
  if (!logic_.learn(b.prefix, rule, offence, b.expires_ns)) return false;
  DT_INFO("escalation: %s's ban from %s (rule %s, offence %u) is in its history here",
          ban_prefix_text(b.prefix).c_str(), b.origin.c_str(), rule.c_str(), offence);
  save();
  return true;
}

void EscalationDriver::save() {
  const std::string tmp = state_file_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    logic_.save(out, unix_now_ms());
    if (!out.flush()) {
      DT_WARN("escalation: cannot write %s", tmp.c_str());
      return;
    }
  }
  if (rename(tmp.c_str(), state_file_.c_str()) != 0) DT_WARN("escalation: cannot write %s", state_file_.c_str());
}

void EscalationDriver::on_exit(bool keep) {
  if (keep && active()) save();
  else unlink(state_file_.c_str());
}

EscalationStatus EscalationDriver::status() {
  EscalationStatus s;
  s.active = active();
  s.counters = logic_.counters();
  s.failed = failed_;
  s.tracked = logic_.tracked();
  s.in_force = logic_.in_force();
  s.max_in_force = logic_.max_in_force();
  for (const auto &[id, r] : logic_.rules()) s.rules.push_back(r.name);
  return s;
}

std::string EscalationDriver::status_json() {
  const EscalationStatus s = status();
  Json j = Json::object();
  j["rules"] = s.rules;
  for (const EscalationCounterRow &r : kEscalationCounterRows) j[r.json] = r.value(s);
  j["tracked"] = s.tracked;
  j["in_force"] = s.in_force;
  j["max_in_force"] = s.max_in_force;
  return dump_json(j);
}

std::string EscalationDriver::status_text() {
  const EscalationStatus s = status();
  const EscalationCounters &c = s.counters;
  std::string rules;
  for (const std::string &r : s.rules) rules += (rules.empty() ? "" : ", ") + r;
  char buf[512];
  snprintf(buf, sizeof buf,
           "escalation (rules %s): %llu bans, %llu would-ban (dry run), %llu cap reached, %llu exempt, %llu failed; "
           "%llu offences, %llu peers' bans learned, %zu offenders tracked (%llu evicted), %zu automatic bans in "
           "force (at most %zu)\n",
           rules.c_str(), (unsigned long long)c.bans, (unsigned long long)c.would_ban,
           (unsigned long long)c.cap_reached, (unsigned long long)c.exempt, (unsigned long long)s.failed,
           (unsigned long long)c.offences, (unsigned long long)c.learned, s.tracked, (unsigned long long)c.evicted,
           s.in_force, s.max_in_force);
  return buf;
}

}  // namespace dt
