// test_explain.cpp - `agent explain`: the words for a rule's conditions, the rendering of
// an explanation, and the watch of peers' reports for one source (cluster/source_watch.h).
#include <gtest/gtest.h>

#include "cluster/source_watch.h"
#include "commands/explain.h"
#include "common/address.h"
#include "dataplane/policy.h"
#include "dthrottle/bucket.h"
#include "text_checks.h"

namespace dt {
namespace {

using test::contains;

dt_key key_of(const char *text, uint32_t rule = 0) {
  dt_key k{};
  EXPECT_TRUE(key_from_string(text, &k)) << text;
  k.rule = rule;
  return k;
}

TEST(Explain, MatchText) {
  dt_rule_match m{};
  EXPECT_EQ(match_text(m), "any packet");
  m.proto = 17;
  m.flags = DT_MATCH_PORTS;
  m.dport_lo = m.dport_hi = 53;
  EXPECT_EQ(match_text(m), "udp dport 53");
  m.proto = 6;
  m.flags = DT_MATCH_PORTS | DT_MATCH_TCP_FLAGS;
  m.tcp_mask = DT_TCP_SYN | DT_TCP_ACK, m.tcp_value = DT_TCP_SYN;
  m.dport_lo = 80, m.dport_hi = 89;
  EXPECT_EQ(match_text(m), "tcp syn dport 80-89");
  m = dt_rule_match{};
  m.flags = DT_MATCH_TCP_FLAGS;
  m.tcp_mask = DT_TCP_SYN | DT_TCP_ACK, m.tcp_value = DT_TCP_SYN;
  EXPECT_EQ(match_text(m), "tcp syn");
  m.proto = 132;
  EXPECT_EQ(match_text(m), "protocol 132 syn");
}

// What the rendering tests start from: 198.18.9.9 explained with no --rules, under the default
// rule (100/s, burst 50) and its key, no bucket. Call it in ASSERT_NO_FATAL_FAILURE.
void explain_under_default_rule(Explanation *e) {
  e->address = "198.18.9.9";
  e->addr = key_of("198.18.9.9");
  ExplainRule r;
  r.name = "default";
  r.when = "any packet";
  std::string err;
  ASSERT_TRUE(make_policy(100, 50, &r.policy, &err)) << err;
  r.key = e->addr;
  e->rules.push_back(r);
}

TEST(Explain, RendersAnUnknownSourceAndNoAgent) {
  Explanation e;
  ASSERT_NO_FATAL_FAILURE(explain_under_default_rule(&e));
  e.peers.state = ExplainPeers::State::NoAgent;
  const std::string text = render_explanation_text(e);
  EXPECT_TRUE(contains(text, "198.18.9.9: no --rules: every packet uses the default rule"));
  EXPECT_TRUE(contains(text,
                       "rule default: no bucket for 198.18.9.9/32 (never seen, or evicted): it would start full, "
                       "50 tokens"));
  EXPECT_TRUE(contains(text, "peers: unknown: no agent is running"));
  const std::string json = render_explanation_json(e);
  EXPECT_TRUE(contains(json, R"("bucket":null)"));
  EXPECT_TRUE(contains(json, R"("peers":{"state":"no_agent"})"));
}

TEST(Explain, SaysWhichListHoldsTheSource) {
  Explanation e;
  ASSERT_NO_FATAL_FAILURE(explain_under_default_rule(&e));
  EXPECT_EQ(render_explanation_text(e).find("list"), std::string::npos) << "on no list: no list line";
  EXPECT_TRUE(contains(render_explanation_json(e), R"("lists":{"allow":false,"deny":false})"));
  e.deny_listed = true;
  EXPECT_EQ(render_explanation_text(e).rfind("198.18.9.9: on the deny list: dropped before the rules below\n", 0), 0u)
      << render_explanation_text(e);
  e.dry_run = true;
  EXPECT_TRUE(contains(render_explanation_text(e), "on the deny list: would be dropped (dry run)"));
  e.allow_listed = true;
  EXPECT_EQ(render_explanation_text(e).rfind("198.18.9.9: on the allow list: passes whatever the rules below say\n", 0),
            0u)
      << "the allow list beats the deny list: " << render_explanation_text(e);
  EXPECT_TRUE(contains(render_explanation_json(e), R"("lists":{"allow":true,"deny":true})"));
}

TEST(Explain, RendersThePrefixBudgetsASourceShares) {
  Explanation e;
  ASSERT_NO_FATAL_FAILURE(explain_under_default_rule(&e));
  ExplainRule &r = e.rules.back();
  std::string err;
  ExplainLevel l;
  l.level = "v4/16";
  ASSERT_TRUE(make_policy(1000, 200, &l.policy, &err)) << err;
  l.policy.v4_key_bits = 16;
  dt_key_for_level(&l.key, &e.addr, 0, 16, 0);
  l.has_bucket = true;
  l.bucket.passed = 700;
  l.bucket.debited = 5;
  l.bucket.tat_ns = 0;  // full
  r.levels.push_back(l);
  ExplainLevel l24 = l;
  l24.level = "v4/24";
  l24.has_bucket = false;
  dt_key_for_level(&l24.key, &e.addr, 0, 24, 0);
  r.levels.push_back(l24);
  const std::string text = render_explanation_text(e);
  EXPECT_TRUE(contains(text,
                       "rule default per v4/16 prefix (1000/s burst 200, shared by every source of 198.18.0.0/16): "
                       "200.000 of 200 tokens now; passed 700, debited 5 (peers' hits)"));
  EXPECT_TRUE(contains(text,
                       "rule default per v4/24 prefix (1000/s burst 200, shared by every source of 198.18.9.0/24): "
                       "no bucket yet, it would start full"));
  const std::string json = render_explanation_json(e);
  EXPECT_TRUE(contains(json, R"("prefix_levels":[{"level":"v4/16","rate":1000,"burst":200,"key":"198.18.0.0","bucket":)"
                             R"({"tokens":200.0,"passed":700,"debited":5}},{"level":"v4/24")"));
}

ReportBody body_with(std::vector<std::pair<const char *, uint64_t>> entries) {
  ReportBody b;
  b.rules = {"default", "web"};
  for (const auto &[addr, hits] : entries) b.entries.push_back({key_of(addr, 1), hits});
  return b;
}

TEST(SourceWatch, CountsTheSourceUnderAnyKeyPrefixAndNothingElse) {
  SourceWatch w;
  const dt_key src = key_of("198.18.3.7");
  EXPECT_FALSE(w.active());
  w.observe("h2", body_with({{"198.18.3.7", 5}}));  // not watching: ignored
  w.start(src.addr, 1000);
  w.observe("h2", body_with({{"198.18.3.7", 5}, {"198.18.3.8", 100}, {"198.18.4.7", 100}}));
  w.observe("h2", body_with({{"198.18.3.0", 7}}));                 // its /24 bucket key
  w.observe("h3", body_with({{"198.18.0.0", 2}}));                 // its /16 bucket key
  w.observe("h3", body_with({{"0.0.0.0", 9}, {"2001:2::1", 9}}));  // not prefixes of an IPv4 source
  EXPECT_FALSE(w.done(999));
  EXPECT_TRUE(w.done(1000));
  const auto seen = w.take();
  ASSERT_EQ(seen.size(), 2u) << "one row per (peer, rule)";
  EXPECT_EQ(seen[0].node, "h2");
  EXPECT_EQ(seen[0].rule, "web");
  EXPECT_EQ(seen[0].hits, 12u) << "198.18.3.7 itself and its /24 key; 198.18.3.8 and 198.18.4.7 are others";
  EXPECT_EQ(seen[0].reports, 2u);
  EXPECT_EQ(seen[1].node, "h3");
  EXPECT_EQ(seen[1].hits, 2u);
  EXPECT_FALSE(w.active()) << "take ends the watch";
}

TEST(SourceWatch, IPv6KeyPrefixes) {
  SourceWatch w;
  const dt_key src = key_of("2001:2:0:5::9");
  w.start(src.addr, 1);
  w.observe("h2", body_with({{"2001:2:0:5::", 3}, {"2001:2:0:6::", 4}, {"2001:2:0:5::9", 1}}));
  const auto seen = w.take();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].hits, 4u) << "the /64 key and the address, not the other /64";
}

}  // namespace
}  // namespace dt
