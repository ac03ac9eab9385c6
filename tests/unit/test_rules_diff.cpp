// test_rules_diff.cpp - agent suggest's rules-file change (agent/suggest/rules_diff.h): the
// rate, burst and prefix_limits of named rules rewritten in place, and the unified diff of it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "suggest/rules_diff.h"

namespace {

const char kRules[] =
    "version = 1\n"
    "\n"
    "[[rule]]\n"
    "name = \"web\"\n"
    "cidr = \"0.0.0.0/0\"\n"
    "rate = 5     # a guess\n"
    "burst = 10\n"
    "\n"
    "[[rule]]\n"
    "name = \"dns\"\n"
    "proto = \"udp\"\n"
    "  rate = 100\n"
    "\n"
    "[[rule]]\n"
    "name = \"ok\"\n"
    "action = \"allow\"\n";

std::string new_text(const std::vector<dt::DiffLine> &lines) {
  std::string out;
  for (const auto &l : lines)
    if (l.kind != dt::DiffLine::Kind::Del) out += l.text + "\n";
  return out;
}

TEST(RulesDiff, ReplacesRateAndBurstKeepingComments) {
  std::vector<std::string> skipped;
  const auto lines = dt::edit_rules_text(kRules, {{"web", 20, 40, {}}}, &skipped);
  EXPECT_TRUE(skipped.empty());
  const std::string text = new_text(lines);
  EXPECT_NE(text.find("rate = 20     # a guess\nburst = 40\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  rate = 100\n"), std::string::npos) << "another rule is untouched";
}

TEST(RulesDiff, AddsAMissingBurstAndSkipsRulesWithoutRate) {
  std::vector<std::string> skipped;
  const auto lines = dt::edit_rules_text(kRules, {{"dns", 0.5, 3, {}}, {"ok", 1, 1, {}}, {"nope", 1, 1, {}}}, &skipped);
  EXPECT_EQ(skipped, (std::vector<std::string>{"ok", "nope"}));
  EXPECT_NE(new_text(lines).find("  rate = 0.5\n  burst = 3\n"), std::string::npos) << new_text(lines);
}

TEST(RulesDiff, UnifiedDiff) {
  const auto lines = dt::edit_rules_text(kRules, {{"web", 20, 40, {}}}, nullptr);
  EXPECT_EQ(dt::unified_diff(lines, "rules.toml"),
            "--- rules.toml\n"
            "+++ rules.toml\n"
            "@@ -3,8 +3,8 @@\n"
            " [[rule]]\n"
            " name = \"web\"\n"
            " cidr = \"0.0.0.0/0\"\n"
            "-rate = 5     # a guess\n"
            "+rate = 20     # a guess\n"
            "-burst = 10\n"
            "+burst = 40\n"
            " \n"
            " [[rule]]\n"
            " name = \"dns\"\n");
  EXPECT_EQ(dt::unified_diff(dt::edit_rules_text(kRules, {}, nullptr), "rules.toml"), "") << "nothing changed, no diff";
}

TEST(RulesDiff, TwoHunksAndAnInsertion) {
  const auto lines = dt::edit_rules_text(kRules, {{"web", 20, 40, {}}, {"dns", 50, 60, {}}}, nullptr);
  const std::string d = dt::unified_diff(lines, "r");
  // The changes are 4 kept lines apart (<= 6): one hunk, old lines 3-15, one line added.
  EXPECT_NE(d.find("@@ -3,13 +3,14 @@\n"), std::string::npos) << d;
  EXPECT_NE(d.find("-  rate = 100\n+  rate = 50\n+  burst = 60\n"), std::string::npos) << d;
}

const char kLimits[] =
    "[[rule]]\n"
    "name = \"dns\"\n"
    "rate = 20\n"
    "burst = 40\n"
    "prefix_limits = [\n"
    "  { prefix = \"v4/24\", rate = 1000, burst = 2000 },  # a [bracket] in a comment\n"
    "  \"v4/16=5000/s,burst=10000\",\n"
    "]\n"
    "dry_run = true\n"
    "\n"
    "[[rule]]\n"
    "name = \"web\"\n"
    "  rate = 5\n";

TEST(RulesDiff, PrefixLimitsReplacedOrAdded) {
  const std::vector<std::string> dns = {"v4/16=3000/s,burst=3000", "v4/24=600/s,burst=600"};
  const std::vector<std::string> web = {"v4/24=50/s,burst=50", "v6/48=20/s,burst=40"};
  std::vector<std::string> skipped;
  const std::string text =
      new_text(dt::edit_rules_text(kLimits, {{"dns", 10, 20, dns}, {"web", 5, 10, web}}, &skipped));
  EXPECT_TRUE(skipped.empty());
  EXPECT_EQ(text,
            "[[rule]]\n"
            "name = \"dns\"\n"
            "rate = 10\n"
            "burst = 20\n"
            "prefix_limits = [\"v4/16=3000/s,burst=3000\", \"v4/24=600/s,burst=600\"]\n"
            "dry_run = true\n"
            "\n"
            "[[rule]]\n"
            "name = \"web\"\n"
            "  rate = 5\n"
            "  burst = 10\n"
            "  prefix_limits = [\"v4/24=50/s,burst=50\", \"v6/48=20/s,burst=40\"]\n");
  const std::string d = dt::unified_diff(dt::edit_rules_text(kLimits, {{"dns", 20, 40, dns}}, nullptr), "r");
  EXPECT_NE(d.find("-prefix_limits = [\n-  { prefix"), std::string::npos) << d;
  EXPECT_NE(d.find("-]\n+prefix_limits = [\"v4/16=3000/s,burst=3000\""), std::string::npos) << d;
  EXPECT_EQ(dt::prefix_limit_text(true, 48, 0.5, 3), "v6/48=0.5/s,burst=3");
}

TEST(RulesDiff, RateText) {
  EXPECT_EQ(dt::rate_text(20), "20");
  EXPECT_EQ(dt::rate_text(0.013), "0.013");
  EXPECT_EQ(dt::rate_text(1500), "1500");
}

}  // namespace
