// stats_render.cpp - `agent stats` as a table and as JSON, from one snapshot.
#include "commands/stats_render.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "commands/rule_conditions.h"
#include "common/address.h"
#include "common/appendf.h"
#include "common/json.h"
#include "common/parse_values.h"
#include "dataplane/policy.h"
#include "dthrottle/bucket.h"

namespace dt {
namespace {

// The prefix length a bucket key stands for under its rule (32/128: one address).
int key_prefix_len(const dt_key &k, const dt_policy &p) {
  const bool v6 = !addr_is_v4(k.addr);
  const int bits = v6 ? p.v6_key_bits : p.v4_key_bits;
  return bits ? bits : (v6 ? 128 : 32);
}

// "198.18.1.1", or "2001:2:0:5::/64" for a bucket that stands for a whole prefix;
// "dst 203.0.113.7" for a destination's bucket (key_by = "destination").
std::string source_text(const dt_key &k, const dt_policy &p) {
  const int len = key_prefix_len(k, p);
  const bool v6 = !addr_is_v4(k.addr);
  return bucket_key_text(k) + (len < (v6 ? 128 : 32) ? "/" + std::to_string(len) : "");
}

const char *action_name(uint8_t a) { return a == DT_ACT_ALLOW ? "allow" : a == DT_ACT_DENY ? "deny" : "throttle"; }

// --- the table ---

void append_counter(std::string *out, const char *name, unsigned long long v) {
  // 30 columns: a label longer than 14 characters takes them from the number's 15.
  const int w = std::max(14, static_cast<int>(strlen(name)));
  appendf(out, "  %-*s %*llu\n", w, name, 29 - w, v);
}

// The lists' lines (docs/lists.md), when a list is loaded or has counted anything.
void append_lists(std::string *out, const ListsRow &l) {
  const bool any =
      l.allow.v4 || l.allow.v6 || l.deny.v4 || l.deny.v6 || l.counts.allowed || l.counts.denied || l.counts.would_drop;
  if (!any) return;
  appendf(out, "lists:\n");
  appendf(out, "  allow list   %u IPv4 + %u IPv6 prefixes, passed %llu\n", l.allow.v4, l.allow.v6,
          static_cast<unsigned long long>(l.counts.allowed));
  appendf(out, "  deny list    %u IPv4 + %u IPv6 prefixes, dropped %llu, would-drop %llu\n", l.deny.v4, l.deny.v6,
          static_cast<unsigned long long>(l.counts.denied), static_cast<unsigned long long>(l.counts.would_drop));
}

// agent capture's sampler (docs/capture.md), once it has sampled anything.
void append_capture(std::string *out, const dt_capture_cpu &c) {
  if (!c.captured && !c.sampled_out && !c.ring_full) return;
  appendf(out, "capture:       %llu captured, %llu sampled out (rate bound), %llu lost (ring full)\n",
          static_cast<unsigned long long>(c.captured), static_cast<unsigned long long>(c.sampled_out),
          static_cast<unsigned long long>(c.ring_full));
}

Json lists_json(const ListsRow &l) {
  return {{"allow", {{"prefixes_v4", l.allow.v4}, {"prefixes_v6", l.allow.v6}, {"passed", l.counts.allowed}}},
          {"deny",
           {{"prefixes_v4", l.deny.v4},
            {"prefixes_v6", l.deny.v6},
            {"dropped", l.counts.denied},
            {"would_drop", l.counts.would_drop}}}};
}

void append_policy_and_counters(std::string *out, const StatsSnapshot &snap, const std::string &pin_dir,
                                const std::string &hook) {
  const dt_stats &st = snap.counters;
  const dt_policy &pol = snap.policy;
  appendf(out, "dthrottle maps in %s\n", pin_dir.c_str());
  if (!hook.empty()) appendf(out, "attached: %s\n", hook.c_str());
  if (pol.interval_ns && policy_bytes(pol))
    appendf(out, "policy: rate %s/s, burst %s per source (a byte budget)\n", format_bytes(policy_rate(pol)).c_str(),
            format_bytes(static_cast<double>(policy_burst(pol))).c_str());
  else if (pol.interval_ns)
    appendf(out, "policy: rate %.6g/s, burst %llu per source\n", policy_rate(pol), policy_burst(pol));
  else appendf(out, "policy: none set (every packet passes, counted as fail-open)\n");
  if (const std::string dry = dry_run_line(snap); !dry.empty()) appendf(out, "%s\n", dry.c_str());
  appendf(out, "counters:\n");
  // Every counter with a label (abi/stats.h's DT_STATS_FIELDS); after `dropped`, what the
  // views add: the rules' would-drops and the sources in the table.
#define DT_COUNTER_LINE(field, label, metric, help) \
  if (label[0]) append_counter(out, label, st.field); \
  if (&st.field == &st.dropped) { \
    append_counter(out, "would-drop", snap.would_drop); \
    append_counter(out, "sources", snap.sources.size()); \
  }
  DT_STATS_FIELDS(DT_COUNTER_LINE)
#undef DT_COUNTER_LINE
  append_lists(out, snap.lists);
  append_capture(out, snap.capture);
}

std::string rate_text(const dt_policy &p) {
  char buf[32];
  if (policy_bytes(p)) snprintf(buf, sizeof buf, "%s/s", format_bytes(policy_rate(p)).c_str());
  else snprintf(buf, sizeof buf, "%.6g", policy_rate(p));
  return buf;
}

std::string burst_text(const dt_policy &p) {
  return policy_bytes(p) ? format_bytes(static_cast<double>(policy_burst(p))) : std::to_string(policy_burst(p));
}

// fn(level policy, "v4/24", packets the level dropped) for each prefix level of a rule.
template <typename Fn>
void for_each_level(const RuleRow &rr, Fn fn) {
  for (uint32_t i = 0; i < rr.prefix.n_v4 && i < DT_PREFIX_LEVELS; i++)
    fn(rr.prefix.v4[i], "v4/" + std::to_string(rr.prefix.v4[i].v4_key_bits), rr.prefix_drops[i]);
  for (uint32_t i = 0; i < rr.prefix.n_v6 && i < DT_PREFIX_LEVELS; i++)
    fn(rr.prefix.v6[i], "v6/" + std::to_string(rr.prefix.v6[i].v6_key_bits), rr.prefix_drops[DT_PREFIX_LEVELS + i]);
}

void append_rules_table(std::string *out, const std::vector<RuleRow> &rules) {
  if (rules.empty()) return;
  appendf(out, "\nrules:\n  %-24s %-8s %12s %10s %12s %12s %12s\n", "RULE", "ACTION", "RATE/S", "BURST", "PASSED",
          "DROPPED", "WOULD-DROP");
  for (const RuleRow &rr : rules) {
    char rate[32] = "-", burst[32] = "-";
    if (rr.policy.action == DT_ACT_THROTTLE && rr.policy.interval_ns && policy_bytes(rr.policy)) {
      snprintf(rate, sizeof rate, "%s/s", format_bytes(policy_rate(rr.policy)).c_str());
      snprintf(burst, sizeof burst, "%s", format_bytes(static_cast<double>(policy_burst(rr.policy))).c_str());
    } else if (rr.policy.action == DT_ACT_THROTTLE && rr.policy.interval_ns) {
      snprintf(rate, sizeof rate, "%.6g", policy_rate(rr.policy));
      snprintf(burst, sizeof burst, "%llu", policy_burst(rr.policy));
    }
    const std::string name =
        rr.name + ((rr.policy.flags & DT_POL_KEY_DEST) ? " (per dst)" : "") + (rr.dry_run() ? " (dry run)" : "");
    appendf(out, "  %-24s %-8s %12s %10s %12llu %12llu %12llu\n", name.c_str(), action_name(rr.policy.action), rate,
            burst, static_cast<unsigned long long>(rr.passed), static_cast<unsigned long long>(rr.dropped),
            static_cast<unsigned long long>(rr.would_drop));
    if (rr.has_match && (rr.match.proto || rr.match.flags))
      appendf(out, "    when %s\n", match_text(rr.match, rr.has_cond ? &rr.cond : nullptr).c_str());
    for_each_level(rr, [&](const dt_policy &l, const std::string &level, uint64_t drops) {
      appendf(out, "    per %-19s %-8s %12s %10s %12s %12llu\n", level.c_str(), "prefix", rate_text(l).c_str(),
              burst_text(l).c_str(), "", static_cast<unsigned long long>(drops));
    });
  }
}

void append_sources_table(std::string *out, const StatsSnapshot &snap, size_t top) {
  const std::vector<const SourceRow *> shown = sources_by_drops(snap, top);
  if (shown.empty()) return;
  appendf(out, "\n%s sources by drops:\n", top == 0 ? "all" : ("top " + std::to_string(shown.size())).c_str());
  appendf(out, "  %-43s %-16s %12s %12s %12s %10s %12s %10s\n", "SOURCE", "RULE", "PASSED", "DROPPED", "WOULD-DROP",
          "DEBITED", "TOKENS", "SEEN AGO");
  const uint64_t now = snap.taken_ns;
  for (const SourceRow *r : shown) {
    char ago[32] = "-";
    if (r->b.last_seen_ns && now >= r->b.last_seen_ns)
      snprintf(ago, sizeof ago, "%.1fs", (now - r->b.last_seen_ns) / 1e9);
    const dt_policy &rp = snap.policy_of(r->b);
    appendf(out, "  %-43s %-16s %12llu %12llu %12llu %10llu %12.3f %10s%s\n", source_text(r->key, rp).c_str(),
            snap.rule_name(r->key.rule).c_str(), static_cast<unsigned long long>(r->b.passed),
            static_cast<unsigned long long>(r->b.dropped), static_cast<unsigned long long>(r->b.would_drop),
            static_cast<unsigned long long>(r->b.debited), source_tokens(r->b, rp, now), ago,
            policy_bytes(rp) ? "  (bytes)" : "");
  }
}

// --- JSON ---

// The counters with a label, by field name; would_drop after dropped.
Json counters_json(const dt_stats &st, uint64_t would_drop) {
  Json j = Json::object();
#define DT_COUNTER_JSON(field, label, metric, help) \
  if (label[0]) j[#field] = st.field; \
  if (&st.field == &st.dropped) j["would_drop"] = would_drop;
  DT_STATS_FIELDS(DT_COUNTER_JSON)
#undef DT_COUNTER_JSON
  return j;
}

Json source_json(const StatsSnapshot &snap, const SourceRow &r) {
  const dt_policy &rp = snap.policy_of(r.b);
  const uint64_t now = snap.taken_ns;
  const double ago_s = r.b.last_seen_ns && now > r.b.last_seen_ns ? (now - r.b.last_seen_ns) / 1e9 : 0.0;
  return {{"source", key_to_string(r.key)},
          {"prefix_len", key_prefix_len(r.key, rp)},
          {"rule", snap.rule_name(r.key.rule)},
          {"passed", r.b.passed},
          {"dropped", r.b.dropped},
          {"would_drop", r.b.would_drop},
          {"debited", r.b.debited},
          {"tokens", printed_number("%.3f", source_tokens(r.b, rp, now))},
          {"last_seen_ago_s", printed_number("%.3f", ago_s)},
          {"unit", policy_bytes(rp) ? "bytes" : "packets"},      // of passed, dropped, debited, tokens
          {"prefix_bucket", dt_key_is_prefix(r.key.rule) != 0},  // a prefix budget's bucket, not a source's
          // "destination": `source` is the address the packets went to (a rule keyed by destination)
          {"key_by", dt_key_is_dest(r.key.rule) && !dt_key_is_prefix(r.key.rule) ? "destination" : "source"}};
}

Json rule_json(const RuleRow &rr) {
  Json levels = Json::array();
  for_each_level(rr, [&](const dt_policy &l, const std::string &level, uint64_t drops) {
    levels.push_back({{"level", level},
                      {"rate", printed_number("%.9g", policy_rate(l))},
                      {"burst", policy_burst(l)},
                      {"dropped", drops}});
  });
  return {{"id", rr.id},
          {"name", rr.name},
          {"action", action_name(rr.policy.action)},
          {"rate", printed_number("%.9g", policy_rate(rr.policy))},
          {"burst", policy_burst(rr.policy)},
          {"passed", rr.passed},
          {"dropped", rr.dropped},
          {"would_drop", rr.would_drop},
          {"dry_run", rr.dry_run()},
          {"unit", policy_bytes(rr.policy) ? "bytes" : "packets"},  // of rate and burst (passed/dropped: packets)
          {"key_by", (rr.policy.flags & DT_POL_KEY_DEST) ? "destination" : "source"},
          {"prefix_limits", std::move(levels)},  // its prefix budgets (level, rate, burst, dropped)
          // What it matches (null for the default rule): its source prefix and conditions.
          {"cidr", rr.has_match ? Json(rr.cidr) : Json(nullptr)},
          {"when", rr.has_match ? Json(match_text(rr.match, rr.has_cond ? &rr.cond : nullptr)) : Json(nullptr)},
          {"conditions", rr.has_match ? match_json(rr.match, rr.has_cond ? &rr.cond : nullptr) : Json(nullptr)}};
}

// "dry_run": whether every rule that could drop is in dry run, and which ones are.
Json dry_run_json(const StatsSnapshot &snap) {
  Json names = Json::array();
  size_t could_drop = 0;
  for (const RuleRow &rr : snap.rules) {
    if (rr.policy.action == DT_ACT_ALLOW) continue;
    could_drop++;
    if (rr.dry_run()) names.push_back(rr.name);
  }
  const bool all =
      snap.rules.empty() ? (snap.policy.flags & DT_POL_DRY_RUN) != 0 : could_drop > 0 && names.size() == could_drop;
  return {{"all", all}, {"rules", std::move(names)}};
}

// A status document of the agent's, under `key`, unless the file was missing or does
// not parse (it is the agent's own output: a broken one is left out, not passed on).
void add_status_document(Json *j, const char *key, const std::string &text) {
  if (text.empty()) return;
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded()) (*j)[key] = std::move(doc);
}

}  // namespace

std::vector<const SourceRow *> sources_by_drops(const StatsSnapshot &snap, size_t top) {
  std::vector<const SourceRow *> rows;
  rows.reserve(snap.sources.size());
  for (const SourceRow &r : snap.sources) rows.push_back(&r);
  std::sort(rows.begin(), rows.end(), [](const SourceRow *a, const SourceRow *b) {
    const uint64_t da = a->b.dropped + a->b.would_drop, db = b->b.dropped + b->b.would_drop;
    if (da != db) return da > db;
    if (a->b.passed != b->b.passed) return a->b.passed > b->b.passed;
    return memcmp(a->key.addr, b->key.addr, sizeof a->key.addr) < 0;
  });
  if (top != 0 && rows.size() > top) rows.resize(top);
  return rows;
}

std::string render_stats_text(const StatsSnapshot &snap, const StatsOptions &opt, const AgentStatusFiles &status) {
  std::string out;
  append_policy_and_counters(&out, snap, opt.pin_dir, status.hook);
  append_rules_table(&out, snap.rules);
  if (!status.adaptive.empty()) appendf(&out, "\n%s\n", status.adaptive.c_str());
  if (!status.escalation.empty()) appendf(&out, "\n%s", status.escalation.c_str());
  if (!status.cluster.empty()) appendf(&out, "\n%s\n", status.cluster.c_str());
  if (!status.events.empty()) appendf(&out, "\n%s\n", status.events.c_str());
  if (!status.bans.empty()) appendf(&out, "\nbans:\n%s", status.bans.c_str());
  append_sources_table(&out, snap, opt.top);
  return out;
}

std::string render_stats_json(const StatsSnapshot &snap, const StatsOptions &opt, const AgentStatusFiles &status) {
  const dt_policy &pol = snap.policy;
  Json j;
  j["pin_dir"] = opt.pin_dir;
  if (!status.hook.empty()) j["attached"] = status.hook;
  j["policy"] = {{"rate", printed_number("%.9g", policy_rate(pol))},
                 {"burst", policy_burst(pol)},
                 {"interval_ns", pol.interval_ns},
                 {"unit", policy_bytes(pol) ? "bytes" : "packets"}};
  j["sources_total"] = snap.sources.size();
  j["dry_run"] = dry_run_json(snap);
  j["counters"] = counters_json(snap.counters, snap.would_drop);
  j["lists"] = lists_json(snap.lists);
  j["capture"] = {{"captured", snap.capture.captured},
                  {"sampled_out", snap.capture.sampled_out},
                  {"ring_full", snap.capture.ring_full}};
  j["sources"] = Json::array();
  for (const SourceRow *r : sources_by_drops(snap, opt.top)) j["sources"].push_back(source_json(snap, *r));
  j["rules"] = Json::array();
  for (const RuleRow &rr : snap.rules) j["rules"].push_back(rule_json(rr));
  add_status_document(&j, "cluster", status.cluster);
  add_status_document(&j, "adaptive", status.adaptive);
  add_status_document(&j, "escalation", status.escalation);
  add_status_document(&j, "bans", status.bans);
  add_status_document(&j, "events", status.events);
  return dump_json(j) + "\n";
}

}  // namespace dt
