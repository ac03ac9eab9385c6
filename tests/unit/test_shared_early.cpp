// test_shared_early.cpp - which shared sources go out at an early tick (cluster_core/shared_early.h,
// docs/cluster-scale.md "Why the ratio moves with the seed"): shared, hits never reported,
// and the bucket here below half the burst; anything else waits for the period's report.
#include <gtest/gtest.h>

#include <map>

#include "cluster_core/shared_early.h"

namespace {

using dt::BucketView;
using dt::ReportRouter;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kNow = 10'000 * kMs;

dt_key v4(uint8_t i) {
  dt_key k{};
  k.addr[10] = k.addr[11] = 0xff;
  k.addr[12] = 198, k.addr[13] = 18, k.addr[15] = i;
  return k;
}

// Rate 100/s, burst 50: 10 ms a token.
dt_policy policy() {
  dt_policy p{};
  p.interval_ns = 10 * kMs;
  p.burst_ns = 50 * p.interval_ns;
  return p;
}

// A bucket holding `tokens` at kNow (negative: in debt), with `unreported` hits.
BucketView bucket(int64_t tokens, uint64_t unreported) {
  BucketView v{};
  v.policy = policy();
  v.bucket.tat_ns = static_cast<uint64_t>(static_cast<int64_t>(kNow) + (50 - tokens) * 10 * static_cast<int64_t>(kMs));
  v.bucket.passed = 100 + unreported;
  v.bucket.reported = 100;
  return v;
}

TEST(SharedEarly, DueOnlyBelowHalfTheBurstWithUnreportedHits) {
  EXPECT_TRUE(dt::shared_early_due(bucket(24, 3), kNow)) << "24 of 50 tokens: near its limit";
  EXPECT_TRUE(dt::shared_early_due(bucket(-30, 1), kNow)) << "in debt";
  EXPECT_FALSE(dt::shared_early_due(bucket(25, 3), kNow)) << "exactly half the burst is not below it";
  EXPECT_FALSE(dt::shared_early_due(bucket(50, 3), kNow)) << "a full bucket: a late report costs nothing";
  BucketView idle = bucket(50, 3);
  idle.bucket.tat_ns = 0;  // never used: full
  EXPECT_FALSE(dt::shared_early_due(idle, kNow));
  EXPECT_FALSE(dt::shared_early_due(bucket(0, 0), kNow)) << "nothing unreported: nothing to send";
  BucketView no_policy = bucket(0, 3);
  no_policy.policy = {};
  EXPECT_FALSE(dt::shared_early_due(no_policy, kNow)) << "no policy: nothing to judge by";
}

TEST(SharedEarly, SelectsSharedSourcesNearTheirLimitOnly) {
  ReportRouter r;
  r.set_members({"h0", "h1", "h2", "h3", "h4", "h5"}, 0);
  std::map<uint8_t, BucketView> buckets{
      {1, bucket(10, 2)}, {2, bucket(50, 2)}, {3, bucket(10, 0)}, {4, bucket(10, 2)}, {5, bucket(10, 2)}};
  for (uint8_t i : {1, 2, 3, 5}) r.heard(v4(i), kNow - 100 * kMs);  // 4 is not shared
  r.heard(v4(6), kNow - 100 * kMs);                                 // shared, no bucket here
  r.heard(v4(5), kNow - 6'000 * kMs);                               // 5 was shared, 6 s ago: not any more (keep 5 s)
  const dt::BucketLookup lookup = [&](const dt_key &k, BucketView *v) {
    auto it = buckets.find(k.addr[15]);
    if (it == buckets.end()) return false;
    *v = it->second;
    return true;
  };
  const std::vector<dt_key> due = dt::select_shared_early(r, lookup, kNow);
  ASSERT_EQ(due.size(), 1u) << "only source 1: shared, below half the burst, hits unreported";
  EXPECT_EQ(due[0].addr[15], 1);
}

TEST(SharedEarly, LooksAtMostMaxKeysATick) {
  ReportRouter r;
  r.set_members({"h0", "h1", "h2", "h3", "h4", "h5"}, 0);
  for (int i = 1; i <= 100; i++) r.heard(v4(static_cast<uint8_t>(i)), kNow);
  size_t looked = 0;
  const dt::BucketLookup lookup = [&](const dt_key &, BucketView *v) {
    looked++;
    *v = bucket(0, 1);
    return true;
  };
  EXPECT_EQ(dt::select_shared_early(r, lookup, kNow, 30).size(), 30u);
  EXPECT_EQ(looked, 30u) << "the bound is on the bucket lookups, not only on what is sent";
  EXPECT_EQ(r.shared_keys(kNow, 1000).size(), 100u);
  EXPECT_TRUE(r.shared_keys(kNow + 6'000 * kMs, 1000).empty()) << "no longer shared";
}

}  // namespace
