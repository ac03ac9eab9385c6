// test_rules_key_by.cpp - key_by = "destination" on a [[rule]]: parsing, what it refuses
// (and how it says so), its policy flag, and the names its buckets take in reports.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "cluster/cluster.h"
#include "cluster_core/peer_protocol.h"
#include "common/report_types.h"
#include "dthrottle/bucket.h"
#include "report_fixtures.h"
#include "rules_test_util.h"

namespace {

using namespace rules_test;

const std::string kHead = "version = 1\n[[rule]]\nname = \"vip\"\ncidr = \"0.0.0.0/0\"\n";  // rule at line 2

TEST(RulesKeyBy, DestinationSetsThePolicyFlagAndSourceIsTheDefault) {
  const dt::CompiledRules c = compiled(kHead + "rate = 1000\nburst = 100\nkey_by = \"destination\"\n" +
                                       "[[rule]]\nname = \"src\"\ncidr = \"198.18.0.0/16\"\nrate = 5\nburst = 5\n"
                                       "key_by = \"source\"\n" +
                                       "[[rule]]\nname = \"plain\"\ncidr = \"198.19.0.0/16\"\nrate = 5\nburst = 5\n");
  ASSERT_EQ(c.policies.size(), 4u);
  EXPECT_NE(c.policies[1].flags & DT_POL_KEY_DEST, 0) << "vip is keyed by destination";
  EXPECT_EQ(c.policies[1].v4_key_bits, 32) << "a bucket per destination address by default";
  EXPECT_EQ(c.policies[2].flags & DT_POL_KEY_DEST, 0) << "key_by = \"source\" is the default written out";
  EXPECT_EQ(c.policies[3].flags & DT_POL_KEY_DEST, 0) << "no key_by: by source";
  EXPECT_EQ(c.policies[0].flags & DT_POL_KEY_DEST, 0) << "the default rule is always by source";
}

TEST(RulesKeyBy, KeyPrefixCutsTheDestination) {
  const dt::CompiledRules c = compiled(kHead + "rate = 1000\nburst = 100\nkey_by = \"destination\"\nkey_prefix = 24\n");
  ASSERT_EQ(c.policies.size(), 2u);
  EXPECT_EQ(c.policies[1].v4_key_bits, 24);
  dt_key k{};
  ASSERT_TRUE(dt::key_from_string("198.18.7.200", &k));  // a destination address
  dt_key_for_rule(&k, &c.policies[1], 1, 0);
  EXPECT_EQ(dt::key_to_string(k), "198.18.7.0");
  EXPECT_EQ(k.rule, 1u | DT_KEY_DEST) << "a destination bucket's key.rule carries DT_KEY_DEST";
  EXPECT_TRUE(dt_key_is_dest(k.rule));
  EXPECT_FALSE(dt_key_is_prefix(k.rule)) << "never taken for a prefix bucket";
  EXPECT_EQ(dt_key_rule_id(k.rule), 1u) << "the rule id is still in bits 0..15";
}

TEST(RulesKeyBy, DescribeNamesTheRulesKeyedByDestination) {
  dt::LoadedRules r;
  r.set = dt::default_rules(100, 50);
  std::string err;
  ASSERT_TRUE(dt::parse_rules(kHead + "rate = 1000\nburst = 100\nkey_by = \"destination\"\n", kOrigin, &r.set, &err))
      << err;
  EXPECT_EQ(dt::describe_rules(r),
            "1 packet rules (1 throttle, 0 allow, 0 deny), 0 tag rules, default 100/s burst 50; keyed by "
            "destination: vip");
}

TEST(RulesKeyBy, EveryErrorWithItsLineAndWhatToDo) {
  const std::string limits = "rate = 10\nburst = 10\n";
  struct Case {
    const char *what;
    std::string text, want;
  } cases[] = {
      {"unknown value", kHead + limits + "key_by = \"dst\"\n",
       "r.toml:7: key_by must be \"source\" (the default: a bucket per source) or \"destination\" (a bucket per "
       "destination address: a VIP's total, whatever the sources)"},
      {"not a string", kHead + limits + "key_by = 1\n",
       "r.toml:7: key_by must be \"source\" (the default: a bucket per source) or \"destination\" (a bucket per "
       "destination address: a VIP's total, whatever the sources)"},
      {"allow rule", kHead + "action = \"allow\"\nkey_by = \"destination\"\n",
       "r.toml:6: only throttle rules take key_by = \"destination\" ('allow' has no bucket)"},
      {"deny rule", kHead + "action = \"deny\"\nkey_by = \"destination\"\n",
       "r.toml:6: only throttle rules take key_by = \"destination\" ('deny' has no bucket)"},
      {"with prefix budgets",
       kHead + limits + "prefix_limits = [\"v4/24=100/s,burst=100\"]\nkey_by = \"destination\"\n",
       "r.toml:8: key_by = \"destination\" cannot be combined with prefix_limits (they cap the sources' prefixes, "
       "and this rule's buckets are destinations): use key_prefix for a bucket per destination prefix, and a rule "
       "of its own for the sources' prefix budgets"},
      {"name too long for its group",
       "version = 1\n[[rule]]\nname = \"" + std::string(43, 'v') + "\"\ncidr = \"0.0.0.0/0\"\n" + limits +
           "key_by = \"destination\"\n",
       "r.toml:7: rule '" + std::string(43, 'v') +
           "' is keyed by destination, so its name may have at most 42 characters (peers' reports name its buckets "
           "as '" +
           std::string(43, 'v') + "::dst')"},
      {"name like a destination group", "version = 1\n[[rule]]\nname = \"web::dst\"\ncidr = \"0.0.0.0/0\"\n" + limits,
       "r.toml:3: rule name 'web::dst' ends like a rule's destination buckets in peers' reports ('::dst'): choose "
       "another name"},
  };
  for (const auto &c : cases) EXPECT_EQ(error_of(c.text), c.want) << "case: " << c.what;
  EXPECT_EQ(error_of("version = 1\n[[rule]]\nname = \"" + std::string(42, 'v') + "\"\ncidr = \"0.0.0.0/0\"\n" + limits +
                     "key_by = \"destination\"\n"),
            "")
      << "42 characters and '::dst' fit a report's 47";
  EXPECT_EQ(error_of(kHead + limits + "key_by = \"destination\"\nadaptive = true\n"), "")
      << "an adaptive rule may be keyed by destination (its factor scales each destination's budget)";
}

TEST(RulesKeyBy, DestinationGroupNames) {
  EXPECT_EQ(dt::dest_group_name("vip"), "vip::dst");
  std::string rule;
  EXPECT_TRUE(dt::split_dest_group_name("vip::dst", &rule));
  EXPECT_EQ(rule, "vip");
  EXPECT_TRUE(dt::split_dest_group_name("a::b::dst", &rule));
  EXPECT_EQ(rule, "a::b");
  for (const char *other : {"vip", "::dst", "vip::dst2", "vip::p24", "vip:dst", ""})
    EXPECT_FALSE(dt::split_dest_group_name(other, &rule)) << other;
  std::string base;
  unsigned bits = 0;
  EXPECT_FALSE(dt::split_prefix_group_name("vip::dst", &base, &bits)) << "never read as a prefix level";
}

TEST(RulesKeyBy, DestinationBucketsTravelInGroupsPeersCanMap) {
  dt::ReportBody body;
  body.rules = {"default", "vip", "web"};
  using dt::test::entry;
  body.entries = {entry("198.18.0.1", 2, 3), entry("198.18.200.7", 1 | DT_KEY_DEST, 40),
                  entry("198.18.200.8", 1 | DT_KEY_DEST, 2), entry("198.18.0.0", dt_prefix_key_rule(2, 24, false), 5)};
  EXPECT_EQ(dt::name_dest_groups(&body), 2u);
  EXPECT_EQ(dt::name_prefix_groups(&body), 1u) << "the two namings leave each other's entries alone";
  EXPECT_EQ(body.rules, (std::vector<std::string>{"default", "vip", "web", "vip::dst", "web::p24"}));
  EXPECT_EQ(dt::test::hits_by_group(body), (std::map<std::string, uint64_t>{{"web 198.18.0.1", 3},
                                                                            {"vip::dst 198.18.200.7", 40},
                                                                            {"vip::dst 198.18.200.8", 2},
                                                                            {"web::p24 198.18.0.0", 5}}));
  EXPECT_TRUE(dt::valid_node_id(dt::dest_group_name(std::string(42, 'r'))))
      << "a destination group's name is a valid rule name on the wire";
}

}  // namespace
