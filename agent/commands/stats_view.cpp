// stats_view.cpp - reading the pinned maps once, and the rates between two reads.
#include "commands/stats_view.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "commands/rule_conditions.h"
#include "common/address.h"
#include "common/appendf.h"
#include "common/clock.h"
#include "common/parse_values.h"
#include "dataplane/policy.h"
#include "dthrottle/bucket.h"

namespace dt {
namespace {

// A counter's increase; one that went down was reset, so it counts from zero.
uint64_t increase(uint64_t prev, uint64_t cur) { return cur >= prev ? cur - prev : cur; }

// A counter's increase, 0 if it went down.
uint64_t increase_or_zero(uint64_t prev, uint64_t cur) { return cur > prev ? cur - prev : 0; }

// How far a source's dropped or would_drop may read low for a moment while a CPU
// flushes the drops it holds: DT_DROP_FLUSH_PACKETS packets per CPU (of at most 64 KiB
// each for a byte rule).
uint64_t held_drop_slack(bool bytes) {
  const int ncpu = libbpf_num_possible_cpus();
  return static_cast<uint64_t>(ncpu > 0 ? ncpu : 1) * DT_DROP_FLUSH_PACKETS * (bytes ? 65536u : 1u);
}

std::string key_bytes(const dt_key &k) { return std::string(reinterpret_cast<const char *>(&k), sizeof k); }

// A rule in force as the views list it: its live policy and budgets, and its counters.
RuleRow rule_row(const PinnedMaps &maps, const StatsSnapshot &snap, const RuleCounters &c) {
  RuleRow row;
  row.id = c.id;
  row.name = c.name;
  row.policy = snap.policies[c.id];
  row.passed = c.passed, row.dropped = c.dropped;
  row.would_drop = c.would_drop;
  row.prefix = snap.prefix[c.id];
  if (row.prefix.n_v4 || row.prefix.n_v6) read_prefix_drops(maps, c.id, row.prefix_drops);
  return row;
}

}  // namespace

const dt_policy &StatsSnapshot::policy_of(const dt_bucket &b) const {
  if (!dt_key_is_prefix(b.rule)) {
    const uint32_t id = b.rule & ~DT_KEY_DEST;  // a destination bucket: its rule's policy
    return id < policies.size() ? policies[id] : policy;
  }
  const uint32_t id = dt_key_rule_id(b.rule);
  const dt_policy *l = id < prefix.size() ? dt_prefix_level_of(&prefix[id], b.rule) : nullptr;
  return l ? *l : policy;
}

std::string StatsSnapshot::rule_name(uint32_t id) const {
  const uint32_t rule = dt_key_rule_id(id);
  std::string name = "rule " + std::to_string(rule);
  for (const auto &r : rules)
    if (r.id == rule) name = r.name;
  if (dt_key_is_prefix(id)) name += (dt_key_prefix_v6(id) ? " v6/" : " v4/") + std::to_string(dt_key_prefix_bits(id));
  return name;
}

std::string bucket_key_text(const dt_key &k) {
  return (dt_key_is_dest(k.rule) && !dt_key_is_prefix(k.rule) ? "dst " : "") + key_to_string(k);
}

bool read_snapshot(const PinnedMaps &maps, const std::string &pin_dir, StatsSnapshot *out, std::string *err) {
  out->sources.clear();
  if (int rc = read_stats(maps.stats, &out->counters); rc != 0)
    return *err = "cannot read " + pin_dir + "/stats: " + strerror(-rc), false;
  out->policy = dt_policy{};
  read_live_policy(maps.policy, maps.config, 0, &out->policy);
  // Every rule's live policy and budgets; the rules in force with their counters.
  out->policies.assign(DT_MAX_RULES, dt_policy{});
  out->prefix.assign(DT_MAX_RULES, dt_prefix_policy{});
  for (uint32_t id = 0; id < DT_MAX_RULES; id++) {
    read_live_policy(maps.policy, maps.config, id, &out->policies[id]);
    if (maps.prefix_policy >= 0) read_live_prefix_policy(maps.prefix_policy, maps.config, id, &out->prefix[id]);
  }
  const RuleCounterTable table = read_rule_table(maps);
  out->would_drop = table.would_drop;
  out->rules.clear();
  const std::map<uint32_t, RuleConditions> conds = read_rule_conditions(maps);
  for (const RuleCounters &c : table.named) {
    out->rules.push_back(rule_row(maps, *out, c));
    if (auto it = conds.find(c.id); it != conds.end()) {
      RuleRow &row = out->rules.back();
      row.has_match = true, row.has_cond = it->second.has_cond;
      row.cidr = it->second.cidr, row.match = it->second.match, row.cond = it->second.cond;
    }
  }
  long n = for_each_bucket(maps.buckets, maps.drop_pending, [&](const dt_key &k, const dt_bucket &b) {
    out->sources.push_back({k, b});
  });
  if (n < 0) return *err = "cannot read " + pin_dir + "/buckets: " + strerror(static_cast<int>(-n)), false;
  const ListMapFds lists{maps.lists_v4, maps.lists_v6};
  out->lists.allow = read_list_size(lists, DT_LIST_ALLOW);
  out->lists.deny = read_list_size(lists, DT_LIST_DENY);
  sum_per_cpu(maps.list_stats, 0, &out->lists.counts);  // zero for pins without lists
  sum_per_cpu(maps.capture_cpu, 0, &out->capture);      // zero for pins without capture
  out->taken_ns = mono_now_ns();
  return true;
}

double source_tokens(const dt_bucket &b, const dt_policy &pol, uint64_t now) {
  return static_cast<double>(dt_gcra_tokens_milli(b.tat_ns, now, &pol)) / 1000.0;
}

std::string dry_run_line(const StatsSnapshot &snap) {
  const char *what = "nothing is dropped; would-drop counts what enforcing would drop";
  // Pins without rule names: the default rule alone.
  if (snap.rules.empty()) return (snap.policy.flags & DT_POL_DRY_RUN) ? std::string("dry run: ") + what : "";
  std::string names;
  size_t dry = 0, could_drop = 0;
  for (const RuleRow &r : snap.rules) {
    if (r.policy.action == DT_ACT_ALLOW) continue;
    could_drop++;
    if (!r.dry_run()) continue;
    dry++;
    names += (names.empty() ? "" : ", ") + r.name;
  }
  if (dry == 0) return "";
  if (dry == could_drop) return std::string("dry run: every rule (") + what + ")";
  return std::string("dry run: rule") + (dry > 1 ? "s " : " ") + names +
         " (they drop nothing; would-drop counts what they would drop)";
}

TopFrame compute_top(const StatsSnapshot &prev, const StatsSnapshot &cur) {
  TopFrame f;
  // Snapshots taken in the same nanosecond would divide by zero; a rate is then 0 or huge.
  f.interval_s = cur.taken_ns > prev.taken_ns ? (cur.taken_ns - prev.taken_ns) / 1e9 : 1e-9;
  auto rate = [&](uint64_t a, uint64_t b) { return static_cast<double>(increase(a, b)) / f.interval_s; };
  f.passed_per_s = rate(prev.counters.passed, cur.counters.passed);
  f.dropped_per_s = rate(prev.counters.dropped, cur.counters.dropped);
  f.new_sources_per_s = rate(prev.counters.new_sources, cur.counters.new_sources);
  f.fail_open_per_s = rate(prev.counters.fail_open, cur.counters.fail_open);
  f.would_drop_per_s = rate(prev.would_drop, cur.would_drop);
  f.dry_run = dry_run_line(cur);
  f.sources_total = cur.sources.size();

  std::unordered_map<std::string, const dt_bucket *> before;
  before.reserve(prev.sources.size());
  for (const auto &r : prev.sources) before.emplace(key_bytes(r.key), &r.b);
  for (const auto &r : cur.sources) {
    auto it = before.find(key_bytes(r.key));
    const dt_bucket zero{};
    const dt_bucket &p = it == before.end() ? zero : *it->second;
    // An evicted source seen again restarts its counters: count it from zero. Drops
    // held per CPU may make a reading during a flood dip by less than held_drop_slack
    // (see PendingDrops): such a dip is no increase, not a restart.
    const uint64_t slack = held_drop_slack(policy_bytes(cur.policy_of(r.b)));
    const bool reset =
        r.b.passed < p.passed || r.b.dropped + slack < p.dropped || r.b.would_drop + slack < p.would_drop;
    const uint64_t dp = reset ? r.b.passed : r.b.passed - p.passed;
    const uint64_t dd = reset ? r.b.dropped : increase_or_zero(p.dropped, r.b.dropped);
    const uint64_t dw = reset ? r.b.would_drop : increase_or_zero(p.would_drop, r.b.would_drop);
    if (dp == 0 && dd == 0 && dw == 0) continue;
    f.active.push_back({r.key, dp / f.interval_s, dd / f.interval_s,
                        source_tokens(r.b, cur.policy_of(r.b), cur.taken_ns), r.b.passed, r.b.dropped,
                        dw / f.interval_s, r.b.would_drop, policy_bytes(cur.policy_of(r.b))});
  }
  std::sort(f.active.begin(), f.active.end(), [](const SourceRate &a, const SourceRate &b) {
    const double da = a.dropped_per_s + a.would_drop_per_s, db = b.dropped_per_s + b.would_drop_per_s;
    if (da != db) return da > db;
    if (a.passed_per_s != b.passed_per_s) return a.passed_per_s > b.passed_per_s;
    return memcmp(a.key.addr, b.key.addr, sizeof a.key.addr) < 0;
  });
  return f;
}

std::string render_top(const TopFrame &f, const dt_policy &pol, const std::string &pin_dir, size_t top) {
  std::string out;
  appendf(&out, "dthrottle top: %s, last %.2fs\n", pin_dir.c_str(), f.interval_s);
  if (pol.interval_ns && policy_bytes(pol))
    appendf(&out, "policy: rate %s/s, burst %s per source (a byte budget)\n", format_bytes(policy_rate(pol)).c_str(),
            format_bytes(static_cast<double>(policy_burst(pol))).c_str());
  else if (pol.interval_ns)
    appendf(&out, "policy: rate %.6g/s, burst %llu per source\n", policy_rate(pol), policy_burst(pol));
  else appendf(&out, "policy: none set (every packet passes, counted as fail-open)\n");
  if (!f.dry_run.empty()) appendf(&out, "%s\n", f.dry_run.c_str());
  appendf(&out, "total: passed %.1f/s, dropped %.1f/s, would-drop %.1f/s, new sources %.1f/s, fail-open %.1f/s\n",
          f.passed_per_s, f.dropped_per_s, f.would_drop_per_s, f.new_sources_per_s, f.fail_open_per_s);
  appendf(&out, "sources: %zu in the table, %zu sent in the interval\n", f.sources_total, f.active.size());
  if (f.active.empty()) return out;
  const size_t shown = top == 0 ? f.active.size() : std::min(f.active.size(), top);
  appendf(&out, "\n  %-39s %11s %11s %12s %10s %12s %12s\n", "SOURCE", "PASSED/s", "DROPPED/s", "WOULD-DROP/s",
          "TOKENS", "PASSED", "DROPPED");
  for (size_t i = 0; i < shown; i++) {
    const auto &s = f.active[i];
    appendf(&out, "  %-39s %11.1f %11.1f %12.1f %10.3f %12llu %12llu%s\n", bucket_key_text(s.key).c_str(),
            s.passed_per_s, s.dropped_per_s, s.would_drop_per_s, s.tokens, static_cast<unsigned long long>(s.passed),
            static_cast<unsigned long long>(s.dropped), s.bytes ? "  (bytes)" : "");
  }
  if (shown < f.active.size()) appendf(&out, "  (%zu more)\n", f.active.size() - shown);
  return out;
}

}  // namespace dt
