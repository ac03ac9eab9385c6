// test_tags.cpp - tag rules and per-tag buckets (agent/rules/tags.h): prefix matching, the
// reference daemon's A/B example with tags, peer debits, collect, rule reloads,
// bounded memory, reserved permits and the batch API under concurrency.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "rules/tags.h"

namespace {

using dt::TagAnswer;
using dt::TagHit;
using dt::TagQuery;
using dt::TagRule;
using dt::TagTable;

constexpr uint64_t kMs = 1'000'000ull;
constexpr uint64_t kSec = 1'000'000'000ull;
constexpr uint64_t T0 = 1000 * kSec;  // far from 0, where a new bucket's TAT lives
constexpr double kNoRefill = 0.000001;

void set_rules(TagTable &t, const std::vector<TagRule> &rules) {
  std::string err;
  ASSERT_TRUE(t.replace_rules(rules, &err)) << err;
}

// Admits `tag` until denied (at most `limit` times); returns how many were admitted.
int drain(TagTable &t, const std::string &tag, uint64_t now, int limit = 100000) {
  int n = 0;
  while (n < limit && t.admit(tag, now)) n++;
  return n;
}

std::map<std::string, uint64_t> collect_map(TagTable &t) {
  std::map<std::string, uint64_t> m;
  for (const TagHit &h : t.collect()) m[h.tag] += h.hits;
  return m;
}

TEST(TagRules, ParsesPrefixRateBurst) {
  TagRule r;
  std::string err;
  ASSERT_TRUE(dt::parse_tag_rule("api:=100/20", &r, &err)) << err;
  EXPECT_EQ(r.prefix, "api:");
  EXPECT_DOUBLE_EQ(r.rate, 100);
  EXPECT_EQ(r.burst, 20u);
  ASSERT_TRUE(dt::parse_tag_rule("user:=6/m/1", &r, &err)) << err;
  EXPECT_EQ(r.prefix, "user:");
  EXPECT_DOUBLE_EQ(r.rate, 0.1) << "6 per minute";
  EXPECT_EQ(r.burst, 1u);
  ASSERT_TRUE(dt::parse_tag_rule("=10/10", &r, &err)) << err;
  EXPECT_EQ(r.prefix, "") << "an empty prefix is the catch-all";
  ASSERT_TRUE(dt::parse_tag_rule("k=v/x=5/2", &r, &err)) << err;
  EXPECT_EQ(r.prefix, "k=v/x") << "the prefix ends at the last '='";
}

TEST(TagRules, RejectsMalformedRules) {
  TagRule r;
  for (const char *bad :
       {"api:100/20", "api:=100", "api:=abc/5", "api:=10/0", "api:=10/", "api:=0/5", "api:=10/5x", "=/"}) {
    std::string err;
    EXPECT_FALSE(dt::parse_tag_rule(bad, &r, &err)) << "accepted '" << bad << "'";
    EXPECT_FALSE(err.empty()) << "no message for '" << bad << "'";
  }
  std::string err;
  EXPECT_FALSE(dt::parse_tag_rule(std::string(1025, 'p') + "=1/1", &r, &err)) << "a prefix longer than any tag";
}

TEST(TagTable, LongestPrefixWinsAndEmptyPrefixCatchesAll) {
  TagTable t;
  set_rules(t, {{"", kNoRefill, 1}, {"api:", kNoRefill, 3}, {"api:search:", kNoRefill, 5}});
  EXPECT_EQ(drain(t, "api:search:u1", T0), 5) << "the longest matching prefix's burst";
  EXPECT_EQ(drain(t, "api:list", T0), 3);
  EXPECT_EQ(drain(t, "api:", T0), 3) << "a tag equal to a prefix matches it";
  EXPECT_EQ(drain(t, "api", T0), 1) << "shorter than 'api:': only the catch-all matches";
  EXPECT_EQ(drain(t, "other", T0), 1);
  EXPECT_EQ(t.size(), 5u) << "one bucket per distinct tag";
}

TEST(TagTable, UnmatchedTagIsAllowedAndCountedWithoutBucket) {
  TagTable t;
  set_rules(t, {{"api:", kNoRefill, 1}});
  for (int i = 0; i < 100; i++) EXPECT_TRUE(t.admit("web:x", T0)) << "query " << i;
  const dt::TagCounters c = t.counters(T0);
  EXPECT_EQ(c.unruled, 100u);
  EXPECT_EQ(c.admitted, 0u);
  EXPECT_EQ(t.size(), 0u) << "no bucket for a tag without a rule";
  EXPECT_TRUE(t.collect().empty()) << "nothing to report for unruled tags";
}

TEST(TagTable, BadRuleSetIsRejectedAndOldRulesStay) {
  TagTable t;
  set_rules(t, {{"a:", kNoRefill, 2}});
  std::string err;
  EXPECT_FALSE(t.replace_rules({{"a:", 1, 1}, {"a:", 2, 2}}, &err));
  EXPECT_NE(err.find("duplicate"), std::string::npos) << err;
  EXPECT_FALSE(t.replace_rules({{"b:", 1, 1}, {"c:", 0, 5}}, &err));
  EXPECT_NE(err.find("rule 2"), std::string::npos) << "the message names the bad rule: " << err;
  EXPECT_EQ(drain(t, "a:x", T0), 2) << "the old rule set still applies";
  ASSERT_EQ(t.rules().size(), 1u);
}

TEST(TagTable, NewBucketStartsFullAndRefillsAtRate) {
  TagTable t;
  set_rules(t, {{"", 10, 3}});  // a token every 100 ms
  EXPECT_EQ(drain(t, "u", T0), 3);
  EXPECT_FALSE(t.admit("u", T0 + 100 * kMs - 1)) << "1 ns short of a token";
  EXPECT_TRUE(t.admit("u", T0 + 100 * kMs));
  EXPECT_EQ(drain(t, "u", T0 + 10 * kSec), 3) << "never more than burst after idling";
  EXPECT_EQ(drain(t, "v", T0), 3) << "another tag has its own full bucket";
}

// The reference daemon's worked example, with a tag for client C on hosts A and B:
// burst 10, rate 1/s, reports every 5 s.
TEST(TagTable, ReferenceABExample) {
  TagTable a, b;
  set_rules(a, {{"", 1, 10}});
  set_rules(b, {{"", 1, 10}});
  const uint64_t t = T0;
  EXPECT_EQ(drain(a, "C", t + 100 * kMs, 9), 9);
  EXPECT_EQ(drain(b, "C", t + 100 * kMs, 8), 8);
  EXPECT_EQ(*a.tokens_milli("C", t + 100 * kMs), 1000);
  EXPECT_EQ(*b.tokens_milli("C", t + 100 * kMs), 2000);
  EXPECT_TRUE(a.admit("C", t + 200 * kMs)) << "A has a token left";
  EXPECT_FALSE(a.admit("C", t + 200 * kMs)) << "A's bucket for C is empty";

  // t = 5: the reports, then each debits the other's hits.
  const auto ra = collect_map(a), rb = collect_map(b);
  EXPECT_EQ(ra.at("C"), 10u) << "A served 10 requests to C";
  EXPECT_EQ(rb.at("C"), 8u) << "B served 8";
  b.debit("C", ra.at("C"), t + 5 * kSec);
  a.debit("C", rb.at("C"), t + 5 * kSec);
  EXPECT_EQ(*a.tokens_milli("C", t + 5100 * kMs), -3000) << "-8 + 5 on A";
  EXPECT_EQ(*b.tokens_milli("C", t + 5100 * kMs), -3000) << "-10 + 5 + 2 on B";
  EXPECT_FALSE(a.admit("C", t + 5200 * kMs));
  EXPECT_FALSE(b.admit("C", t + 5200 * kMs));
  EXPECT_EQ(*a.tokens_milli("C", t + 8100 * kMs), 0);
  EXPECT_FALSE(a.admit("C", t + 9 * kSec)) << "0.9 tokens at t=9";
  EXPECT_TRUE(a.admit("C", t + 9100 * kMs)) << "C may send again about 9 s after its burst";
  EXPECT_TRUE(collect_map(b).empty()) << "debits are not reported back";
  EXPECT_EQ(a.counters(t + 10 * kSec).debited_hits, 8u);
}

TEST(TagTable, CollectReportsAdmittedHitsSinceLastCollect) {
  TagTable t;
  set_rules(t, {{"", kNoRefill, 4}});
  for (int i = 0; i < 6; i++) t.admit("x", T0);
  t.admit("y", T0);
  t.debit("z", 3, T0);
  auto m = collect_map(t);
  EXPECT_EQ(m.size(), 2u) << "only admitted tags; a debit is not a local hit";
  EXPECT_EQ(m["x"], 4u) << "denied queries are not hits";
  EXPECT_EQ(m["y"], 1u);
  EXPECT_TRUE(t.collect().empty()) << "collect resets the hit counts";
  t.admit("y", T0);
  m = collect_map(t);
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m["y"], 1u);
}

TEST(TagTable, DebitCreatesFullBucketAndMayGoNegative) {
  TagTable t;
  set_rules(t, {{"api:", 1, 3}});
  t.debit("api:new", 5, T0);
  EXPECT_EQ(*t.tokens_milli("api:new", T0), -2000) << "full (3) minus 5";
  EXPECT_FALSE(t.admit("api:new", T0));
  EXPECT_FALSE(t.admit("api:new", T0 + 2 * kSec)) << "back to 0 after 2 s";
  EXPECT_TRUE(t.admit("api:new", T0 + 3 * kSec));
  t.debit("web:x", 7, T0);
  const dt::TagCounters c = t.counters(T0);
  EXPECT_EQ(c.debited_hits, 5u);
  EXPECT_EQ(c.debit_unruled, 7u) << "hits for a tag without a rule are ignored, counted";
  EXPECT_FALSE(t.tokens_milli("web:x", T0).has_value());
}

TEST(TagTable, DebitBatchAppliesEveryEntry) {
  TagTable t;
  set_rules(t, {{"", 1, 10}});
  const std::vector<TagHit> batch{{"a", 4}, {"b", 12}, {"a", 1}, {"c", 0}};
  t.debit_batch(batch, T0);
  EXPECT_EQ(*t.tokens_milli("a", T0), 5000);
  EXPECT_EQ(*t.tokens_milli("b", T0), -2000);
  EXPECT_FALSE(t.tokens_milli("c", T0).has_value()) << "0 hits create nothing";
}

TEST(TagTable, ReplaceRulesKeepsEachBucketsBalance) {
  TagTable t;
  set_rules(t, {{"api:", kNoRefill, 10}});
  EXPECT_EQ(drain(t, "api:a", T0, 4), 4);
  t.debit("api:b", 15, T0);
  EXPECT_EQ(drain(t, "api:c", T0, 2), 2);
  set_rules(t, {{"api:", kNoRefill, 20}, {"other", 1, 1}});
  EXPECT_EQ(*t.tokens_milli("api:a", T0), 6000) << "6 tokens stay 6 under a larger burst";
  EXPECT_EQ(*t.tokens_milli("api:b", T0), -5000) << "debt is not forgiven by a reload";
  set_rules(t, {{"api:", kNoRefill, 5}});
  EXPECT_EQ(*t.tokens_milli("api:c", T0), 5000) << "8 tokens are capped at the new burst of 5";
  EXPECT_EQ(*t.tokens_milli("api:b", T0), -5000);
  EXPECT_EQ(drain(t, "api:new", T0), 5) << "new buckets take the new rule";
  EXPECT_EQ(t.size(), 4u) << "the buckets were kept";
}

TEST(TagTable, ReplaceRulesReresolvesToTheNewLongestPrefix) {
  TagTable t;
  set_rules(t, {{"api:", kNoRefill, 3}});
  EXPECT_EQ(drain(t, "api:vip:1", T0, 1), 1);
  set_rules(t, {{"api:", kNoRefill, 3}, {"api:vip:", 1, 100}});
  EXPECT_EQ(*t.tokens_milli("api:vip:1", T0), 2000) << "the balance is kept";
  EXPECT_EQ(drain(t, "api:vip:1", T0), 2);
  EXPECT_EQ(drain(t, "api:vip:1", T0 + 50 * kSec), 50) << "it refills under the new rule (1/s, burst 100)";
  EXPECT_EQ(drain(t, "api:other", T0), 3) << "other tags keep the old prefix's rule";
}

TEST(TagTable, RuleRemovalDropsBucketButKeepsItsHitsForCollect) {
  TagTable t;
  set_rules(t, {{"api:", kNoRefill, 5}});
  EXPECT_EQ(drain(t, "api:a", T0, 2), 2);
  set_rules(t, {});
  EXPECT_TRUE(t.admit("api:a", T0)) << "no rule: allowed";
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.counters(T0).dropped_unruled, 1u);
  const auto m = collect_map(t);
  EXPECT_EQ(m.at("api:a"), 2u) << "hits admitted before the reload are still reported";
}

TEST(TagTable, EvictsFullBucketsBeforeLeastRecentlyUsed) {
  TagTable::Options o;
  o.max_buckets = 3;
  TagTable t(o);
  set_rules(t, {{"slow:", kNoRefill, 2}, {"fast:", 1000, 2}});
  // LRU order, oldest first: slow:b, fast:a, slow:c.
  ASSERT_TRUE(t.admit("slow:b", T0));
  ASSERT_TRUE(t.admit("fast:a", T0));
  ASSERT_TRUE(t.admit("slow:c", T0));
  t.collect();
  // 10 ms later fast:a is full again; slow:b is the least recently used.
  ASSERT_TRUE(t.admit("slow:d", T0 + 10 * kMs));
  EXPECT_EQ(t.size(), 3u);
  EXPECT_FALSE(t.tokens_milli("fast:a", T0 + 10 * kMs).has_value()) << "the full bucket went first";
  EXPECT_EQ(*t.tokens_milli("slow:b", T0 + 10 * kMs), 1000) << "the not-full LRU bucket was kept";
  dt::TagCounters c = t.counters(T0 + 10 * kMs);
  EXPECT_EQ(c.evicted_full, 1u);
  EXPECT_EQ(c.evicted_active, 0u);
  // No full bucket left: the least recently used goes, its state lost (counted).
  ASSERT_TRUE(t.admit("slow:e", T0 + 20 * kMs));
  EXPECT_EQ(t.size(), 3u);
  c = t.counters(T0 + 20 * kMs);
  EXPECT_EQ(c.evicted_active, 1u);
  EXPECT_EQ(c.created, 5u);
  EXPECT_FALSE(t.tokens_milli("slow:b", T0 + 20 * kMs).has_value()) << "LRU order: slow:b was oldest";
  EXPECT_TRUE(t.tokens_milli("slow:c", T0 + 20 * kMs).has_value()) << "slow:c was used more recently";
}

TEST(TagTable, HitsOfEvictedBucketsAreStillCollected) {
  TagTable::Options o;
  o.max_buckets = 1;
  TagTable t(o);
  set_rules(t, {{"", kNoRefill, 5}});
  ASSERT_TRUE(t.admit("a", T0));
  ASSERT_TRUE(t.admit("a", T0));
  ASSERT_TRUE(t.admit("b", T0));
  EXPECT_EQ(t.size(), 1u);
  const auto m = collect_map(t);
  EXPECT_EQ(m.at("a"), 2u) << "evicted before the report, still reported";
  EXPECT_EQ(m.at("b"), 1u);
}

TEST(TagTable, BucketCountStaysBounded) {
  TagTable::Options o;
  o.max_buckets = 1000;
  o.max_orphan_tags = 100;
  TagTable t(o);
  set_rules(t, {{"", kNoRefill, 2}});
  for (int i = 0; i < 20000; i++) ASSERT_TRUE(t.admit("tag" + std::to_string(i), T0)) << "new tags start full";
  EXPECT_EQ(t.size(), 1000u);
  const dt::TagCounters c = t.counters(T0);
  EXPECT_EQ(c.created, 20000u);
  EXPECT_EQ(c.evicted_active, 19000u);
  const auto hits = t.collect();
  EXPECT_EQ(hits.size(), 1100u) << "1000 live buckets + the bounded orphans";
  EXPECT_EQ(c.lost_hits, 18900u) << "hits past the orphan bound are counted as lost";
}

TEST(TagTable, ReserveGivesTokenNowThenFutureTokens) {
  TagTable t;
  set_rules(t, {{"r:", 10, 1}});  // a token every 100 ms
  const uint64_t max_wait = 250 * kMs;
  EXPECT_EQ(t.reserve("r:a", T0, max_wait), std::optional<uint64_t>(0)) << "a token now";
  EXPECT_EQ(t.reserve("r:a", T0, max_wait), std::optional<uint64_t>(100 * kMs));
  EXPECT_EQ(t.reserve("r:a", T0 + 10 * kMs, max_wait), std::optional<uint64_t>(190 * kMs));
  EXPECT_EQ(t.reserve("r:a", T0 + 10 * kMs, max_wait), std::nullopt) << "290 ms is over the max wait";
  EXPECT_FALSE(t.admit("r:a", T0 + 150 * kMs)) << "the tokens up to 200 ms are reserved";
  EXPECT_TRUE(t.admit("r:a", T0 + 300 * kMs)) << "the next unreserved token";
  EXPECT_EQ(t.reserve("web", T0, max_wait), std::optional<uint64_t>(0)) << "no rule: go now";
  const dt::TagCounters c = t.counters(T0 + 10 * kMs);
  EXPECT_EQ(c.reserved, 2u);
  EXPECT_EQ(c.reserve_too_far, 1u);
  EXPECT_EQ(c.outstanding, 2u);
  EXPECT_EQ(t.counters(T0 + 200 * kMs).outstanding, 0u) << "reservations expire when their time comes";
  EXPECT_EQ(collect_map(t).at("r:a"), 4u) << "reservations are hits to report";
}

TEST(TagTable, ReservationsAreBoundedPerTagAndInTotal) {
  TagTable::Options o;
  o.max_reservations_per_tag = 2;
  o.max_reservations = 3;
  TagTable t(o);
  set_rules(t, {{"", 1, 1}});
  const uint64_t max_wait = 100 * kSec;
  EXPECT_EQ(t.reserve("a", T0, max_wait), std::optional<uint64_t>(0));
  EXPECT_EQ(t.reserve("a", T0, max_wait), std::optional<uint64_t>(1 * kSec));
  EXPECT_EQ(t.reserve("a", T0, max_wait), std::optional<uint64_t>(2 * kSec));
  EXPECT_EQ(t.reserve("a", T0, max_wait), std::nullopt) << "2 outstanding for 'a'";
  EXPECT_EQ(t.reserve("b", T0, max_wait), std::optional<uint64_t>(0)) << "a token now is no reservation";
  EXPECT_EQ(t.reserve("b", T0, max_wait), std::optional<uint64_t>(1 * kSec));
  EXPECT_EQ(t.reserve("c", T0, max_wait), std::optional<uint64_t>(0));
  EXPECT_EQ(t.reserve("c", T0, max_wait), std::nullopt) << "3 outstanding in total";
  EXPECT_EQ(t.counters(T0).reserve_bounded, 2u);
  // The first reservations of a and b come due at T0 + 1 s.
  EXPECT_EQ(t.counters(T0 + 1 * kSec).outstanding, 1u);
  EXPECT_EQ(t.reserve("a", T0 + 1 * kSec, max_wait), std::optional<uint64_t>(2 * kSec));
}

TEST(TagTable, ZeroReservationsMeansPessimistic) {
  TagTable::Options o;
  o.max_reservations_per_tag = 0;
  TagTable t(o);
  set_rules(t, {{"", 1, 1}});
  EXPECT_EQ(t.reserve("a", T0, kSec * 10), std::optional<uint64_t>(0));
  EXPECT_EQ(t.reserve("a", T0, kSec * 10), std::nullopt) << "no reservation may be outstanding";
}

TEST(TagTable, BatchAnswersExactlyAsSingleQueries) {
  TagTable batched, single;
  const std::vector<TagRule> rules{{"q:", 10, 2}, {"r:", 10, 1}};
  set_rules(batched, rules);
  set_rules(single, rules);
  const std::vector<std::pair<std::string, bool>> seq{{"q:a", false}, {"q:a", false}, {"q:a", false}, {"r:x", true},
                                                      {"r:x", true},  {"r:x", true},  {"zz", false},  {"zz", true},
                                                      {"q:b", true},  {"q:a", true}};
  std::vector<TagQuery> qs;
  for (const auto &[tag, reserve] : seq) qs.push_back({tag, reserve});
  batched.answer_batch(qs, T0, 150 * kMs);
  for (size_t i = 0; i < seq.size(); i++) {
    const auto &[tag, reserve] = seq[i];
    if (!reserve) {
      EXPECT_EQ(qs[i].answer, single.admit(tag, T0) ? TagAnswer::Ok : TagAnswer::No) << "query " << i;
      continue;
    }
    const auto w = single.reserve(tag, T0, 150 * kMs);
    const TagAnswer want = !w ? TagAnswer::No : *w ? TagAnswer::Wait : TagAnswer::Ok;
    EXPECT_EQ(qs[i].answer, want) << "query " << i;
    EXPECT_EQ(qs[i].wait_ns, w.value_or(0)) << "query " << i;
  }
  EXPECT_EQ(qs[4].answer, TagAnswer::Wait);
  EXPECT_EQ(qs[4].wait_ns, 100 * kMs);
  EXPECT_EQ(qs[5].answer, TagAnswer::No) << "200 ms is over the 150 ms max wait";
}

// The query thread answers batches while the main thread debits and collects: every
// admitted hit is collected exactly once.
TEST(TagTable, ConcurrentBatchesDebitsAndCollects) {
  TagTable t;
  set_rules(t, {{"", 1000, 500}});
  constexpr int kBatches = 2000, kPerBatch = 64, kTags = 50;
  std::atomic<bool> done{false};
  uint64_t answered_ok = 0;
  std::thread query([&] {
    std::vector<std::string> tags;
    for (int i = 0; i < kTags; i++) tags.push_back("t" + std::to_string(i));
    std::vector<TagQuery> qs(kPerBatch);
    for (int b = 0; b < kBatches; b++) {
      for (int i = 0; i < kPerBatch; i++) qs[i] = {tags[(b * kPerBatch + i) % kTags], i % 7 == 0};
      t.answer_batch(qs, T0 + static_cast<uint64_t>(b) * kMs, 50 * kMs);
      for (const TagQuery &q : qs) answered_ok += q.answer != TagAnswer::No;
    }
    done = true;
  });
  uint64_t collected = 0;
  for (int round = 0; round < 100000 && !done; round++) {
    for (const TagHit &h : t.collect()) collected += h.hits;
    t.debit("t" + std::to_string(round % kTags), 1, T0);
  }
  query.join();
  for (const TagHit &h : t.collect()) collected += h.hits;
  const dt::TagCounters c = t.counters(T0 + 10 * kSec);
  EXPECT_EQ(collected, c.admitted + c.reserved) << "each admitted or reserved hit collected once";
  EXPECT_EQ(answered_ok, c.admitted + c.reserved);
  EXPECT_EQ(c.admitted + c.reserved + c.denied, uint64_t{kBatches} * kPerBatch);
}

}  // namespace
