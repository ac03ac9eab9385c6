// test_rules_compile.cpp - a rules file in the kernel's form (LPM entries, policies), the
// loaded rule set (names, ids kept across reloads, dry run) and its one-line summary.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <string>
#include <vector>

#include "rules_test_util.h"

namespace {

using namespace rules_test;

TEST(RulesCompile, OnlyTheDefaultRuleHasNoTrie) {
  const dt::CompiledRules c = compiled("version = 1\n");
  EXPECT_TRUE(c.lpm.empty()) << "without rules every packet takes rule 0 without a lookup";
  ASSERT_EQ(c.policies.size(), 1u);
  EXPECT_EQ(c.policies[0].interval_ns, 10'000'000u);
}

TEST(RulesCompile, CandidatesOwnThenInheritedThenDefault) {
  const std::string text = "version = 1\n" +
                           rule("wide-udp", "198.18.0.0/16", "proto = \"udp\"\naction = \"deny\"\n") +  // 1
                           rule("net", "198.18.5.0/24", "action = \"allow\"\n") +                       // 2
                           rule("wide", "198.18.0.0/16") +                                              // 3
                           rule("host", "198.18.5.7") +                                                 // 4
                           rule("net-tcp", "198.18.5.0/24", "proto = \"tcp\"\naction = \"deny\"\n") +   // 5
                           rule("other", "198.18.9.0/24") +                                             // 6
                           rule("top", "198.18.0.0/15") +                                               // 7
                           rule("v6", "2001:2::/48");                                                   // 8
  const dt::CompiledRules c = compiled(text);
  EXPECT_EQ(candidates(c, "0.0.0.0/0"), (Ids{0}));
  EXPECT_EQ(candidates(c, "198.18.0.0/15"), (Ids{7, 0}));
  EXPECT_EQ(candidates(c, "198.18.0.0/16"), (Ids{1, 3, 7, 0})) << "own in file order, then the /15's";
  EXPECT_EQ(candidates(c, "198.18.5.0/24"), (Ids{2, 5, 1, 3, 7, 0})) << "own in file order, then the /16's";
  EXPECT_EQ(candidates(c, "198.18.5.7/32"), (Ids{4, 2, 5, 1, 3, 7, 0})) << "inherits from the nearest: the /24";
  EXPECT_EQ(candidates(c, "198.18.9.0/24"), (Ids{6, 1, 3, 7, 0})) << "a sibling /24 inherits nothing of 198.18.5.0/24";
  EXPECT_EQ(candidates(c, "::/0"), (Ids{0}));
  EXPECT_EQ(candidates(c, "2001:2::/48"), (Ids{8, 0}));
  EXPECT_EQ(c.lpm.size(), 8u) << "two family roots and six distinct rule prefixes";
}

TEST(RulesCompile, FamiliesAreKeptApart) {
  // An IPv6 ::/0 rule must not apply to IPv4 sources, which sit in ::ffff:0:0/96 of the trie.
  const dt::CompiledRules v6 = compiled("version = 1\n" + rule("all6", "::/0"));
  EXPECT_EQ(candidates(v6, "::/0"), (Ids{1, 0}));
  EXPECT_EQ(candidates(v6, "0.0.0.0/0"), (Ids{0})) << "the IPv4 root must not inherit the IPv6 ::/0 rule";
  EXPECT_EQ(v6.lpm.size(), 2u);

  const dt::CompiledRules v4 = compiled("version = 1\n" + rule("all4", "0.0.0.0/0") + rule("net6", "2001:2:0:1::/64"));
  EXPECT_EQ(candidates(v4, "0.0.0.0/0"), (Ids{1, 0}));
  EXPECT_EQ(candidates(v4, "::/0"), (Ids{0}));
  EXPECT_EQ(candidates(v4, "2001:2:0:1::/64"), (Ids{2, 0})) << "an IPv6 prefix inherits nothing from an IPv4 rule";
  const dt_lpm_key root4 = lpm_key("0.0.0.0/0");
  EXPECT_EQ(root4.prefixlen, 96u);
}

TEST(RulesCompile, MatchConditions) {
  const dt::CompiledRules c =
      compiled("version = 1\n" +
               rule("syn", "198.18.1.0/24", "proto = \"tcp\"\ndport = \"80-443\"\nsyn = true\nrate = 1\nburst = 1\n") +
               rule("dns", "198.18.1.0/24", "proto = \"udp\"\ndport = 53\naction = \"allow\"\n") +
               rule("ping", "2001:2::/48", "proto = \"icmp\"\naction = \"deny\"\n"));
  const dt_rule_match *syn = match_of(c, "198.18.1.0/24", 1);
  ASSERT_NE(syn, nullptr);
  EXPECT_EQ(syn->proto, IPPROTO_TCP);
  EXPECT_EQ(syn->flags, DT_MATCH_TCP_FLAGS | DT_MATCH_PORTS);
  EXPECT_EQ(syn->dport_lo, 80);
  EXPECT_EQ(syn->dport_hi, 443);
  const dt_rule_match *dns = match_of(c, "198.18.1.0/24", 2);
  ASSERT_NE(dns, nullptr);
  EXPECT_EQ(dns->proto, IPPROTO_UDP);
  EXPECT_EQ(dns->flags, DT_MATCH_PORTS);
  EXPECT_EQ(dns->dport_lo, 53);
  EXPECT_EQ(dns->dport_hi, 53);
  const dt_rule_match *ping = match_of(c, "2001:2::/48", 3);
  ASSERT_NE(ping, nullptr);
  EXPECT_EQ(ping->proto, IPPROTO_ICMPV6);
  EXPECT_EQ(ping->flags, 0);
  const dt_rule_match *def = match_of(c, "198.18.1.0/24", 0);
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def->proto, 0) << "the default rule matches anything";
  EXPECT_EQ(def->flags, 0);
}

TEST(RulesCompile, AtMostEightCandidates) {
  // Seven rules on one prefix plus the default: exactly the limit.
  std::string seven = "version = 1\n";
  for (int i = 1; i <= 7; i++) seven += rule("r" + std::to_string(i), "198.18.1.0/24");
  EXPECT_EQ(candidates(compiled(seven), "198.18.1.0/24"), (Ids{1, 2, 3, 4, 5, 6, 7, 0}));

  dt::RuleSet rs = dt::default_rules(100, 50);
  std::string err;
  dt::CompiledRules c;
  ASSERT_TRUE(dt::parse_rules(seven + rule("r8", "198.18.1.0/24"), kOrigin, &rs, &err)) << err;
  EXPECT_FALSE(dt::compile_rules(rs, &c, &err));
  EXPECT_EQ(err, "r.toml: too many rules apply to 198.18.1.0/24 (9 with the default; at most 8)");

  // Inherited candidates count too: 4 on the /16 and 4 on a /24 inside it.
  std::string nested = "version = 1\n";
  for (int i = 1; i <= 4; i++) nested += rule("w" + std::to_string(i), "198.18.0.0/16");
  for (int i = 1; i <= 4; i++) nested += rule("n" + std::to_string(i), "198.18.7.0/24");
  ASSERT_TRUE(dt::parse_rules(nested, kOrigin, &rs, &err)) << err;
  EXPECT_FALSE(dt::compile_rules(rs, &c, &err));
  EXPECT_EQ(err, "r.toml: too many rules apply to 198.18.7.0/24 (9 with the default; at most 8)");

  std::string v6 = "version = 1\n";
  for (int i = 1; i <= 8; i++) v6 += rule("s" + std::to_string(i), "::/0");
  ASSERT_TRUE(dt::parse_rules(v6, kOrigin, &rs, &err)) << err;
  EXPECT_FALSE(dt::compile_rules(rs, &c, &err));
  EXPECT_EQ(err, "r.toml: too many rules apply to ::/0 (9 with the default; at most 8)");
}

TEST(RulesCompile, Policies) {
  const dt::CompiledRules c = compiled(
      "version = 1\n" + rule("t4", "198.18.1.0/24", "rate = 4\nburst = 10\nkey_prefix = 24\n") +
      rule("ok", "198.18.2.0/24", "action = \"allow\"\n") + rule("no", "198.18.3.0/24", "action = \"deny\"\n") +
      rule("t6", "2001:2:0:100::/56", "rate = 0.5\nburst = 3\nkey_prefix = 56\n") +
      rule("t6d", "2001:2:0:200::/56", "rate = 1000\nburst = 1\n"));
  ASSERT_EQ(c.policies.size(), 6u);
  const dt_policy &d = c.policies[0];
  EXPECT_EQ(d.action, DT_ACT_THROTTLE);
  EXPECT_EQ(d.interval_ns, 10'000'000u) << "default 100/s";
  EXPECT_EQ(d.burst_ns, 50u * 10'000'000u);
  EXPECT_EQ(d.v4_key_bits, 32);
  EXPECT_EQ(d.v6_key_bits, 64) << "the default rule keys IPv6 per /64";

  const dt_policy &t4 = c.policies[1];
  EXPECT_EQ(t4.action, DT_ACT_THROTTLE);
  EXPECT_EQ(t4.interval_ns, 250'000'000u);
  EXPECT_EQ(t4.burst_ns, 10u * 250'000'000u);
  EXPECT_EQ(t4.v4_key_bits, 24);
  EXPECT_EQ(t4.v6_key_bits, 64);

  EXPECT_EQ(c.policies[2].action, DT_ACT_ALLOW);
  EXPECT_EQ(c.policies[2].interval_ns, 0u);
  EXPECT_EQ(c.policies[3].action, DT_ACT_DENY);
  EXPECT_EQ(c.policies[3].interval_ns, 0u);

  const dt_policy &t6 = c.policies[4];
  EXPECT_EQ(t6.interval_ns, 2'000'000'000u);
  EXPECT_EQ(t6.burst_ns, 6'000'000'000u);
  EXPECT_EQ(t6.v6_key_bits, 56);
  EXPECT_EQ(t6.v4_key_bits, 32);
  EXPECT_EQ(c.policies[5].v6_key_bits, 64) << "IPv6 rules key per /64 unless told";
  EXPECT_EQ(c.policies[5].interval_ns, 1'000'000u);

  // Without --rate the default rule lets unmatched sources pass.
  const dt::CompiledRules open = compiled("version = 1\n" + rule("no", "198.18.3.0/24"), 0, 0);
  EXPECT_EQ(open.policies[0].action, DT_ACT_ALLOW);
  EXPECT_EQ(open.policies[0].interval_ns, 0u);
}

TEST(RulesLoad, NamesThrottlesAndDescription) {
  const std::string text =
      "version = 1\n" + rule("a", "198.18.1.0/24", "rate = 1\nburst = 1\n") +
      rule("b", "198.18.2.0/24", "action = \"allow\"\n") + rule("c", "198.18.3.0/24") +
      rule("d", "2001:2::/48", "rate = 2\nburst = 2\n") +
      "[[tag]]\nprefix = \"\"\nrate = 1\nburst = 1\n[[tag]]\nprefix = \"x\"\nrate = 1\nburst = 1\n";
  RulesFile file(text);
  dt::LoadedRules r;
  std::string err;
  ASSERT_TRUE(dt::load_rules(100, 50, file.path(), &r, &err)) << err;
  EXPECT_EQ(r.names, (std::vector<std::string>{"default", "a", "b", "c", "d"}));
  EXPECT_EQ(r.throttles, (std::vector<bool>{true, true, false, false, true}));
  EXPECT_EQ(r.compiled.policies.size(), 5u);
  EXPECT_EQ(dt::describe_rules(r), "4 packet rules (2 throttle, 1 allow, 1 deny), 2 tag rules, default 100/s burst 50");

  dt::LoadedRules none;
  ASSERT_TRUE(dt::load_rules(0, 0, "", &none, &err)) << err;
  EXPECT_EQ(none.names, (std::vector<std::string>{"default"}));
  EXPECT_EQ(none.throttles, (std::vector<bool>{false}));
  EXPECT_TRUE(none.compiled.lpm.empty());
  EXPECT_EQ(dt::describe_rules(none),
            "0 packet rules (0 throttle, 0 allow, 0 deny), 0 tag rules, default none (unmatched sources pass)");

  dt::LoadedRules fractional;
  ASSERT_TRUE(dt::load_rules(2.5, 7, "", &fractional, &err)) << err;
  EXPECT_EQ(dt::describe_rules(fractional),
            "0 packet rules (0 throttle, 0 allow, 0 deny), 0 tag rules, default 2.5/s burst 7");

  EXPECT_FALSE(dt::load_rules(100, 50, "/nonexistent/dthrottle-rules.toml", &none, &err));
  EXPECT_EQ(none.names.size(), 1u) << "a failed load leaves *out as it was";
}

// A reload keeps a rule's id by name: its buckets and counters stay its own.
TEST(RulesReload, IdsAreStableByName) {
  RulesFile file("");
  auto write = [&](const std::string &text) { file.write(text); };
  const std::string path = file.path();
  const std::string a = "[[rule]]\nname = \"a\"\ncidr = \"198.18.1.0/24\"\nrate = 1\nburst = 1\n";
  const std::string b = "[[rule]]\nname = \"b\"\ncidr = \"198.18.2.0/24\"\nrate = 2\nburst = 2\n";
  const std::string c = "[[rule]]\nname = \"c\"\ncidr = \"198.18.3.0/24\"\naction = \"deny\"\n";
  write("version = 1\n" + a + b);
  dt::LoadedRules first, second, third;
  std::string err;
  ASSERT_TRUE(dt::load_rules(100, 50, path, &first, &err)) << err;
  write("version = 1\n" + c + b);  // "a" removed, "c" inserted first, "b" moved up
  ASSERT_TRUE(dt::load_rules(100, 50, path, &second, &err, &first)) << err;
  write("version = 1\n" + a + c + b);
  ASSERT_TRUE(dt::load_rules(100, 50, path, &third, &err, &second)) << err;
  auto id_of = [](const dt::LoadedRules &r, const std::string &name) {
    for (const auto &rule : r.set.rules)
      if (rule.name == name) return static_cast<int>(rule.id);
    return -1;
  };
  EXPECT_EQ(id_of(first, "a"), 1);
  EXPECT_EQ(id_of(first, "b"), 2);
  EXPECT_EQ(id_of(second, "b"), 2) << "b keeps its id although it moved up";
  EXPECT_EQ(id_of(second, "c"), 1) << "the new rule takes the lowest free id";
  EXPECT_EQ(id_of(third, "c"), 1);
  EXPECT_EQ(id_of(third, "b"), 2);
  EXPECT_EQ(id_of(third, "a"), 3) << "a came back: a fresh id, not c's";
  EXPECT_EQ(third.names[3], "a");
  EXPECT_TRUE(third.throttles[2]);
  EXPECT_FALSE(third.throttles[1]) << "c is a deny rule";
  // The compiled candidates name kernel ids, not file positions.
  bool saw_b = false;
  for (const auto &[k, set] : third.compiled.lpm)
    for (uint32_t m = 0; m < set.count; m++) saw_b |= set.m[m].rule == 2;
  EXPECT_TRUE(saw_b);
  EXPECT_EQ(third.compiled.policies[2].interval_ns, 500000000u) << "rule b (2/s) at id 2";
}

// --- dry run ------------------------------------------------------------------------

TEST(RulesDryRun, FlagsThePoliciesOfTheRulesInDryRun) {
  const std::string text = "version = 1\n" + rule("t", "198.18.1.0/24", "rate = 10\nburst = 5\ndry_run = true\n") +
                           rule("d", "198.18.2.0/24", "action = \"deny\"\ndry_run = true\n") +
                           rule("e", "198.18.3.0/24", "rate = 10\nburst = 5\ndry_run = false\n") +
                           rule("a", "198.18.4.0/24", "action = \"allow\"\n");
  const dt::CompiledRules c = compiled(text);
  ASSERT_EQ(c.policies.size(), 5u);
  const std::vector<uint8_t> want = {0, DT_POL_DRY_RUN, DT_POL_DRY_RUN, 0, 0};
  for (size_t i = 0; i < want.size(); i++) EXPECT_EQ(c.policies[i].flags, want[i]) << "rule " << i;
  EXPECT_EQ(c.policies[1].interval_ns, 100'000'000u) << "dry run changes nothing else of the policy";
}

TEST(RulesDryRun, AllRulesWithTheFlagAndTheSummarySaysHowMany) {
  const std::string text = "version = 1\n" + rule("t", "198.18.1.0/24", "rate = 1\nburst = 1\ndry_run = true\n") +
                           rule("b", "198.18.2.0/24", "action = \"allow\"\n") + rule("c", "198.18.3.0/24");
  RulesFile file(text);
  dt::LoadedRules r;
  std::string err;
  ASSERT_TRUE(dt::load_rules(100, 50, file.path(), &r, &err)) << err;
  EXPECT_EQ(dt::dry_run_rule_names(r), (std::vector<std::string>{"t"}));
  EXPECT_EQ(dt::describe_rules(r),
            "3 packet rules (1 throttle, 1 allow, 1 deny), 0 tag rules, default 100/s burst 50; 1 in dry run");
  dt::set_all_dry_run(&r);
  EXPECT_EQ(dt::dry_run_rule_names(r), (std::vector<std::string>{"default", "t", "c"})) << "allow rules drop nothing";
  for (const dt_policy &p : r.compiled.policies) EXPECT_TRUE(p.flags & DT_POL_DRY_RUN);
  EXPECT_EQ(dt::describe_rules(r),
            "3 packet rules (1 throttle, 1 allow, 1 deny), 0 tag rules, default 100/s burst 50; 3 in dry run");
}

}  // namespace
