// test_rules_syn_cookies.cpp - syn_cookies = true on a [[rule]]: its policy flag, the names
// of the rules that ask, and what it refuses (and how it says so).
#include <gtest/gtest.h>

#include <string>

#include "rules/rules.h"
#include "rules_test_util.h"

namespace {

using namespace rules_test;

const std::string kHead = "version = 1\n[[rule]]\nname = \"web\"\ncidr = \"0.0.0.0/0\"\n";     // rule at line 2
const std::string kTcp = "proto = \"tcp\"\ndport = 443\nsyn = true\nrate = 10\nburst = 10\n";  // lines 5-9
const std::string kLimits = "prefix_limits = [\"v4/24=100/s,burst=100\"]\n";                   // line 10

TEST(RulesSynCookies, SetsThePolicyFlagOnlyWhereAsked) {
  const dt::CompiledRules c =
      compiled(kHead + kTcp + kLimits + "syn_cookies = true\n" +
               "[[rule]]\nname = \"plain\"\ncidr = \"198.19.0.0/16\"\n" + kTcp + kLimits + "syn_cookies = false\n");
  ASSERT_EQ(c.policies.size(), 3u);
  EXPECT_NE(c.policies[1].flags & DT_POL_SYN_COOKIES, 0) << "web asks for cookies";
  EXPECT_NE(c.policies[1].flags & DT_POL_PREFIX, 0);
  EXPECT_EQ(c.policies[2].flags & DT_POL_SYN_COOKIES, 0) << "syn_cookies = false is the default written out";
  EXPECT_EQ(c.policies[0].flags & DT_POL_SYN_COOKIES, 0) << "never the default rule";
}

TEST(RulesSynCookies, TheNamesOfTheRulesThatAsk) {
  dt::LoadedRules r;
  r.set = dt::default_rules(100, 50);
  std::string err;
  ASSERT_TRUE(dt::parse_rules(kHead + kTcp + kLimits + "syn_cookies = true\n", kOrigin, &r.set, &err)) << err;
  EXPECT_EQ(dt::syn_cookie_rule_names(r), std::vector<std::string>{"web"});
}

TEST(RulesSynCookies, EveryErrorNamesTheRuleAndWhatToDo) {
  struct Case {
    const char *what;
    std::string text, want;
  } cases[] = {
      {"not a boolean", kHead + kTcp + kLimits + "syn_cookies = \"yes\"\n",
       "r.toml:11: rule 'web': 'syn_cookies' must be true or false (without quotes)"},
      {"allow rule", kHead + "action = \"allow\"\nproto = \"tcp\"\nsyn_cookies = true\n",
       "r.toml:7: rule 'web': only throttle rules take syn_cookies ('allow' has no budget to answer for)"},
      {"not TCP", kHead + "proto = \"udp\"\nrate = 10\nburst = 10\n" + kLimits + "syn_cookies = true\n",
       "r.toml:9: rule 'web': syn_cookies answers TCP SYNs: the rule needs proto = \"tcp\" (and usually dport and "
       "syn = true)"},
      {"any protocol", kHead + "rate = 10\nburst = 10\n" + kLimits + "syn_cookies = true\n",
       "r.toml:8: rule 'web': syn_cookies answers TCP SYNs: the rule needs proto = \"tcp\" (and usually dport and "
       "syn = true)"},
      {"no prefix budgets", kHead + kTcp + "syn_cookies = true\n",
       "r.toml:10: rule 'web': syn_cookies answers the SYNs a prefix budget refuses: the rule needs prefix_limits"},
  };
  for (const Case &c : cases) EXPECT_EQ(error_of(c.text), c.want) << c.what;
}

}  // namespace
