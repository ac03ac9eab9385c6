// test_prefix_limits.cpp - prefix budgets in userspace: the --prefix-limit syntax, the
// checks of a rule's levels, their kernel form, prefix_limits in the rules file and in
// --config files, the refund arithmetic, and how prefix buckets travel in reports.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "agent_args.h"
#include "cli/cli.h"
#include "cluster/cluster.h"
#include "cluster_core/peer_protocol.h"
#include "common/address.h"
#include "common/report_types.h"
#include "daemon/run_config.h"
#include "dataplane/policy.h"
#include "dthrottle/bucket.h"
#include "report_fixtures.h"
#include "rules/config_file.h"
#include "rules/prefix_limits.h"
#include "rules/rules.h"
#include "temp_dir.h"

namespace {

dt::PrefixLimit parsed(const std::string &spec) {
  dt::PrefixLimit l;
  std::string err;
  EXPECT_TRUE(dt::parse_prefix_limit(spec, &l, &err)) << spec << ": " << err;
  return l;
}

std::string refusal(const std::string &spec) {
  dt::PrefixLimit l;
  std::string err;
  EXPECT_FALSE(dt::parse_prefix_limit(spec, &l, &err)) << spec << " was accepted";
  return err;
}

TEST(PrefixLimit, FlagSyntax) {
  const dt::PrefixLimit a = parsed("v4/24=1000/s,burst=2000");
  EXPECT_TRUE(a.v4);
  EXPECT_EQ(a.bits, 24);
  EXPECT_DOUBLE_EQ(a.rate, 1000);
  EXPECT_EQ(a.burst, 2000u);
  EXPECT_FALSE(a.bytes);
  const dt::PrefixLimit b = parsed("ipv6/48=60/m,burst=5");
  EXPECT_FALSE(b.v4);
  EXPECT_EQ(b.bits, 48);
  EXPECT_DOUBLE_EQ(b.rate, 1);
  const dt::PrefixLimit c = parsed("v6/32=10Mbit/s,burst=1MB");
  EXPECT_TRUE(c.bytes);
  EXPECT_DOUBLE_EQ(c.rate, 1.25e6);
  EXPECT_EQ(c.burst, 1000000u);
  EXPECT_EQ(dt::format_prefix_limit(a), "v4/24=1000/s,burst=2000");
}

TEST(PrefixLimit, BadSpecsSayWhatIsWrong) {
  EXPECT_NE(refusal("v4/24=1000").find("expected LEVEL=RATE,burst=BURST"), std::string::npos);
  EXPECT_NE(refusal("/24=1000/s,burst=5").find("must be v4/N or v6/N"), std::string::npos);
  EXPECT_NE(refusal("v4/32=1000/s,burst=5").find("1 to 31 for IPv4"), std::string::npos);
  EXPECT_NE(refusal("v6/128=1000/s,burst=5").find("1 to 127 for IPv6"), std::string::npos);
  EXPECT_NE(refusal("v4/0=1000/s,burst=5").find("1 to 31"), std::string::npos);
  EXPECT_NE(refusal("v4/24=fast,burst=5").find("invalid rate"), std::string::npos);
  EXPECT_NE(refusal("v4/24=1000,burst=0").find("burst"), std::string::npos);
  EXPECT_NE(refusal("v4/24=10Mbit/s,burst=5").find("is in bytes but burst 5 is in packets"), std::string::npos);
  EXPECT_NE(refusal("v4/24=2000000,burst=5").find("out of range"), std::string::npos);
}

TEST(PrefixLimit, RuleChecks) {
  std::string err;
  const auto v4_24 = parsed("v4/24=1000/s,burst=2000"), v4_16 = parsed("v4/16=5000/s,burst=9000");
  EXPECT_TRUE(dt::check_prefix_limits({v4_24, v4_16, parsed("v6/48=1/s,burst=1")}, "web", false, 32, 64, &err)) << err;
  EXPECT_FALSE(dt::check_prefix_limits({v4_24, v4_24}, "web", false, 32, 64, &err));
  EXPECT_NE(err.find("level v4/24 is given twice"), std::string::npos) << err;
  EXPECT_FALSE(dt::check_prefix_limits({v4_24}, "web", false, 24, 64, &err));
  EXPECT_NE(err.find("shorter than the rule's source buckets (/24 for IPv4)"), std::string::npos) << err;
  EXPECT_FALSE(dt::check_prefix_limits({parsed("v6/64=1/s,burst=1")}, "web", false, 32, 64, &err));
  EXPECT_FALSE(dt::check_prefix_limits({v4_24}, "web", true, 32, 64, &err));
  EXPECT_NE(err.find("rule 'web': prefix limit v4/24=1000/s,burst=2000: the rule counts bytes"), std::string::npos)
      << err;
  std::vector<dt::PrefixLimit> five;
  for (int bits : {8, 12, 16, 20, 24}) five.push_back(parsed("v4/" + std::to_string(bits) + "=1/s,burst=1"));
  EXPECT_FALSE(dt::check_prefix_limits(five, "web", false, 32, 64, &err));
  EXPECT_NE(err.find("at most 4 IPv4 levels"), std::string::npos) << err;
}

TEST(PrefixLimit, KernelFormIsBroadestFirstPerFamily) {
  const dt_prefix_policy pp = dt::compile_prefix_limits(
      {parsed("v4/24=1000/s,burst=2000"), parsed("v6/48=10/s,burst=20"), parsed("v4/16=5000/s,burst=9000")});
  ASSERT_EQ(pp.n_v4, 2);
  ASSERT_EQ(pp.n_v6, 1);
  EXPECT_EQ(pp.v4[0].v4_key_bits, 16);
  EXPECT_EQ(pp.v4[1].v4_key_bits, 24);
  EXPECT_EQ(pp.v4[0].interval_ns, 200000u);
  EXPECT_EQ(pp.v4[0].burst_ns, 9000u * 200000u);
  EXPECT_EQ(pp.v6[0].v6_key_bits, 48);
  EXPECT_EQ(pp.v6[0].action, DT_ACT_THROTTLE);
  // A prefix bucket's key names its level: found again by the debit program's lookup.
  EXPECT_EQ(dt_prefix_level_of(&pp, dt_prefix_key_rule(3, 24, false)), &pp.v4[1]);
  EXPECT_EQ(dt_prefix_level_of(&pp, dt_prefix_key_rule(3, 48, true)), &pp.v6[0]);
  EXPECT_EQ(dt_prefix_level_of(&pp, dt_prefix_key_rule(3, 48, false)), nullptr);
  EXPECT_EQ(dt_prefix_level_of(&pp, dt_prefix_key_rule(3, 20, false)), nullptr);
}

TEST(PrefixLimit, KeysOfLevels) {
  dt_key src{}, k{};
  ASSERT_TRUE(dt::key_from_string("198.18.77.9", &src));
  src.rule = 5;
  dt_key_for_level(&k, &src, 5, 16, 0);
  EXPECT_EQ(dt::key_to_string(k), "198.18.0.0");
  EXPECT_TRUE(dt_key_is_prefix(k.rule));
  EXPECT_EQ(dt_key_rule_id(k.rule), 5u);
  EXPECT_EQ(dt_key_prefix_bits(k.rule), 16u);
  EXPECT_FALSE(dt_key_prefix_v6(k.rule));
  ASSERT_TRUE(dt::key_from_string("2001:2:0:1234::1", &src));
  dt_key_for_level(&k, &src, 5, 52, 1);
  EXPECT_EQ(dt::key_to_string(k), "2001:2:0:1000::");
  EXPECT_TRUE(dt_key_prefix_v6(k.rule));
  EXPECT_NE(dt_prefix_key_rule(5, 24, false), dt_prefix_key_rule(5, 24, true));
  EXPECT_FALSE(dt_key_is_prefix(DT_MAX_RULES - 1));
}

TEST(PrefixLimit, RefundUndoesATakeExactly) {
  dt_policy p{};
  std::string err;
  ASSERT_TRUE(dt::make_policy(100, 10, &p, &err)) << err;
  const __u64 now = 1'000'000'000'000ull;
  for (__u64 tat : {__u64{0}, __u64{now - 5}, now, __u64{now + 3 * p.interval_ns + 7}}) {
    __u64 next = 0;
    ASSERT_TRUE(dt_gcra_admit_n(tat, now, &p, 2, &next));
    const __u64 back = dt_gcra_refund(next, &p, 2);
    EXPECT_EQ(dt_gcra_tokens_milli(back, now, &p), dt_gcra_tokens_milli(tat, now, &p)) << "tat " << tat;
    EXPECT_EQ(dt_gcra_tokens_milli(back, now + 12345, &p), dt_gcra_tokens_milli(tat, now + 12345, &p));
  }
  EXPECT_EQ(dt_gcra_refund(5, &p, 1), 0u) << "never below 0 (a bucket recreated meanwhile)";
  EXPECT_EQ(dt_gcra_refund(now, &p, 11), now) << "a cost above the burst was never taken";
}

// --- files and command lines ---

class PrefixConfig : public dt::test::TempDirTest {
 protected:
  std::string write(const std::string &name, const std::string &text) {
    EXPECT_TRUE(tmp_.write(name, text)) << "cannot write " << tmp_.file(name);
    return tmp_.file(name);
  }
  dt::ParseOutcome parse(std::vector<std::string> args, dt::RunOptions *o, std::string *err) {
    return dt::test::parse_agent_args(args, o, err);
  }
};

TEST_F(PrefixConfig, FlagsMakeTheDefaultRulesLevels) {
  dt::RunOptions o;
  std::string err;
  ASSERT_EQ(parse({"--iface", "lo", "--rate", "10", "--burst", "5", "--prefix-limit", "v4/24=1000/s,burst=2000",
                   "--prefix-limit", "v6/48=100/s,burst=200"},
                  &o, &err),
            dt::ParseOutcome::Ok)
      << err;
  ASSERT_EQ(o.prefix_limits.size(), 2u);
  dt::RunConfig c;
  ASSERT_TRUE(dt::load_run_config(o, &c, &err)) << err;
  ASSERT_EQ(c.rules.compiled.prefix.size(), 1u);
  EXPECT_EQ(c.rules.compiled.prefix[0].n_v4, 1);
  EXPECT_EQ(c.rules.compiled.prefix[0].n_v6, 1);
  EXPECT_TRUE(c.rules.compiled.policies[0].flags & DT_POL_PREFIX);
  EXPECT_EQ(dt::prefix_level_keys(c.rules),
            (std::set<uint32_t>{dt_prefix_key_rule(0, 24, false), dt_prefix_key_rule(0, 48, true)}));
}

TEST_F(PrefixConfig, FlagErrors) {
  dt::RunOptions o;
  std::string err;
  EXPECT_EQ(parse({"--iface", "lo", "--rate", "10", "--burst", "5", "--prefix-limit", "v4/24=1000"}, &o, &err),
            dt::ParseOutcome::Error);
  EXPECT_EQ(err.rfind("--prefix-limit: 'v4/24=1000': expected LEVEL=RATE,burst=BURST", 0), 0u) << err;
  const std::string rules = write("r.toml", "version = 1\n");
  EXPECT_EQ(parse({"--iface", "lo", "--rules", rules, "--prefix-limit", "v4/24=1/s,burst=1"}, &o, &err),
            dt::ParseOutcome::Error);
  EXPECT_NE(err.find("needs --rate and --burst"), std::string::npos) << err;
  dt::RunOptions o2;
  EXPECT_EQ(parse({"--iface", "lo", "--rate", "10kB/s", "--burst", "15kB", "--prefix-limit", "v4/24=1000/s,burst=2000"},
                  &o2, &err),
            dt::ParseOutcome::Error);
  EXPECT_NE(err.find("the rule counts bytes"), std::string::npos) << err;
  dt::RunOptions o3;
  EXPECT_EQ(parse({"--iface", "lo", "--rate", "10kB/s", "--burst", "15kB", "--prefix-limit", "v4/24=1MB/s,burst=2MB"},
                  &o3, &err),
            dt::ParseOutcome::Ok)
      << "byte rules take byte levels: " << err;
}

TEST_F(PrefixConfig, ConfigFileLinesAddUpAndErrorsNameTheLine) {
  const std::string conf = write("eth0.conf",
                                 "rate = 10\nburst = 5\nprefix-limit = v4/24=1000/s,burst=2000\n"
                                 "prefix-limit = v4/16=5000/s,burst=9000\n");
  dt::RunOptions o;
  std::string err;
  ASSERT_EQ(parse({"--config", conf, "--iface", "lo"}, &o, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_EQ(o.prefix_limits.size(), 2u);
  const std::string bad = write("bad.conf", "rate = 10\nburst = 5\n\nprefix-limit = v4/33=1/s,burst=1\n");
  EXPECT_EQ(parse({"--config", bad, "--iface", "lo"}, &o, &err), dt::ParseOutcome::Error);
  EXPECT_EQ(err.rfind(bad + ":4: prefix-limit: level 'v4/33'", 0), 0u) << err;
}

TEST_F(PrefixConfig, RulesFileTakesTablesAndStrings) {
  dt::RuleSet rs = dt::default_rules(100, 50);
  std::string err;
  ASSERT_TRUE(
      dt::parse_rules("version = 1\n"
                      "[[rule]]\n"
                      "name = \"dns\"\n"
                      "cidr = \"198.18.0.0/15\"\n"
                      "rate = 20\n"
                      "burst = 40\n"
                      "prefix_limits = [\n"
                      "  { prefix = \"v4/24\", rate = 1000, burst = 2000 },\n"
                      "  \"v4/16=5000/s,burst=9000\",\n"
                      "]\n",
                      "r.toml", &rs, &err))
      << err;
  ASSERT_EQ(rs.rules.size(), 2u);
  ASSERT_EQ(rs.rules[1].prefix_limits.size(), 2u);
  EXPECT_EQ(rs.rules[1].prefix_limits[0].bits, 24);
  EXPECT_EQ(rs.rules[1].prefix_limits[1].burst, 9000u);
  dt::CompiledRules c;
  ASSERT_TRUE(dt::compile_rules(rs, &c, &err)) << err;
  ASSERT_EQ(c.prefix.size(), 2u);
  EXPECT_EQ(c.prefix[1].n_v4, 2);
  EXPECT_EQ(c.prefix[0].n_v4, 0) << "the default rule has none";
  EXPECT_TRUE(c.policies[1].flags & DT_POL_PREFIX);
  EXPECT_FALSE(c.policies[0].flags & DT_POL_PREFIX);
}

TEST_F(PrefixConfig, RulesFileErrorsNameTheLine) {
  struct Case {
    const char *body, *expect;
  } cases[] = {
      {"rate = 1\nburst = 1\nprefix_limits = [{ prefix = \"v4/24\", rate = 1 }]\n",
       "r.toml:7: a prefix limit needs both 'rate' (per second) and 'burst'"},
      {"rate = 1\nburst = 1\nprefix_limits = [{ prefix = \"v4/24\", rate = 1, burst = 1, per = 2 }]\n",
       "r.toml:7: unknown key 'per' in a prefix limit"},
      {"rate = 1\nburst = 1\nprefix_limits = [\"v4/24=1/s\"]\n", "r.toml:7: prefix_limits: 'v4/24=1/s': expected"},
      {"rate = 1\nburst = 1\nprefix_limits = [{ prefix = \"v9/24\", rate = 1, burst = 1 }]\n",
       "r.toml:7: prefix limit level 'v9/24' must be v4/N or v6/N"},
      {"rate = 1\nburst = 1\nkey_prefix = 24\nprefix_limits = [\"v4/24=1/s,burst=1\"]\n",
       "r.toml:8: rule 'x': prefix limit v4/24=1/s,burst=1: the level must be shorter"},
      {"action = \"allow\"\nprefix_limits = [\"v4/24=1/s,burst=1\"]\n",
       "r.toml:6: only throttle rules take prefix_limits"},
      {"rate = 1\nburst = 1\nprefix_limits = \"v4/24=1/s,burst=1\"\n", "r.toml:7: 'prefix_limits' must be a list"},
  };
  for (const auto &cs : cases) {
    dt::RuleSet rs = dt::default_rules(100, 50);
    std::string err;
    const std::string text = std::string("version = 1\n[[rule]]\nname = \"x\"\ncidr = \"198.18.0.0/15\"\n") + cs.body;
    EXPECT_FALSE(dt::parse_rules(text, "r.toml", &rs, &err)) << text;
    EXPECT_NE(err.find(cs.expect), std::string::npos) << "text:\n" << text << "got: " << err;
  }
  dt::RuleSet rs = dt::default_rules(100, 50);
  std::string err;
  EXPECT_FALSE(
      dt::parse_rules("version = 1\n[[rule]]\nname = \"web::p24\"\ncidr = \"198.18.0.0/15\"\nrate = 1\n"
                      "burst = 1\n",
                      "r.toml", &rs, &err));
  EXPECT_NE(err.find("r.toml:3: rule name 'web::p24' ends like a prefix level"), std::string::npos) << err;
  const std::string long_name(45, 'a');
  EXPECT_FALSE(dt::parse_rules("version = 1\n[[rule]]\nname = \"" + long_name +
                                   "\"\ncidr = \"198.18.0.0/15\"\nrate = 1\nburst = 1\n"
                                   "prefix_limits = [\"v4/24=1/s,burst=1\"]\n",
                               "r.toml", &rs, &err));
  EXPECT_NE(err.find("its name may have at most 41 characters"), std::string::npos) << err;
}

// --- reports ---

TEST(PrefixReports, GroupNames) {
  EXPECT_EQ(dt::prefix_group_name("web", 24), "web::p24");
  std::string rule;
  unsigned bits = 0;
  ASSERT_TRUE(dt::split_prefix_group_name("web::p24", &rule, &bits));
  EXPECT_EQ(rule, "web");
  EXPECT_EQ(bits, 24u);
  ASSERT_TRUE(dt::split_prefix_group_name("a::b::p128", &rule, &bits));
  EXPECT_EQ(rule, "a::b");
  for (const char *no : {"web", "web::p", "web::p0", "web::p129", "web::p024", "::p24", "web::px4", "web:p24"})
    EXPECT_FALSE(dt::split_prefix_group_name(no, &rule, &bits)) << no;
  EXPECT_TRUE(dt::valid_node_id(dt::prefix_group_name(std::string(41, 'r'), 128)))
      << "a level's group name is a valid rule name on the wire";
}

TEST(PrefixReports, PrefixBucketsTravelInGroupsPeersCanMap) {
  dt::ReportBody body;
  body.rules = {"default", "web"};
  using dt::test::entry;
  body.entries = {entry("198.18.0.1", 1, 3), entry("198.18.0.0", dt_prefix_key_rule(1, 24, false), 7),
                  entry("198.18.0.0", dt_prefix_key_rule(1, 16, false), 7),
                  entry("2001:2::", dt_prefix_key_rule(1, 16, true), 2),
                  entry("198.18.1.0", dt_prefix_key_rule(1, 24, false), 1)};
  EXPECT_EQ(dt::name_prefix_groups(&body), 4u);
  EXPECT_EQ(body.rules, (std::vector<std::string>{"default", "web", "web::p24", "web::p16"}))
      << "one group per level, IPv4 and IPv6 levels of one length together";
  EXPECT_EQ(dt::test::hits_by_group(body), (std::map<std::string, uint64_t>{{"web 198.18.0.1", 3},
                                                                            {"web::p24 198.18.0.0", 7},
                                                                            {"web::p24 198.18.1.0", 1},
                                                                            {"web::p16 198.18.0.0", 7},
                                                                            {"web::p16 2001:2::", 2}}));
}

}  // namespace
