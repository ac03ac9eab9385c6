// match.cpp - Part 1e (`bench match`): what rule matching costs per packet. dt_xdp run directly
// on one IPv4 UDP frame (198.18.0.1:40000 -> 198.19.255.254:9, 64 bytes), passing and dropping,
// under three rule sets:
//   no rules        rule 0 alone (no --rules: no trie lookup at all)
//   old conditions  four rules of 198.18.0.0/15 on proto, dport and syn only; the frame
//                   matches the fourth (one trie lookup, four candidates scanned)
//   new conditions  four rules on sport, icmp_type, tcp_flags, dst and len (the fourth,
//                   which the frame matches, checks dst and len: one array lookup more)
// Each rule set is parsed and compiled as the agent does (parse_rules, compile_rules). Rounds
// alternate the targets; every run's verdict and counters are checked.
#include <linux/bpf.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/measure.h"
#include "bench/parts.h"
#include "bench/programs.h"
#include "rules/rules.h"

namespace dt::bench {
namespace {

// A rule of 198.18.0.0/15 named `name` with `conditions` (TOML lines), and with a budget
// no frame of the bench reaches (rate 100, burst 100) unless it is the `last` one, whose
// budget load() adds.
std::string rule(const char *name, const char *conditions) {
  const bool last = strcmp(name, "last") == 0;
  return std::string("[[rule]]\nname = \"") + name + "\"\ncidr = \"198.18.0.0/15\"\n" + conditions +
         (last ? "" : "rate = 100\nburst = 100\n");
}

// Rules whose conditions the frame fails, then `last`, which it matches.
std::string old_rules() {
  return "version = 1\n" + rule("web", "proto = \"tcp\"\ndport = \"80-443\"\nsyn = true\n") +
         rule("dns", "proto = \"udp\"\ndport = 53\n") + rule("ntp", "proto = \"udp\"\ndport = 123\n") +
         rule("last", "proto = \"udp\"\ndport = \"1-1000\"\n");
}

std::string new_rules() {
  return "version = 1\n" + rule("web", "proto = \"tcp\"\ntcp_flags = \"SYN,!ACK\"\n") +
         rule("ping", "proto = \"icmp\"\nicmp_type = 8\n") + rule("ntp", "proto = \"udp\"\nsport = 123\n") +
         rule("last", "proto = \"udp\"\nsport = \"1024-65535\"\ndst = \"198.19.255.0/24\"\nlen = \"0-100\"\n");
}

// A dthrottle object whose rules are `text` plus the last rule's budget ("": rule 0 only).
struct Target {
  const char *name;
  bool pass;
  Throttle th;
  int fd() const { return th.fd.xdp; }
};

void load(Throttle &th, const std::string &text, bool pass) {
  if (text.empty()) return;
  const std::string budget = pass ? "rate = 1000000\nburst = 1000000000\n" : "rate = 0.000001\nburst = 1\n";
  LoadedRules lr;
  lr.set = default_rules(0, 0);
  std::string err;
  if (!parse_rules(text + budget, "bench.toml", &lr.set, &err) || !compile_rules(lr.set, &lr.compiled, &err))
    die("rules: %s", err.c_str());
  if (int rc = publish_rules(th.rule_maps(), lr.compiled.policies, lr.compiled.lpm, {}, {}, lr.compiled.cond); rc != 0)
    die("publish_rules: %d", rc);
}

}  // namespace

void match_part() {
  constexpr uint32_t kRepeat = 3'000'000;
  constexpr int kSets = 3;
  const dt_policy pass = policy_or_die(1e6, DT_BURST_MAX), drop = policy_or_die(DT_RATE_MIN, 1);
  const std::string texts[3] = {"", old_rules(), new_rules()};
  const char *labels[3] = {"no rules", "old conditions", "new conditions"};
  std::vector<Target> t;
  t.reserve(6);
  for (int s = 0; s < kSets; s++)
    for (bool p : {true, false}) {
      t.push_back(Target{labels[s], p, Throttle(kBucketCapacity, p ? pass : drop)});
      load(t.back().th, texts[s], p);
    }
  const std::vector<uint8_t> frame = make_frame(false);
  uint32_t retval = 0;
  for (Target &x : t) run_direct(x.fd(), frame, 1000, &retval);  // buckets made, drop's emptied
  std::vector<double> ns[6];
  for (int round = 0; round < kRounds; round++)
    for (size_t i = 0; i < t.size(); i++) {
      const size_t k = round % 2 ? t.size() - 1 - i : i;
      const dt_stats before = t[k].th.stats();
      ns[k].push_back(run_direct(t[k].fd(), frame, kRepeat, &retval));
      const dt_stats after = t[k].th.stats();
      const uint64_t on_path = t[k].pass ? after.passed - before.passed : after.dropped - before.dropped;
      if (retval != (t[k].pass ? XDP_PASS : XDP_DROP) || on_path != kRepeat)
        die("%s %s: verdict %u, %llu of %u frames on the measured path", t[k].name, t[k].pass ? "PASS" : "DROP", retval,
            static_cast<unsigned long long>(on_path), kRepeat);
    }
  printf(
      "\nPart 1e: rule matching, one IPv4 source (dt_xdp, ns per frame, median of %d; the frame matches the\n"
      "  4th rule of its prefix: one trie lookup and a scan of 4 candidates)\n",
      kRounds);
  printf("  %-16s %8s %8s   %s\n", "rule set", "PASS", "DROP", "vs old conditions");
  const double old_pass = median(ns[2]), old_drop = median(ns[3]);
  for (int s = 0; s < kSets; s++) {
    const double p = median(ns[2 * s]), d = median(ns[2 * s + 1]);
    printf("  %-16s %8.1f %8.1f   PASS %.2fx  DROP %.2fx\n", labels[s], p, d, p / old_pass, d / old_drop);
  }
}

}  // namespace dt::bench
