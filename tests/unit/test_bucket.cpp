// test_bucket.cpp - the GCRA arithmetic of include/dthrottle/bucket.h, the very
// functions the XDP and debit programs compile.
#include <gtest/gtest.h>

#include <random>

#include "dataplane/policy.h"
#include "dthrottle/bucket.h"

namespace {

constexpr uint64_t kSec = 1000000000ull;

dt_policy policy(double rate, uint64_t burst) {
  dt_policy p{};
  std::string err;
  EXPECT_TRUE(dt::make_policy(rate, burst, &p, &err)) << err;
  return p;
}

// Takes tokens one at a time at `now` until denied; returns how many were admitted.
int drain(__u64 *tat, uint64_t now, const dt_policy &p, int limit = 1000000) {
  int n = 0;
  __u64 next;
  while (n < limit && dt_gcra_admit(*tat, now, &p, &next)) {
    *tat = next;
    n++;
  }
  return n;
}

TEST(Bucket, NewBucketIsFull) {
  const dt_policy p = policy(1, 10);
  EXPECT_EQ(dt_gcra_tokens_milli(0, 1000 * kSec, &p), 10000);
  __u64 tat = 0;
  EXPECT_EQ(drain(&tat, 1000 * kSec, p), 10) << "a new source may send exactly `burst` packets";
}

TEST(Bucket, RefillsOneTokenPerInterval) {
  const dt_policy p = policy(100, 5);  // one token every 10 ms
  const uint64_t t0 = 50 * kSec;
  __u64 tat = 0;
  ASSERT_EQ(drain(&tat, t0, p), 5);
  __u64 next;
  EXPECT_FALSE(dt_gcra_admit(tat, t0 + 10 * 1000000 - 1, &p, &next)) << "1 ns short of a token";
  EXPECT_TRUE(dt_gcra_admit(tat, t0 + 10 * 1000000, &p, &next)) << "a whole token after 10 ms";
  EXPECT_EQ(drain(&tat, t0 + 35 * 1000000, p), 3) << "3.5 tokens accrued: 3 whole ones";
  EXPECT_EQ(dt_gcra_tokens_milli(tat, t0 + 35 * 1000000, &p), 500) << "the half token is kept";
}

TEST(Bucket, NeverAboveBurstAfterIdle) {
  const dt_policy p = policy(1000, 7);
  __u64 tat = 0;
  ASSERT_EQ(drain(&tat, 10 * kSec, p), 7);
  EXPECT_EQ(dt_gcra_tokens_milli(tat, 3600 * kSec, &p), 7000) << "an hour idle still caps at burst";
  EXPECT_EQ(drain(&tat, 3600 * kSec, p), 7);
}

TEST(Bucket, FractionalRateOnePacketEverySixSeconds) {
  const dt_policy p = policy(0.1666, 1);
  EXPECT_EQ(p.interval_ns, 6002400960ull);
  __u64 tat = 0, next;
  const uint64_t t0 = 100 * kSec;
  ASSERT_EQ(drain(&tat, t0, p), 1);
  EXPECT_EQ(dt_gcra_tokens_milli(tat, t0 + 3 * kSec, &p), 499) << "3 s = 0.4998 token";
  EXPECT_FALSE(dt_gcra_admit(tat, t0 + 6 * kSec, &p, &next));
  EXPECT_TRUE(dt_gcra_admit(tat, t0 + 6002400960ull, &p, &next));
}

TEST(Bucket, MilliTokenResolutionAtHighRate) {
  const dt_policy p = policy(1000000, 1);  // interval 1000 ns: 1 ns = 1/1000 token
  __u64 tat = 0;
  ASSERT_EQ(drain(&tat, kSec, p), 1);
  EXPECT_EQ(dt_gcra_tokens_milli(tat, kSec + 1, &p), 1);
  EXPECT_EQ(dt_gcra_tokens_milli(tat, kSec + 999, &p), 999);
}

TEST(Bucket, DebitGoesNegativeAndRefillPaysBack) {
  const dt_policy p = policy(2, 4);  // interval 0.5 s
  const uint64_t t0 = 10 * kSec;
  __u64 tat = 0;
  tat = dt_gcra_debit(tat, t0, &p, 10);
  EXPECT_EQ(dt_gcra_tokens_milli(tat, t0, &p), -6000);
  __u64 next;
  EXPECT_FALSE(dt_gcra_admit(tat, t0 + 3 * kSec, &p, &next)) << "-6 + 6 = 0 tokens at t0+3s";
  EXPECT_EQ(dt_gcra_tokens_milli(tat, t0 + 3250 * 1000000ull, &p), 500);
  EXPECT_TRUE(dt_gcra_admit(tat, t0 + 3500 * 1000000ull, &p, &next));
}

TEST(Bucket, NegativeTokensRoundTowardZero) {
  const dt_policy p = policy(1, 1);
  // tat such that the balance is -1.5 tokens.
  const uint64_t now = 100 * kSec;
  const uint64_t tat = now + p.burst_ns + 1500 * 1000000ull;
  EXPECT_EQ(dt_gcra_tokens_milli(tat, now, &p), -1500);
}

TEST(Bucket, DebitSaturatesInsteadOfOverflowing) {
  dt_policy p = policy(0.000001, 1);  // interval 1e15 ns
  p.burst_ns = 1ull << 62;            // the largest burst the agent allows
  const uint64_t now = 5 * kSec;
  __u64 tat = dt_gcra_debit(0, now, &p, 0xffffffffull);
  EXPECT_EQ(tat, now + DT_TAT_HORIZON_NS);
  EXPECT_EQ(dt_gcra_debit(tat, now, &p, 1), tat) << "already at the horizon: stays there";
  __u64 next;
  EXPECT_FALSE(dt_gcra_admit(tat, now, &p, &next));
  EXPECT_EQ(dt_gcra_tokens_milli(tat, now, &p), 0) << "a debt of one burst (2^62 ns), no more";
}

// However many hits peers report, a bucket's debt stops at DT_DEBT_MAX_BURSTS bursts:
// a healed partition's backlog or a lying peer cannot black a source out for longer
// than (DT_DEBT_MAX_BURSTS + 1) x burst / rate.
TEST(Bucket, DebtIsCappedAtMaxBursts) {
  const dt_policy p = policy(100, 50);  // 10 ms a token
  const uint64_t now = 100 * kSec;
  const int64_t floor_milli = -int64_t{DT_DEBT_MAX_BURSTS} * 50 * 1000;
  __u64 tat = dt_gcra_debit(0, now, &p, 1000000);
  EXPECT_EQ(tat, now + (DT_DEBT_MAX_BURSTS + 1) * p.burst_ns);
  EXPECT_EQ(dt_gcra_tokens_milli(tat, now, &p), floor_milli) << "a million hits: debt of 16 bursts, no more";
  EXPECT_EQ(dt_gcra_debit(tat, now, &p, 1), tat) << "at the cap, more hits change nothing";
  // Below the cap debits add up exactly.
  __u64 t2 = dt_gcra_debit(0, now, &p, 50 + 700);
  EXPECT_EQ(dt_gcra_tokens_milli(t2, now, &p), -700 * 1000);
  t2 = dt_gcra_debit(t2, now, &p, 99);
  EXPECT_EQ(dt_gcra_tokens_milli(t2, now, &p), -799 * 1000) << "the last token below the cap";
  t2 = dt_gcra_debit(t2, now, &p, 5);
  EXPECT_EQ(dt_gcra_tokens_milli(t2, now, &p), floor_milli) << "a debit across the cap stops at it";
  // And the source is back to a full bucket in (16 + 1) x burst / rate = 8.5 s.
  __u64 next;
  EXPECT_FALSE(dt_gcra_admit(tat, now + 8 * kSec, &p, &next));
  EXPECT_EQ(dt_gcra_tokens_milli(tat, now + 8500 * 1000000ull, &p), 50 * 1000);
  // A TAT beyond the cap (a smaller burst since) is not moved back.
  const __u64 far = now + 100 * p.burst_ns;
  EXPECT_EQ(dt_gcra_debit(far, now, &p, 3), far);
}

TEST(Bucket, DebitOfZeroHitsOnlyCapsIdleCredit) {
  const dt_policy p = policy(10, 3);
  EXPECT_EQ(dt_gcra_debit(0, 7 * kSec, &p, 0), 7 * kSec) << "same balance (full), expressed as now";
  EXPECT_EQ(dt_gcra_tokens_milli(dt_gcra_debit(0, 7 * kSec, &p, 0), 7 * kSec, &p), 3000);
}

// The worked A/B example of the reference daemon design (burst 10, rate 1/s, reports
// every 5 s): both buckets at -3 once the reports are applied, back to 1 at t=9.
TEST(Bucket, ReferenceDaemonExample) {
  const dt_policy p = policy(1, 10);
  const uint64_t t0 = 1000 * kSec;
  __u64 a = 0, b = 0;
  EXPECT_EQ(drain(&a, t0, p, 9), 9);
  EXPECT_EQ(drain(&b, t0, p, 8), 8);
  EXPECT_EQ(dt_gcra_tokens_milli(a, t0, &p), 1000);
  EXPECT_EQ(dt_gcra_tokens_milli(b, t0, &p), 2000);
  // t=0.1: two more requests hit A: the first is served, the second refused.
  EXPECT_EQ(drain(&a, t0 + kSec / 10, p, 2), 1);
  // t=5: A served 10, B served 8; each debits the other's hits.
  a = dt_gcra_debit(a, t0 + 5 * kSec, &p, 8);
  b = dt_gcra_debit(b, t0 + 5 * kSec, &p, 10);
  EXPECT_EQ(dt_gcra_tokens_milli(a, t0 + 5 * kSec, &p), -3000);
  EXPECT_EQ(dt_gcra_tokens_milli(b, t0 + 5 * kSec, &p), -3000);
  for (int s = 6; s <= 9; s++) {
    EXPECT_EQ(dt_gcra_tokens_milli(a, t0 + s * kSec, &p), (s - 8) * 1000) << "A at t=" << s;
    EXPECT_EQ(dt_gcra_tokens_milli(b, t0 + s * kSec, &p), (s - 8) * 1000) << "B at t=" << s;
  }
  EXPECT_EQ(drain(&a, t0 + 9 * kSec, p), 1) << "C can make one request at t=9";
}

// ---- byte budgets: a cost of n tokens (dt_gcra_admit_n) ----------------------------

TEST(ByteBucket, AdmitsOnlyWhatIsThere) {
  dt_policy p{};
  std::string err;
  ASSERT_TRUE(dt::make_policy(1e5, 2500, &p, &err, true)) << err;  // 100 kB/s: 10 us per byte
  const uint64_t now = 100 * kSec;
  __u64 tat = 0, next = 0;
  ASSERT_TRUE(dt_gcra_admit_n(tat, now, &p, 1000, &next));
  tat = next;
  ASSERT_TRUE(dt_gcra_admit_n(tat, now, &p, 1000, &next));
  tat = next;
  EXPECT_EQ(dt_gcra_tokens_milli(tat, now, &p), 500000) << "500 bytes left";
  EXPECT_FALSE(dt_gcra_admit_n(tat, now, &p, 1000, &next)) << "1000 bytes do not fit in 500";
  EXPECT_FALSE(dt_gcra_admit_n(tat, now, &p, 501, &next));
  EXPECT_TRUE(dt_gcra_admit_n(tat, now, &p, 500, &next)) << "exactly the 500 left";
  // Refill: 500 bytes more take 5 ms at 100 kB/s.
  EXPECT_FALSE(dt_gcra_admit_n(tat, now + 5 * 1000000 - 1, &p, 1000, &next));
  EXPECT_TRUE(dt_gcra_admit_n(tat, now + 5 * 1000000, &p, 1000, &next));
  // A cost above the burst never fits, even in a full bucket (and does not overflow).
  EXPECT_FALSE(dt_gcra_admit_n(0, now, &p, 2501, &next));
  EXPECT_FALSE(dt_gcra_admit_n(0, now, &p, ~0ull, &next));
  EXPECT_TRUE(dt_gcra_admit_n(0, now, &p, 2500, &next));
  EXPECT_EQ(next, now + 2500 * p.interval_ns);
}

TEST(ByteBucket, CostOneIsAdmit) {
  dt_policy p{};
  std::string err;
  ASSERT_TRUE(dt::make_policy(100, 5, &p, &err)) << err;
  for (uint64_t tat : {uint64_t{0}, 10 * kSec, 10 * kSec + 40000000, 10 * kSec + 60000000}) {
    __u64 a = 0, b = 0;
    EXPECT_EQ(dt_gcra_admit(tat, 10 * kSec, &p, &a), dt_gcra_admit_n(tat, 10 * kSec, &p, 1, &b)) << tat;
    EXPECT_EQ(a, b) << tat;
  }
}

}  // namespace

// The kernel's coarse-clock shortcut (dt_now_for_take in bpf/bucket_ops.h) refuses a
// take that is refused at a later time: sound only if a take refused at some time is
// refused at every earlier time. Checked over random states, times, policies and costs.
TEST(Bucket, ARefusalLaterIsARefusalAtEveryEarlierTime) {
  std::mt19937_64 rng(42);
  const dt_policy pols[] = {policy(1000, 5), policy(100, 50), policy(1e6, 1000), policy(0.5, 1)};
  int refusals = 0;
  for (int i = 0; i < 200000; i++) {
    const dt_policy &p = pols[i % 4];
    const uint64_t now = 1'000'000'000'000ull + rng() % 10'000'000'000ull;
    const uint64_t tat = now - p.burst_ns + rng() % (3 * p.burst_ns);
    const uint64_t later = now + rng() % 20'000'000ull;  // up to 20 ms: a few ticks
    const uint64_t cost = 1 + rng() % 3;
    __u64 next = 0;
    if (dt_gcra_admit_n(tat, later, &p, cost, &next)) continue;
    refusals++;
    ASSERT_FALSE(dt_gcra_admit_n(tat, now, &p, cost, &next))
        << "refused at " << later << " but admitted at the earlier " << now << " (tat " << tat << ")";
  }
  EXPECT_GT(refusals, 10000) << "the draw must exercise refusals";
}
