// cmd_stats.cpp - `agent stats`: the pinned maps as a table or as JSON.
#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fstream>
#include <sstream>

#include "cli/cli.h"
#include "common/runtime_files.h"
#include "dataplane/dataplane.h"
#include "commands/commands.h"
#include "common/address.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"
#include "commands/stats_view.h"

namespace dt {
namespace {

// A running agent's status file (cluster, adaptive rules), or "" (none, or no agent running).
std::string read_status_file(const std::string &pin_dir, const char *suffix) {
  if (!agent_running(pin_dir)) return "";  // a killed agent's last status is stale
  std::ifstream in(runtime_file(pin_dir, suffix));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// The prefix length a bucket key stands for under its rule (32/128: one address).
int key_prefix_len(const dt_key &k, const dt_policy &p) {
  const bool v6 = !addr_is_v4(k.addr);
  const int bits = v6 ? p.v6_key_bits : p.v4_key_bits;
  return bits ? bits : (v6 ? 128 : 32);
}

// "198.18.1.1", or "2001:2:0:5::/64" for a bucket that stands for a whole prefix.
std::string source_text(const dt_key &k, const dt_policy &p) {
  const int len = key_prefix_len(k, p);
  const bool v6 = !addr_is_v4(k.addr);
  return key_to_string(k) + (len < (v6 ? 128 : 32) ? "/" + std::to_string(len) : "");
}

const char *action_name(uint8_t a) {
  return a == DT_ACT_ALLOW ? "allow" : a == DT_ACT_DENY ? "deny" : "throttle";
}

void print_counter(const char *name, unsigned long long v) { printf("  %-14s %15" "llu" "\n", name, v); }

}  // namespace

int cmd_stats(int argc, char **argv) {
  StatsOptions opt;
  std::string err;
  switch (parse_stats_options(argc, argv, &opt, &err)) {
    case ParseOutcome::Help: fputs(stats_usage(), stdout); return 0;
    case ParseOutcome::Error:
      fprintf(stderr, "agent stats: %s\nTry 'agent stats --help' for more information.\n", err.c_str());
      return 2;
    case ParseOutcome::Ok: break;
  }
  PinnedMaps maps;
  if (!maps.open(opt.pin_dir, &err)) {
    fprintf(stderr, "agent stats: %s\n", err.c_str());
    return 1;
  }
  StatsSnapshot snap;
  if (!read_snapshot(maps, opt.pin_dir, &snap, &err)) {
    fprintf(stderr, "agent stats: %s\n", err.c_str());
    return 1;
  }
  const dt_stats &st = snap.counters;
  const dt_policy &pol = snap.policy;
  std::vector<SourceRow> &rows = snap.sources;
  std::sort(rows.begin(), rows.end(), [](const SourceRow &a, const SourceRow &b) {
    if (a.b.dropped != b.b.dropped) return a.b.dropped > b.b.dropped;
    if (a.b.passed != b.b.passed) return a.b.passed > b.b.passed;
    return memcmp(a.key.addr, b.key.addr, sizeof a.key.addr) < 0;
  });
  const size_t shown = opt.top == 0 ? rows.size() : std::min<size_t>(rows.size(), opt.top);
  const uint64_t now = snap.taken_ns;

  if (opt.json) {
    printf("{\"pin_dir\":\"%s\",\"policy\":{\"rate\":%.9g,\"burst\":%" "llu"
           ",\"interval_ns\":%" "llu" "},\"sources_total\":%zu,",
           opt.pin_dir.c_str(), policy_rate(pol), policy_burst(pol), pol.interval_ns, rows.size());
    printf("\"counters\":{\"passed\":%" "llu" ",\"dropped\":%" "llu" ",\"new_sources\":%" "llu"
           ",\"parse_errors\":%" "llu" ",\"non_ip\":%" "llu" ",\"fail_open\":%" "llu"
           ",\"contended\":%" "llu" ",\"debit_hits\":%" "llu" ",\"nd_exempt\":%" "llu" ",\"exempt\":%" "llu" ",\"allowed\":%" "llu" ",\"denied\":%" "llu" "},\"sources\":[",
           st.passed, st.dropped, st.new_sources, st.parse_errors, st.non_ip, st.fail_open,
           st.contended, st.debit_hits, st.nd_exempt, st.exempt, st.allowed, st.denied);
    for (size_t i = 0; i < shown; i++) {
      const auto &r = rows[i];
      const dt_policy &rp = snap.policy_of(r.b);
      printf("%s{\"source\":\"%s\",\"prefix_len\":%d,\"rule\":\"%s\",\"passed\":%" "llu" ",\"dropped\":%" "llu"
             ",\"debited\":%" "llu" ",\"tokens\":%.3f,\"last_seen_ago_s\":%.3f}",
             i ? "," : "", key_to_string(r.key).c_str(), key_prefix_len(r.key, rp), snap.rule_name(r.key.rule).c_str(),
             r.b.passed, r.b.dropped, r.b.debited, source_tokens(r.b, rp, now),
             r.b.last_seen_ns && now > r.b.last_seen_ns ? (now - r.b.last_seen_ns) / 1e9 : 0.0);
    }
    printf("],\"rules\":[");
    for (size_t i = 0; i < snap.rules.size(); i++) {
      const RuleRow &rr = snap.rules[i];
      printf("%s{\"id\":%u,\"name\":\"%s\",\"action\":\"%s\",\"rate\":%.9g,\"burst\":%llu,\"passed\":%llu,"
             "\"dropped\":%llu}",
             i ? "," : "", rr.id, rr.name.c_str(), action_name(rr.policy.action), policy_rate(rr.policy),
             policy_burst(rr.policy), static_cast<unsigned long long>(rr.passed),
             static_cast<unsigned long long>(rr.dropped));
    }
    printf("]");
    const std::string cluster = read_status_file(opt.pin_dir, kClusterStatusJson);
    if (!cluster.empty()) printf(",\"cluster\":%s", cluster.c_str());
    const std::string adaptive = read_status_file(opt.pin_dir, kAdaptiveStatusJson);
    if (!adaptive.empty()) printf(",\"adaptive\":%s", adaptive.c_str());
    printf("}\n");
    return 0;
  }

  printf("dthrottle maps in %s\n", opt.pin_dir.c_str());
  if (pol.interval_ns)
    printf("policy: rate %.6g/s, burst %" "llu" " per source\n", policy_rate(pol), policy_burst(pol));
  else
    printf("policy: none set (every packet passes, counted as fail-open)\n");
  printf("counters:\n");
  print_counter("passed", st.passed);
  print_counter("dropped", st.dropped);
  print_counter("sources", rows.size());
  print_counter("new sources", st.new_sources);
  print_counter("non-IP", st.non_ip);
  print_counter("IPv6 ND", st.nd_exempt);
  print_counter("malformed", st.parse_errors);
  print_counter("fail-open", st.fail_open);
  print_counter("contended", st.contended);
  print_counter("debited hits", st.debit_hits);
  print_counter("exempt", st.exempt);
  print_counter("allowed", st.allowed);
  print_counter("denied", st.denied);
  if (!snap.rules.empty()) {
    printf("\nrules:\n  %-24s %-8s %12s %10s %12s %12s\n", "RULE", "ACTION", "RATE/S", "BURST", "PASSED", "DROPPED");
    for (const RuleRow &rr : snap.rules) {
      char rate[32] = "-", burst[32] = "-";
      if (rr.policy.action == DT_ACT_THROTTLE && rr.policy.interval_ns) {
        snprintf(rate, sizeof rate, "%.6g", policy_rate(rr.policy));
        snprintf(burst, sizeof burst, "%llu", policy_burst(rr.policy));
      }
      printf("  %-24s %-8s %12s %10s %12llu %12llu\n", rr.name.c_str(), action_name(rr.policy.action), rate, burst,
             static_cast<unsigned long long>(rr.passed), static_cast<unsigned long long>(rr.dropped));
    }
  }
  const std::string adaptive = read_status_file(opt.pin_dir, kAdaptiveStatusText);
  if (!adaptive.empty()) printf("\n%s\n", adaptive.c_str());
  const std::string cluster = read_status_file(opt.pin_dir, kClusterStatusText);
  if (!cluster.empty()) printf("\n%s\n", cluster.c_str());
  if (shown == 0) return 0;
  printf("\n%s sources by drops:\n", opt.top == 0 ? "all" : ("top " + std::to_string(shown)).c_str());
  printf("  %-43s %-16s %12s %12s %10s %12s %10s\n", "SOURCE", "RULE", "PASSED", "DROPPED", "DEBITED", "TOKENS",
         "SEEN AGO");
  for (size_t i = 0; i < shown; i++) {
    const auto &r = rows[i];
    char ago[32] = "-";
    if (r.b.last_seen_ns && now >= r.b.last_seen_ns)
      snprintf(ago, sizeof ago, "%.1fs", (now - r.b.last_seen_ns) / 1e9);
    const dt_policy &rp = snap.policy_of(r.b);
    printf("  %-43s %-16s %12" "llu" " %12" "llu" " %10" "llu" " %12.3f %10s\n", source_text(r.key, rp).c_str(),
           snap.rule_name(r.key.rule).c_str(), r.b.passed, r.b.dropped, r.b.debited, source_tokens(r.b, rp, now), ago);
  }
  return 0;
}

}  // namespace dt
