// test_escalation.cpp - repeat offenders banned (policy/escalation.h, docs/rules.md
// "Escalation"): an offence must last `after`, the ban grows by `factor` with each repeat
// up to `max`, a repeat after `forget` starts again, exempt sources and the cap, dry run,
// the bounded tracking, save and load; and the rules file's `escalate` table.
#include <gtest/gtest.h>

#include <sstream>

#include "policy/escalation.h"
#include "rules/rules.h"

namespace dt {
namespace {

constexpr uint64_t kS = 1'000'000'000ull;

BanPrefix prefix(const std::string &text) {
  BanPrefix p;
  std::string err;
  EXPECT_TRUE(parse_ban_prefix(text, &p, &err)) << err;
  return p;
}

// after 3s, ban 10s x2 up to 35s, forgotten 100s after a ban's end.
EscalateConfig config() {
  EscalateConfig c;
  c.enabled = true;
  c.after_ns = 3 * kS;
  c.ban_ns = 10 * kS;
  c.factor = 2;
  c.max_ns = 35 * kS;
  c.forget_ns = 100 * kS;
  return c;
}

struct EscalationTest : ::testing::Test {
  uint64_t now = 1000 * kS;
  Escalation esc{[this] { return now; }, 4, 8};
  void SetUp() override { esc.set_rules({{7, EscalationRule{"flood", config(), false}}}); }
  // `seconds` checks, one a second, with `who` over budget (100 drops each); the bans made.
  std::vector<AutoBan> flood(const std::vector<std::string> &who, int seconds) {
    std::vector<AutoBan> out;
    for (int i = 0; i < seconds; i++) {
      std::vector<OverBudget> over;
      for (const std::string &w : who) over.push_back({prefix(w), 7, 100});
      for (const AutoBan &b : esc.check(over)) out.push_back(b);
      now += kS;
    }
    return out;
  }
  void quiet(int seconds) {
    for (int i = 0; i < seconds; i++, now += kS) esc.check({});
  }
};

TEST_F(EscalationTest, BannedOnlyAfterOverBudgetForAfter) {
  EXPECT_TRUE(flood({"198.18.1.1"}, 3).empty()) << "banned before 3 s over budget";
  const std::vector<AutoBan> bans = flood({"198.18.1.1"}, 1);
  ASSERT_EQ(bans.size(), 1u) << "not banned once over budget for 3 s";
  EXPECT_EQ(ban_prefix_text(bans[0].prefix), "198.18.1.1");
  EXPECT_EQ(bans[0].rule, "flood");
  EXPECT_EQ(bans[0].duration_ns, 10 * kS);
  EXPECT_EQ(bans[0].offence, 1u);
  EXPECT_EQ(bans[0].drops, 400u) << "the drops of the whole offence";
  EXPECT_EQ(bans[0].evidence(), "400 dropped in 3s over budget, offence 1");
  EXPECT_FALSE(bans[0].dry_run);
  EXPECT_EQ(esc.counters().bans, 1u);
  EXPECT_EQ(esc.in_force(), 1u);
  AutoBan prefix_ban = bans[0];
  prefix_ban.drops = 0;  // a prefix budget's offence: no drops of its own
  EXPECT_EQ(prefix_ban.evidence(), "out of budget for 3s, offence 1");
}

TEST_F(EscalationTest, AGapEndsTheOffence) {
  flood({"198.18.1.1"}, 2);
  quiet(3);  // more than kOffenceGapNs without being over budget
  // The new offence began at the check before the first that saw it (its drops came since).
  EXPECT_TRUE(flood({"198.18.1.1"}, 2).empty()) << "an offence interrupted for 3 s went on counting";
  EXPECT_EQ(flood({"198.18.1.1"}, 1).size(), 1u);
  EXPECT_EQ(esc.counters().offences, 2u);
}

TEST_F(EscalationTest, RepeatsGrowByFactorUpToMax) {
  std::vector<uint64_t> lengths;
  for (int round = 0; round < 4; round++) {
    std::vector<AutoBan> bans;
    for (int i = 0; i < 60 && bans.empty(); i++) bans = flood({"198.18.1.1"}, 1);
    ASSERT_EQ(bans.size(), 1u) << "round " << round;
    lengths.push_back(bans[0].duration_ns / kS);
    EXPECT_EQ(bans[0].offence, static_cast<uint32_t>(round + 1));
  }
  EXPECT_EQ(lengths, (std::vector<uint64_t>{10, 20, 35, 35})) << "ban x factor, at most max";
}

TEST_F(EscalationTest, NotANewOffenceWhileBanned) {
  ASSERT_EQ(flood({"198.18.1.1"}, 4).size(), 1u);
  // Its ban (10 s) holds: whatever the evidence says meanwhile, no second ban.
  EXPECT_TRUE(flood({"198.18.1.1"}, 9).empty());
}

TEST_F(EscalationTest, ForgottenAfterForget) {
  ASSERT_EQ(flood({"198.18.1.1"}, 4).size(), 1u);
  quiet(10 + 101);  // the ban's 10 s, then more than `forget`
  const std::vector<AutoBan> bans = flood({"198.18.1.1"}, 4);
  ASSERT_EQ(bans.size(), 1u);
  EXPECT_EQ(bans[0].offence, 1u) << "an offence after `forget` was escalated";
  EXPECT_EQ(bans[0].duration_ns, 10 * kS);
}

TEST_F(EscalationTest, ExemptNeverBanned) {
  esc.set_exempt([](const BanPrefix &p, std::string *why) {
    *why = "allow list";
    return ban_prefix_text(p) == "198.18.5.5";
  });
  const std::vector<AutoBan> bans = flood({"198.18.5.5", "198.18.1.1"}, 12);
  ASSERT_EQ(bans.size(), 1u);
  EXPECT_EQ(ban_prefix_text(bans[0].prefix), "198.18.1.1") << "the exempt source was banned";
  EXPECT_GE(esc.counters().exempt, 3u) << "each offence of the exempt source counted";
}

TEST_F(EscalationTest, CapOnBansInForce) {
  // Cap 4: five offenders at once, the fifth waits (counted) until one ban ends.
  const std::vector<AutoBan> bans = flood({"198.18.1.1", "198.18.1.2", "198.18.1.3", "198.18.1.4", "198.18.1.5"}, 4);
  EXPECT_EQ(bans.size(), 4u);
  EXPECT_GE(esc.counters().cap_reached, 1u);
  EXPECT_EQ(esc.in_force(), 4u);
  std::vector<AutoBan> later = flood({"198.18.1.5"}, 10);
  ASSERT_EQ(later.size(), 1u) << "the offender over the cap was not banned once room came";
  EXPECT_EQ(ban_prefix_text(later[0].prefix), "198.18.1.5");
}

TEST_F(EscalationTest, DryRunCountsAndEscalatesWithoutBanning) {
  EscalationRule r{"flood", config(), true};
  esc.set_rules({{7, r}});
  std::vector<AutoBan> bans = flood({"198.18.1.1"}, 4);
  ASSERT_EQ(bans.size(), 1u);
  EXPECT_TRUE(bans[0].dry_run);
  EXPECT_EQ(esc.counters().bans, 0u);
  EXPECT_EQ(esc.counters().would_ban, 1u);
  bans = flood({"198.18.1.1"}, 20);  // its would-be ban ends after 10 s; the next offence would be 20 s
  ASSERT_EQ(bans.size(), 1u);
  EXPECT_EQ(bans[0].duration_ns, 20 * kS);
}

TEST_F(EscalationTest, UnknownRuleIgnored) {
  for (int i = 0; i < 10; i++, now += kS) EXPECT_TRUE(esc.check({{prefix("198.18.1.1"), 8, 1}}).empty());
  EXPECT_EQ(esc.tracked(), 0u);
}

TEST_F(EscalationTest, TrackingIsBoundedOldestFirst) {
  // At most 8 offenders: 12 distinct ones, each over budget once, leave the last 8.
  for (int i = 0; i < 12; i++) esc.check({{prefix("198.18.2." + std::to_string(i)), 7, 1}});
  EXPECT_EQ(esc.tracked(), 8u);
  EXPECT_EQ(esc.counters().evicted, 4u);
}

TEST_F(EscalationTest, APeersBanIsInTheHistory) {
  EXPECT_FALSE(esc.learn(prefix("198.18.1.1"), "other", 1, now + 10 * kS)) << "a rule this host does not have";
  ASSERT_TRUE(esc.learn(prefix("198.18.1.1"), "flood", 2, now + 10 * kS));
  EXPECT_FALSE(esc.learn(prefix("198.18.1.1"), "flood", 1, now + 5 * kS)) << "an older ban taken again";
  EXPECT_EQ(esc.counters().learned, 1u);
  EXPECT_EQ(esc.in_force(), 0u) << "a peer's ban counts against this host's cap";
  EXPECT_TRUE(flood({"198.18.1.1"}, 10).empty()) << "an offence while the peer's ban is in force";
  std::vector<AutoBan> bans;
  for (int i = 0; i < 10 && bans.empty(); i++) bans = flood({"198.18.1.1"}, 1);
  ASSERT_EQ(bans.size(), 1u) << "not banned after the peer's ban ended";
  EXPECT_EQ(bans[0].offence, 3u) << "the peer's offence 2 was not in the history";
  EXPECT_EQ(bans[0].duration_ns, 35 * kS) << "10 s x 2 x 2, at most 35 s";
}

constexpr uint64_t kMs = 1'000'000ull;

TEST(EscalationStart, PlacedByTheDropsRate) {
  // 150 drops seen at 1200 ms, then 200 more in 200 ms (1000/s): they began at 1050 ms.
  EXPECT_EQ(start_estimate(1000 * kMs, 1200 * kMs, 150, 200, 200 * kMs), 1050 * kMs);
  // Never before the floor (old drops in the first count), never after the first sighting.
  EXPECT_EQ(start_estimate(1000 * kMs, 1200 * kMs, 1'000'000, 200, 200 * kMs), 1000 * kMs);
  const uint64_t late = start_estimate(1000 * kMs, 1200 * kMs, 1, 1'000'000, 200 * kMs);
  EXPECT_LE(late, 1200 * kMs);
  EXPECT_GE(late, 1199 * kMs);
  // No rate to go by (a prefix budget's offence has no drops of its own): the floor.
  EXPECT_EQ(start_estimate(1000 * kMs, 1200 * kMs, 0, 200, 200 * kMs), 1000 * kMs);
  EXPECT_EQ(start_estimate(1000 * kMs, 1200 * kMs, 150, 0, 200 * kMs), 1000 * kMs);
  EXPECT_EQ(start_estimate(1200 * kMs, 1200 * kMs, 150, 200, 200 * kMs), 1200 * kMs);
}

// Checks every 200 ms (the default period) and at next_due(), as the driver makes them.
struct PeriodTest : ::testing::Test {
  uint64_t now = 1000 * kS;
  Escalation esc{[this] { return now; }};
  uint64_t drops_at(uint64_t t) const { return t > start && t < stop ? (t - start) / kMs : 0; }  // 1000/s
  uint64_t start = 0, stop = UINT64_MAX, counted = 0;
  void SetUp() override { esc.set_rules({{7, EscalationRule{"flood", config(), false}}}); }
  // Checks until `until` (monotonic ns): the first ban made, and when.
  bool run(uint64_t until, AutoBan *ban, uint64_t *when) {
    while (now < until) {
      std::vector<OverBudget> over;
      const uint64_t d = drops_at(now);
      if (d > counted) over.push_back({prefix("198.18.1.1"), 7, d - counted});
      counted = std::max(counted, d);
      const std::vector<AutoBan> bans = esc.check(over);
      if (!bans.empty()) return *ban = bans[0], *when = now, true;
      const uint64_t due = esc.next_due();
      now = due > now && due < now + 200 * kMs ? due : now + 200 * kMs;
    }
    return false;
  }
};

TEST_F(PeriodTest, BannedWhenTheOffenceLastsAfterNotAtThePeriodAfter) {
  EXPECT_EQ(esc.next_due(), UINT64_MAX) << "due with no offence under way";
  start = now + 1050 * kMs;  // between two checks
  AutoBan ban;
  uint64_t when = 0;
  ASSERT_TRUE(run(now + 10 * kS, &ban, &when)) << "never banned";
  EXPECT_GE(when, start + 3 * kS) << "banned before 3 s over budget";
  EXPECT_LE(when, start + 3 * kS + 1 * kMs)
      << "banned " << (when - start - 3 * kS) / kMs << " ms after crossing `after`";
  EXPECT_EQ(ban.offence, 1u);
  EXPECT_EQ(ban.over_ns, 3 * kS) << "its evidence counts from when its drops began";
}

TEST_F(PeriodTest, SecondOffenceCountsFromTheBansEnd) {
  start = now + 30 * kMs;
  AutoBan ban;
  uint64_t when = 0;
  ASSERT_TRUE(run(now + 10 * kS, &ban, &when));
  // Banned 10 s; its drops go on (the bucket's count grows again once the ban ends).
  const uint64_t end = ban.expires_ns;
  start = end;  // drops_at() counts on from the ban's end
  counted = 0;
  ASSERT_TRUE(run(end + 10 * kS, &ban, &when)) << "no second ban";
  EXPECT_EQ(ban.offence, 2u);
  EXPECT_GE(when, end + 3 * kS) << "the second offence counted time while banned";
  EXPECT_LE(when, end + 3 * kS + 200 * kMs)
      << "second ban " << (when - end - 3 * kS) / kMs << " ms after crossing `after`";
}

TEST_F(PeriodTest, NotBannedWhenItStopsBeforeAfter) {
  start = now + 100 * kMs;
  stop = start + 2900 * kMs;
  AutoBan ban;
  uint64_t when = 0;
  EXPECT_FALSE(run(now + 10 * kS, &ban, &when)) << "banned after 2.9 s over budget (after = 3 s)";
}

TEST(EscalationEvidence, OffenceParsedBack) {
  AutoBan b;
  b.drops = 12;
  b.over_ns = 3 * kS;
  b.offence = 7;
  uint32_t n = 0;
  ASSERT_TRUE(parse_offence(b.evidence(), &n)) << b.evidence();
  EXPECT_EQ(n, 7u);
  for (const char *bad : {"by hand", "x, offence ", "x, offence 0", "x, offence 12x", "x, offence 99999999"})
    EXPECT_FALSE(parse_offence(bad, &n)) << bad;
}

TEST_F(EscalationTest, SaveAndLoadKeepTheHistory) {
  ASSERT_EQ(flood({"198.18.1.1"}, 4).size(), 1u);
  quiet(12);  // its 10 s ban over
  std::stringstream state;
  esc.save(state, 5'000'000);
  uint64_t now2 = 50 * kS;  // a new agent: another monotonic reading, 2 s later by the wall clock
  Escalation next([&] { return now2; }, 4, 8);
  next.set_rules({{7, EscalationRule{"flood", config(), false}}});
  ASSERT_EQ(next.load(state, 5'002'000), 1u) << state.str();
  std::vector<AutoBan> bans;
  for (int i = 0; i < 5 && bans.empty(); i++, now2 += kS) bans = next.check({{prefix("198.18.1.1"), 7, 1}});
  ASSERT_EQ(bans.size(), 1u);
  EXPECT_EQ(bans[0].offence, 2u) << "the restarted agent forgot the first ban";
  EXPECT_EQ(bans[0].duration_ns, 20 * kS);
  std::stringstream bad("dthrottle-escalation v1\nnot a line\n198.18.0.0/33 flood 1 5\n");
  EXPECT_EQ(next.load(bad, 5'002'000), 0u);
  std::stringstream other("something else\n198.18.1.1 flood 1 5000000\n");
  EXPECT_EQ(next.load(other, 5'002'000), 0u) << "a file without the header was read";
}

TEST(EscalateConfig, BanOfOffence) {
  EscalateConfig c = config();
  EXPECT_EQ(escalated_ban_ns(c, 1), 10 * kS);
  EXPECT_EQ(escalated_ban_ns(c, 2), 20 * kS);
  EXPECT_EQ(escalated_ban_ns(c, 3), 35 * kS);
  EXPECT_EQ(escalated_ban_ns(c, 4000000000u), 35 * kS) << "a long history overflowed";
  c.factor = 1;
  EXPECT_EQ(escalated_ban_ns(c, 9), 10 * kS);
}

// --- the rules file ---

bool parse(const std::string &body, RuleSet *rs, std::string *err) {
  *rs = default_rules(100, 50);
  return parse_rules("version = 1\n[[rule]]\nname = \"flood\"\ncidr = \"198.18.0.0/15\"\n" + body, "r.toml", rs, err);
}

TEST(EscalateTable, Parsed) {
  RuleSet rs;
  std::string err;
  ASSERT_TRUE(
      parse("rate = 10\nburst = 20\nescalate = { after = \"30s\", ban = \"10m\", factor = 2, max = \"7d\", "
            "forget = \"14d\" }\n",
            &rs, &err))
      << err;
  const EscalateConfig &c = rs.rules.back().escalate;
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.after_ns, 30 * kS);
  EXPECT_EQ(c.ban_ns, 600 * kS);
  EXPECT_EQ(c.max_ns, 7 * 86400 * kS);
  EXPECT_EQ(c.forget_ns, 14 * 86400 * kS);
  EXPECT_FALSE(c.sources);
  ASSERT_TRUE(parse("rate = 10\nburst = 20\nescalate = { ban = \"10d\" }\n", &rs, &err)) << err;
  EXPECT_EQ(rs.rules.back().escalate.max_ns, 10 * 86400 * kS) << "a ban over the default max without a max";
  ASSERT_TRUE(
      parse("rate = 10\nburst = 20\nprefix_limits = [\"v4/24=100/s,burst=100\"]\n"
            "escalate = { after = \"2s\", sources = true }\n",
            &rs, &err))
      << err;
  EXPECT_TRUE(rs.rules.back().escalate.sources);
}

TEST(EscalateTable, RefusedWithTheLineAndWhy) {
  const struct {
    const char *body, *expect;
  } cases[] = {
      {"rate = 1\nburst = 1\nescalate = true\n", "r.toml:7: 'escalate' must be a table"},
      {"rate = 1\nburst = 1\nescalate = { bogus = 1 }\n", "unknown key 'bogus'"},
      {"rate = 1\nburst = 1\nescalate = { after = 30 }\n", "escalate 'after' must be a duration in quotes"},
      {"rate = 1\nburst = 1\nescalate = { ban = \"31d\" }\n", "escalate 'ban' must be a duration"},
      {"rate = 1\nburst = 1\nescalate = { ban = \"1h\", max = \"10m\" }\n", "'max' (10m 0s) is shorter than 'ban'"},
      {"rate = 1\nburst = 1\nescalate = { factor = 0.5 }\n", "'factor' must be a number from 1"},
      {"rate = 1\nburst = 1\nescalate = { factor = \"2\" }\n", "escalate 'factor' must be a number"},
      {"rate = 1\nburst = 1\nescalate = { sources = \"yes\" }\n", "'sources' must be true or false"},
      {"action = \"deny\"\nescalate = {}\n", "only throttle rules escalate"},
      {"rate = 1\nburst = 1\nkey_by = \"destination\"\nescalate = {}\n", "this rule's buckets are destinations"},
  };
  for (const auto &cs : cases) {
    RuleSet rs;
    std::string err;
    EXPECT_FALSE(parse(cs.body, &rs, &err)) << cs.body;
    EXPECT_NE(err.find(cs.expect), std::string::npos) << "text:\n" << cs.body << "got: " << err;
  }
}

}  // namespace
}  // namespace dt
