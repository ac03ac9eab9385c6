// test_run_config.cpp - the one check of the daemon's configuration (load_run_config),
// shared by `agent check` and the daemon: command lines as the CLI parses them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "daemon/run_config.h"
#include "rules/config_file.h"
#include "temp_dir.h"

namespace {

// A rules file in a private temporary directory (removed with the test), and command
// lines parsed by parse_run_options then checked by load_run_config.
class RunConfigTest : public dt::test::TempDirTest {
 protected:
  void write_rules(const std::string &text) {
    ASSERT_TRUE(tmp_.write("rules.toml", text)) << "cannot write " << rules_;
  }
  // "agent --iface lo --rate 10 --burst 5" followed by `extra`, parsed and checked.
  bool load(std::vector<std::string> extra, dt::RunConfig *out, std::string *err) {
    dt::ArgvList a;
    for (const char *x : {"agent", "--iface", "lo", "--rate", "10", "--burst", "5"}) a.push(x);
    for (auto &x : extra) a.push(x);
    dt::RunOptions opt;
    if (dt::parse_run_options(a.argc(), a.argv(), &opt, err) != dt::ParseOutcome::Ok) {
      ADD_FAILURE() << "the command line itself was refused: " << *err;
      return false;
    }
    return dt::load_run_config(opt, out, err);
  }
  const std::string rules_ = tmp_.file("rules.toml");
};

TEST_F(RunConfigTest, ReportMaxAgeAtLeastOnePeriod) {
  dt::RunConfig c;
  std::string err;
  EXPECT_FALSE(load({"--period", "500ms", "--report-max-age", "200ms"}, &c, &err));
  EXPECT_EQ(err,
            "--report-max-age 200ms is shorter than the report period (500ms): every report would be stale; "
            "give at least the period, or off");
  EXPECT_TRUE(load({"--period", "500ms", "--report-max-age", "500ms"}, &c, &err)) << err;
  EXPECT_EQ(c.opt.report_max_age_ns, 500000000u);
  EXPECT_TRUE(load({"--report-max-age", "off"}, &c, &err)) << err;
  EXPECT_EQ(c.opt.report_max_age_ns, UINT64_MAX) << "off: every report charged";
  EXPECT_TRUE(load({}, &c, &err)) << err;
  EXPECT_EQ(c.opt.report_max_age_ns, 0u) << "default: 10 periods, resolved by the cluster";
}

TEST_F(RunConfigTest, StrictTagRuleWithoutRedisIsRefused) {
  dt::RunConfig c;
  std::string err;
  EXPECT_FALSE(load({"--tag-rule", "pay:=5/1!strict"}, &c, &err))
      << "a strict tag rule without --redis must be a configuration error";
  EXPECT_EQ(err, "tag rule 'pay:' is strict, which needs --redis ADDR");
}

TEST_F(RunConfigTest, StrictTagRuleWithRedisIsAccepted) {
  dt::RunConfig c;
  std::string err;
  EXPECT_TRUE(load({"--tag-rule", "pay:=5/1!strict", "--redis", "127.0.0.1:6379"}, &c, &err)) << err;
  ASSERT_EQ(c.tag_rules.size(), 1u) << "the --tag-rule flag is not among the tag rules";
  EXPECT_TRUE(c.tag_rules[0].strict) << "the rule lost its !strict";
}

TEST_F(RunConfigTest, StrictTagRuleOfTheFileWithoutRedisIsRefused) {
  write_rules("version = 1\n[[tag]]\nprefix = \"user:\"\nrate = 5\nburst = 10\nstrict = true\n");
  dt::RunConfig c;
  std::string err;
  EXPECT_FALSE(load({"--rules", rules_}, &c, &err)) << "the file's strict [[tag]] needs --redis too";
  EXPECT_EQ(err, "tag rule 'user:' is strict, which needs --redis ADDR");
}

TEST_F(RunConfigTest, TagRuleSetTheTableRefusesIsRefused) {
  // Each is valid alone; the file's [[tag]] and the flag share a prefix, which the tag
  // table refuses as a set.
  write_rules("version = 1\n[[tag]]\nprefix = \"api:\"\nrate = 5\nburst = 10\n");
  dt::RunConfig c;
  std::string err;
  EXPECT_FALSE(load({"--rules", rules_, "--tag-rule", "api:=100/20"}, &c, &err))
      << "two tag rules with one prefix must be refused before the daemon starts";
  EXPECT_EQ(err, "tag rule 2 (prefix 'api:'): duplicate prefix");
}

TEST_F(RunConfigTest, TagRulesAreTheFilesThenTheFlags) {
  write_rules(
      "version = 1\n[[tag]]\nprefix = \"user:\"\nrate = 5\nburst = 10\n"
      "[[tag]]\nprefix = \"\"\nrate = 1\nburst = 1\n");
  dt::RunConfig c;
  std::string err;
  ASSERT_TRUE(load({"--rules", rules_, "--tag-rule", "api:=100/20"}, &c, &err)) << err;
  std::vector<std::string> prefixes;
  for (const auto &t : c.tag_rules) prefixes.push_back(t.prefix);
  EXPECT_EQ(prefixes, (std::vector<std::string>{"user:", "", "api:"}));
}

TEST_F(RunConfigTest, SummaryCountsTheTagRuleFlags) {
  dt::RunConfig c;
  std::string err;
  ASSERT_TRUE(load({"--tag-rule", "api:=100/20", "--tag-rule", "user:=6/m/1"}, &c, &err)) << err;
  EXPECT_EQ(dt::describe_run_rules(c),
            "0 packet rules (0 throttle, 0 allow, 0 deny), 2 tag rules, default 10/s burst 5")
      << "the summary must count --tag-rule flags";
}

TEST_F(RunConfigTest, SummaryCountsTheFilesAndTheFlagsTagRules) {
  write_rules(
      "version = 1\n[[rule]]\nname = \"office\"\ncidr = \"198.18.10.0/24\"\naction = \"allow\"\n"
      "[[tag]]\nprefix = \"user:\"\nrate = 5\nburst = 10\nadaptive = true\n");
  dt::RunConfig c;
  std::string err;
  ASSERT_TRUE(load({"--rules", rules_, "--tag-rule", "api:=100/20"}, &c, &err)) << err;
  EXPECT_EQ(dt::describe_run_rules(c),
            "1 packet rules (0 throttle, 1 allow, 0 deny), 2 tag rules, default 10/s burst 5; 1 adaptive");
}

TEST_F(RunConfigTest, RulesFileErrorIsTheDaemons) {
  write_rules("version = 1\n[[rule]]\nname = \"x\"\ncidr = \"not an address\"\n");
  dt::RunConfig c;
  std::string err;
  EXPECT_FALSE(load({"--rules", rules_}, &c, &err)) << "a broken rules file must be refused";
  EXPECT_NE(err.find(rules_ + ":"), std::string::npos) << "the message does not name the file: " << err;
}

TEST_F(RunConfigTest, DryRunFlagPutsEveryRuleInDryRun) {
  write_rules(
      "version = 1\n[[rule]]\nname = \"web\"\ncidr = \"198.18.10.0/24\"\nrate = 5\nburst = 5\n"
      "[[rule]]\nname = \"office\"\ncidr = \"198.18.11.0/24\"\naction = \"allow\"\n");
  dt::RunConfig enforcing, dry;
  std::string err;
  ASSERT_TRUE(load({"--rules", rules_}, &enforcing, &err)) << err;
  ASSERT_TRUE(load({"--rules", rules_, "--dry-run"}, &dry, &err)) << err;
  EXPECT_EQ(dt::describe_dry_run(enforcing), "") << "enforcing says nothing about dry run";
  for (const dt_policy &p : enforcing.rules.compiled.policies) EXPECT_EQ(p.flags & DT_POL_DRY_RUN, 0);
  for (const dt_policy &p : dry.rules.compiled.policies) EXPECT_TRUE(p.flags & DT_POL_DRY_RUN);
  EXPECT_EQ(dt::describe_dry_run(dry).rfind("dry run (--dry-run): nothing is dropped; ", 0), 0u)
      << dt::describe_dry_run(dry);
  EXPECT_EQ(dt::describe_run_rules(dry),
            "2 packet rules (1 throttle, 1 allow, 0 deny), 0 tag rules, default 10/s burst 5; 2 in dry run");
}

TEST_F(RunConfigTest, DryRunRulesAreNamedInTheLog) {
  write_rules(
      "version = 1\n[[rule]]\nname = \"web\"\ncidr = \"198.18.10.0/24\"\nrate = 5\nburst = 5\n"
      "dry_run = true\n");
  dt::RunConfig c;
  std::string err;
  ASSERT_TRUE(load({"--rules", rules_}, &c, &err)) << err;
  EXPECT_EQ(dt::describe_dry_run(c).rfind("dry run for rule web: nothing they match is dropped; ", 0), 0u)
      << dt::describe_dry_run(c);
}

TEST_F(RunConfigTest, DryRunInAConfigFile) {
  const std::string conf = tmp_.file("agent.conf");
  ASSERT_TRUE(tmp_.write("agent.conf", "rate = 10\nburst = 5\ndry-run = true\n")) << "cannot write " << conf;
  dt::ArgvList a;
  for (const char *x : {"agent", "--iface", "lo", "--config", conf.c_str()}) a.push(x);
  dt::RunOptions opt;
  std::string err;
  const dt::ParseOutcome r = dt::parse_run_options(a.argc(), a.argv(), &opt, &err);
  unlink(conf.c_str());
  ASSERT_EQ(r, dt::ParseOutcome::Ok) << err;
  EXPECT_TRUE(opt.dry_run);
  EXPECT_NE(std::string(dt::run_usage()).find("--dry-run"), std::string::npos) << "--help documents it";
}

TEST(AdaptiveRulesCheck, RefusesParametersOutOfRange) {
  dt::LoadedRules rules;
  std::string err;
  ASSERT_TRUE(dt::load_rules(10, 5, "", &rules, &err)) << err;
  dt::TagRule t;
  t.prefix = "api:";
  t.rate = 5;
  t.burst = 5;
  t.adaptive.enabled = true;
  t.adaptive.params.decrease = 1.5;
  EXPECT_FALSE(dt::check_adaptive_rules(rules, {t}, &err)) << "a decrease of 1.5 must be refused";
  EXPECT_EQ(err.rfind("adaptive rules: tag rule 'api:': decrease must be", 0), 0u) << err;
  t.adaptive.params.decrease = 0.5;
  EXPECT_TRUE(dt::check_adaptive_rules(rules, {t}, &err)) << err;
}

}  // namespace
