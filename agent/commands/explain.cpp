// explain.cpp - reading and rendering `agent explain ADDR`.
#include "commands/explain.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "bans/ban_render.h"
#include "commands/stats_view.h"
#include "common/address.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/parse_values.h"
#include "dataplane/list_maps.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"
#include "dthrottle/bucket.h"

namespace dt {
namespace {

// True if the first `len` bits of a and b are equal.
bool same_prefix(const uint8_t *a, const uint8_t *b, uint32_t len) {
  for (uint32_t bit = 0; bit < len; bit++)
    if (((a[bit / 8] ^ b[bit / 8]) >> (7 - bit % 8)) & 1) return false;
  return true;
}

// The longest prefix of the trie that holds `addr`, and its rule set (what the packet
// path's one LPM lookup finds). False if none does.
bool longest_prefix(int trie_fd, const uint8_t *addr, dt_lpm_key *found, dt_rule_set *set) {
  dt_lpm_key cur{}, next{};
  const dt_lpm_key *prev = nullptr;
  bool any = false;
  while (bpf_map_get_next_key(trie_fd, prev, &next) == 0) {
    if (same_prefix(next.addr, addr, next.prefixlen) && (!any || next.prefixlen > found->prefixlen)) {
      *found = next;
      any = true;
    }
    cur = next;
    prev = &cur;
  }
  return any && bpf_map_lookup_elem(trie_fd, found, set) == 0;
}

std::string rule_name(int names_fd, uint32_t id) {
  if (std::string name = read_rule_name(names_fd, id); !name.empty()) return name;
  return id == DT_RULE_DEFAULT ? "default" : "rule " + std::to_string(id);
}

// The prefix budget levels of rule r for the address's family, with their buckets.
void read_levels(const PinnedMaps &m, const dt_key &addr, ExplainRule *r) {
  dt_prefix_policy pp{};
  if (read_live_prefix_policy(m.prefix_policy, m.config, r->id, &pp) != 0) return;
  const bool v6 = !addr_is_v4(addr.addr);
  const uint32_t n = v6 ? pp.n_v6 : pp.n_v4;
  for (uint32_t i = 0; i < n && i < DT_PREFIX_LEVELS; i++) {
    ExplainLevel l;
    l.policy = v6 ? pp.v6[i] : pp.v4[i];
    const uint32_t bits = v6 ? l.policy.v6_key_bits : l.policy.v4_key_bits;
    l.level = (v6 ? "v6/" : "v4/") + std::to_string(bits);
    dt_key_for_level(&l.key, &addr, r->id, bits, v6);
    l.has_bucket = bpf_map_lookup_elem(m.buckets, &l.key, &l.bucket) == 0;
    r->levels.push_back(l);
  }
}

// One rule as it applies to the address: live policy, bucket key, bucket (if any).
ExplainRule explain_rule(const PinnedMaps &m, const dt_key &addr, uint32_t id, const std::string &when) {
  ExplainRule r;
  r.id = id;
  r.name = rule_name(m.rule_names, id);
  r.when = when;
  read_live_policy(m.policy, m.config, id, &r.policy);
  r.key = addr;
  dt_key_for_rule(&r.key, &r.policy, id, !addr_is_v4(addr.addr));  // keyed by destination: the address's as one
  if (r.policy.action == DT_ACT_THROTTLE && r.policy.interval_ns)
    r.has_bucket = read_bucket(m.buckets, m.drop_pending, r.key, &r.bucket) == 0;
  if ((r.policy.flags & DT_POL_PREFIX) && m.prefix_policy >= 0) read_levels(m, addr, &r);
  return r;
}

// Every live rule keyed by destination, with the address's bucket as a destination.
void read_dest_rules(const PinnedMaps &m, Explanation *e) {
  for (uint32_t id = 0; id < DT_MAX_RULES; id++) {
    dt_policy p{};
    if (read_live_policy(m.policy, m.config, id, &p) != 0 || !(p.flags & DT_POL_KEY_DEST)) continue;
    if (p.action != DT_ACT_THROTTLE || !p.interval_ns) continue;
    e->as_destination.push_back(explain_rule(m, e->addr, id, "to this address"));
    e->as_destination.back().as_destination = true;
  }
}

// The candidates of the address's prefix in the live rules trie (rules on), else rule 0.
void read_rules(const PinnedMaps &m, const std::string &pin_dir, Explanation *e) {
  dt_config cfg{};
  uint32_t zero = 0;
  bpf_map_lookup_elem(m.config, &zero, &cfg);
  e->rules_on = cfg.flags & DT_CFG_RULES;
  dt_lpm_key found{};
  dt_rule_set set{};
  int trie = e->rules_on ? bpf_obj_get((pin_dir + "/" + ((cfg.bank & 1) ? DT_MAP_RULES1 : DT_MAP_RULES0)).c_str()) : -1;
  if (trie >= 0 && longest_prefix(trie, e->addr.addr, &found, &set)) {
    // The compiler closes each family with a catch-all (0.0.0.0/0, ::/0): no rule's prefix.
    const bool catch_all = found.prefixlen == 0 || (found.prefixlen == 96 && addr_is_v4(found.addr));
    if (!catch_all) e->prefix = lpm_prefix_text(found);
    for (uint32_t i = 0; i < set.count && i < DT_MAX_CANDIDATES; i++) {
      dt_rule_cond cond{};
      const bool has_cond =
          (set.m[i].flags & DT_MATCH_COND) && read_live_rule_cond(m.rule_cond, m.config, set.m[i].rule, &cond) == 0;
      e->rules.push_back(explain_rule(m, e->addr, set.m[i].rule, match_text(set.m[i], has_cond ? &cond : nullptr)));
      e->rules.back().conditions = match_json(set.m[i], has_cond ? &cond : nullptr);
    }
  }
  if (trie >= 0) close(trie);
  if (e->rules.empty()) e->rules.push_back(explain_rule(m, e->addr, DT_RULE_DEFAULT, "any packet"));
}

const char *action_word(uint8_t a) { return a == DT_ACT_ALLOW ? "allow" : a == DT_ACT_DENY ? "deny" : "throttle"; }

std::string amount(double v, bool bytes) {
  if (bytes) return format_bytes(v);
  char buf[32];
  snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

int key_bits(const ExplainRule &r) {
  const bool v6 = !addr_is_v4(r.key.addr);
  const int bits = v6 ? r.policy.v6_key_bits : r.policy.v4_key_bits;
  return bits ? bits : (v6 ? 128 : 32);
}

}  // namespace

bool read_explanation(const PinnedMaps &maps, const std::string &pin_dir, const std::string &address, Explanation *out,
                      std::string *err) {
  *out = Explanation{};
  out->address = address;
  if (!key_from_string(address, &out->addr)) {
    *err = "'" + address + "' is not an IPv4 or IPv6 address";
    return false;
  }
  read_rules(maps, pin_dir, out);
  read_dest_rules(maps, out);
  const ListMapFds lists{maps.lists_v4, maps.lists_v6};
  out->allow_listed = list_holds(lists, DT_LIST_ALLOW, out->addr.addr) == 1;
  out->deny_listed = list_holds(lists, DT_LIST_DENY, out->addr.addr) == 1;
  dt_config cfg{};
  uint32_t zero = 0;
  out->dry_run = bpf_map_lookup_elem(maps.config, &zero, &cfg) == 0 && (cfg.flags & DT_CFG_DRY_RUN);
  out->now_ns = mono_now_ns();
  return true;
}

namespace {

std::string policy_text(const ExplainRule &r) {
  const dt_policy &p = r.policy;
  std::string out = action_word(p.action);
  if (p.action == DT_ACT_THROTTLE && p.interval_ns) {
    const bool bytes = policy_bytes(p);
    out += " " + amount(policy_rate(p), bytes) + "/s burst " + amount(static_cast<double>(policy_burst(p)), bytes) +
           ", a bucket per " + ((p.flags & DT_POL_KEY_DEST) ? "destination /" : "/") + std::to_string(key_bits(r));
  } else if (p.action == DT_ACT_THROTTLE) {
    out += " (no policy: packets pass, fail-open)";
  }
  if (p.flags & DT_POL_DRY_RUN) out += ", dry run";
  return out;
}

std::string bucket_text(const ExplainRule &r, uint64_t now_ns) {
  const dt_policy &p = r.policy;
  char buf[512];
  if (p.action == DT_ACT_ALLOW) return "passes without a bucket (allow)";
  if (p.action == DT_ACT_DENY)
    return (p.flags & DT_POL_DRY_RUN) ? "would be dropped (deny, in dry run: passes)" : "dropped (deny)";
  if (!p.interval_ns) return "no policy in force: its packets pass (fail-open)";
  const bool bytes = policy_bytes(p);
  const std::string key = bucket_key_text(r.key) + "/" + std::to_string(key_bits(r));
  if (!r.has_bucket)
    return "no bucket for " + key + " (never seen, or evicted): it would start full, " +
           amount(static_cast<double>(policy_burst(p)), bytes) + (bytes ? "" : " tokens");
  const dt_bucket &b = r.bucket;
  const double ago = now_ns > b.last_seen_ns ? (now_ns - b.last_seen_ns) / 1e9 : 0;
  snprintf(buf, sizeof buf,
           "bucket %s: %.3f of %llu %s now; passed %llu, dropped %llu, debited %llu (peers' hits), would-drop %llu; "
           "last seen %.1f s ago; %s",
           key.c_str(), source_tokens(b, p, now_ns), policy_burst(p), bytes ? "bytes" : "tokens",
           static_cast<unsigned long long>(b.passed), static_cast<unsigned long long>(b.dropped),
           static_cast<unsigned long long>(b.debited), static_cast<unsigned long long>(b.would_drop), ago,
           (p.flags & DT_POL_DRY_RUN) ? "dry run (nothing dropped)" : "enforcing");
  return buf;
}

// A prefix level's budget and bucket: its packets share it with the whole prefix.
std::string level_text(const ExplainLevel &l, uint64_t now_ns) {
  const dt_policy &p = l.policy;
  const bool bytes = policy_bytes(p);
  const std::string key = key_to_string(l.key) + "/" + l.level.substr(3);
  std::string out = l.level + " prefix (" + amount(policy_rate(p), bytes) + "/s burst " +
                    amount(static_cast<double>(policy_burst(p)), bytes) + ", shared by every source of " + key + "): ";
  if (!l.has_bucket) return out + "no bucket yet, it would start full";
  char buf[160];
  snprintf(buf, sizeof buf, "%.3f of %llu %s now; passed %llu, debited %llu (peers' hits)",
           source_tokens(l.bucket, p, now_ns), policy_burst(p), bytes ? "bytes" : "tokens",
           static_cast<unsigned long long>(l.bucket.passed), static_cast<unsigned long long>(l.bucket.debited));
  return out + buf;
}

bool dest_keyed(const ExplainRule &r) {
  return r.policy.action == DT_ACT_THROTTLE && r.policy.interval_ns && (r.policy.flags & DT_POL_KEY_DEST);
}

// A rule keyed by destination, as it applies to a source: no bucket of its own.
std::string dest_keyed_text(const ExplainRule &r) {
  return "keyed by destination: its packets take their tokens from the bucket of the address they go to (one per "
         "destination /" +
         std::to_string(key_bits(r)) + ", shared by every source), not from a bucket of its own";
}

std::string peers_text(const ExplainPeers &p) {
  using S = ExplainPeers::State;
  switch (p.state) {
    case S::NotAsked: return "not asked (--watch 0)";
    case S::NoAgent: return "unknown: no agent is running with these maps";
    case S::NoCluster: return "none: the agent runs alone (no --peers, --hub or --listen)";
    case S::NoAnswer: return "unknown: the agent did not answer in time (see its log)";
    case S::Answered: break;
  }
  char head[64];
  snprintf(head, sizeof head, "in %.1f s of watching their reports, ", p.window_ms / 1e3);
  if (p.reports.empty()) return std::string(head) + "no peer reported it";
  std::string out = head;
  for (size_t i = 0; i < p.reports.size(); i++) {
    const auto &r = p.reports[i];
    out += (i ? "; " : "") + r.node + " reported " + std::to_string(r.hits) + " hits (rule " + r.rule + ", " +
           std::to_string(r.reports) + " reports)";
  }
  return out;
}

const char *peers_state_name(ExplainPeers::State s) {
  using S = ExplainPeers::State;
  return s == S::NotAsked    ? "not_asked"
         : s == S::NoAgent   ? "no_agent"
         : s == S::NoCluster ? "no_cluster"
         : s == S::NoAnswer  ? "no_answer"
                             : "answered";
}

Json rule_json(const ExplainRule &r, uint64_t now_ns) {
  const dt_policy &p = r.policy;
  Json j = {{"id", r.id},
            {"name", r.name},
            {"when", r.when},
            {"conditions", r.conditions},
            {"action", action_word(p.action)},
            {"dry_run", (p.flags & DT_POL_DRY_RUN) != 0}};
  if (p.action != DT_ACT_THROTTLE || !p.interval_ns) return j;
  j["rate"] = printed_number("%.9g", policy_rate(p));
  j["burst"] = policy_burst(p);
  j["unit"] = policy_bytes(p) ? "bytes" : "packets";
  j["key_by"] = (p.flags & DT_POL_KEY_DEST) ? "destination" : "source";
  j["key_prefix_len"] = key_bits(r);
  if ((p.flags & DT_POL_KEY_DEST) && !r.as_destination) {
    j["bucket"] = nullptr;  // its packets use their destinations' buckets (the rules' as_destination)
    return j;
  }
  j["key"] = key_to_string(r.key);
  if (!r.levels.empty()) {
    Json levels = Json::array();
    for (const ExplainLevel &l : r.levels) {
      Json lj = {{"level", l.level},
                 {"rate", printed_number("%.9g", policy_rate(l.policy))},
                 {"burst", policy_burst(l.policy)},
                 {"key", key_to_string(l.key)},
                 {"bucket", nullptr}};
      if (l.has_bucket)
        lj["bucket"] = {{"tokens", printed_number("%.3f", source_tokens(l.bucket, l.policy, now_ns))},
                        {"passed", l.bucket.passed},
                        {"debited", l.bucket.debited}};
      levels.push_back(std::move(lj));
    }
    j["prefix_levels"] = std::move(levels);
  }
  if (!r.has_bucket) {
    j["bucket"] = nullptr;
    return j;
  }
  const dt_bucket &b = r.bucket;
  j["bucket"] = {
      {"tokens", printed_number("%.3f", source_tokens(b, p, now_ns))},
      {"passed", b.passed},
      {"dropped", b.dropped},
      {"debited", b.debited},
      {"would_drop", b.would_drop},
      {"last_seen_ago_s", printed_number("%.3f", now_ns > b.last_seen_ns ? (now_ns - b.last_seen_ns) / 1e9 : 0.0)}};
  return j;
}

}  // namespace

std::string render_explanation_text(const Explanation &e) {
  std::string out = e.address + ": ";
  if (e.allow_listed) out += "on the allow list: passes whatever the rules below say\n" + e.address + ": ";
  else if (e.deny_listed)
    out += std::string("on the deny list: ") + (e.dry_run ? "would be dropped (dry run), " : "dropped ") +
           "before the rules below\n" + e.address + ": ";
  if (!e.rules_on) out += "no --rules: every packet uses the default rule\n";
  else if (e.prefix.empty()) out += "no prefix of the live rules holds it: the default rule applies\n";
  else out += "prefix " + e.prefix + " of the live rules; its rules, the first whose conditions hold decides:\n";
  for (const ExplainRule &r : e.rules) {
    char line[256];
    snprintf(line, sizeof line, "  %-22s -> rule %s: %s\n", r.when.c_str(), r.name.c_str(), policy_text(r).c_str());
    out += line;
  }
  for (const ExplainRule &r : e.rules) {
    out += "  rule " + r.name + ": " + (dest_keyed(r) ? dest_keyed_text(r) : bucket_text(r, e.now_ns)) + "\n";
    for (const ExplainLevel &l : r.levels) out += "  rule " + r.name + " per " + level_text(l, e.now_ns) + "\n";
  }
  for (const ExplainRule &r : e.as_destination)
    out += "  as a destination of rule " + r.name + " (" + policy_text(r) + "): " + bucket_text(r, e.now_ns) + "\n";
  if (e.bans_read) out += "  ban: " + (e.ban ? ban_explain_text(*e.ban, e.now_ns) : std::string("none")) + "\n";
  if (e.verified_read) out += "  verified (SYN cookies): " + verified_text(e) + "\n";
  out += "  peers: " + peers_text(e.peers) + "\n";
  return out;
}

void read_verified_source(const std::string &pin_dir, Explanation *e) {
  const int fd = bpf_obj_get((pin_dir + "/" + DT_MAP_VERIFIED).c_str());
  if (fd < 0) return;
  dt_key k = e->addr;
  k.rule = addr_is_v4(k.addr) ? DT_VERIFIED_V4 : DT_VERIFIED_V6;
  dt_verified v{};
  e->verified_read = true;
  if (bpf_map_lookup_elem(fd, &k, &v) == 0) e->verified = v;
  close(fd);
}

std::string verified_text(const Explanation &e) {
  if (!e.verified) return "no (its SYNs meet the prefix budgets; a cookie answers them while those are spent)";
  const std::string hits = std::to_string(e.verified->hits) + " packets skipped a prefix budget";
  if (e.verified->expires_ns <= e.now_ns) return "expired (" + hits + "): a cookie verifies it again";
  return "yes, for " + format_remaining(e.verified->expires_ns - e.now_ns) + " more (" + hits +
         "): its SYNs skip the prefix budgets of syn_cookies rules";
}

std::string render_explanation_json(const Explanation &e) {
  Json rules = Json::array(), as_destination = Json::array();
  for (const ExplainRule &r : e.rules) rules.push_back(rule_json(r, e.now_ns));
  for (const ExplainRule &r : e.as_destination) as_destination.push_back(rule_json(r, e.now_ns));
  Json reports = Json::array();
  for (const auto &r : e.peers.reports)
    reports.push_back({{"node", r.node}, {"rule", r.rule}, {"hits", r.hits}, {"reports", r.reports}});
  Json peers = {{"state", peers_state_name(e.peers.state)}};
  if (e.peers.state == ExplainPeers::State::Answered) {
    peers["window_ms"] = e.peers.window_ms;
    peers["reports"] = std::move(reports);
  }
  Json j = {{"address", e.address},
            {"rules_file", e.rules_on},
            {"lists", {{"allow", e.allow_listed}, {"deny", e.deny_listed}}},
            {"prefix", e.prefix.empty() ? Json(nullptr) : Json(e.prefix)},
            {"rules", std::move(rules)},
            {"as_destination", std::move(as_destination)},
            {"peers", std::move(peers)}};
  if (e.bans_read) j["ban"] = e.ban ? ban_json(*e.ban, e.now_ns) : Json(nullptr);
  if (e.verified_read)
    j["verified"] = !e.verified
                        ? Json(nullptr)
                        : Json{{"verified", e.verified->expires_ns > e.now_ns},
                               {"expires_in_ms",
                                e.verified->expires_ns > e.now_ns ? (e.verified->expires_ns - e.now_ns) / 1000000 : 0},
                               {"hits", e.verified->hits}};
  return dump_json(j) + "\n";
}

}  // namespace dt
