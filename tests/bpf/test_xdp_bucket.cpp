// test_xdp_bucket.cpp - the token bucket as the XDP and debit programs apply it.
//
// Exact counts wherever the arithmetic allows it: with rate 0.001/s a token takes
// 1000 s to accrue, so over a test's milliseconds refill is below 1/1000 token and
// "burst B" means exactly B passes. Where time matters (refill), the tests only use
// lower bounds on elapsed time (a sleep of at least X), or upper bounds computed from
// measured time, never "this must take less than X".
#include <linux/bpf.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bpf_fixture.h"
#include "common/clock.h"
#include "dthrottle/bucket.h"
#include "frames/packet_builder.h"

namespace dt::test {
using namespace frames;  // PacketBuilder, the header lengths and TPIDs
namespace {

constexpr double kNoRefill = 0.001;  // tokens per second: < 0.001 token per test

class XdpBucket : public BpfFixture {
 protected:
  // Sends `n` frames; returns how many passed (a verdict other than PASS/DROP fails).
  int send(const std::vector<uint8_t> &frame, int n) {
    int passed = 0;
    for (int i = 0; i < n; i++) {
      int v = run(frame);
      EXPECT_TRUE(v == XDP_PASS || v == XDP_DROP) << "unexpected verdict " << verdict_name(v);
      passed += v == XDP_PASS;
    }
    return passed;
  }
  // Sends frames until the first DROP (at most `limit`); returns the passes before it.
  int passes_until_drop(const std::vector<uint8_t> &frame, int limit) {
    for (int i = 0; i < limit; i++)
      if (run(frame) != XDP_PASS) return i;
    return limit;
  }
};

// ---- Burst ----------------------------------------------------------------------

class XdpBurst : public XdpBucket, public ::testing::WithParamInterface<uint64_t> {};

TEST_P(XdpBurst, ExactlyBurstPassesThenDrops) {
  const uint64_t burst = GetParam();
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, burst));
  const auto frame = v4("198.18.0.1");
  for (uint64_t i = 0; i < burst; i++)
    ASSERT_EQ(run(frame), XDP_PASS) << "packet " << i + 1 << " of a full bucket of " << burst;
  constexpr int kDrops = 3;
  for (int i = 0; i < kDrops; i++)
    EXPECT_EQ(run(frame), XDP_DROP) << "packet " << burst + i + 1 << " after a burst of " << burst;

  auto b = bucket("198.18.0.1");
  ASSERT_TRUE(b) << "no bucket for 198.18.0.1";
  EXPECT_EQ(b->passed, burst);
  EXPECT_EQ(b->dropped, static_cast<uint64_t>(kDrops));
  EXPECT_EQ(b->debited, 0u);
  EXPECT_EQ(b->rule, 0u);
  expect_tokens(*b, 0, "drained bucket");

  const dt_stats s = stats();
  EXPECT_EQ(s.passed, burst) << stats_to_string(s);
  EXPECT_EQ(s.dropped, static_cast<uint64_t>(kDrops)) << stats_to_string(s);
  EXPECT_EQ(s.new_sources, 1u) << stats_to_string(s);
  EXPECT_EQ(s.fail_open + s.contended + s.parse_errors + s.non_ip + s.nd_exempt + s.debit_hits, 0u)
      << stats_to_string(s);
}

INSTANTIATE_TEST_SUITE_P(Bursts, XdpBurst, ::testing::Values(1, 2, 5, 64),
                         [](const auto &info) { return "burst" + std::to_string(info.param); });

TEST_F(XdpBucket, NewSourceStartsFull) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 4));
  EXPECT_EQ(run(v4("198.18.0.1")), XDP_PASS);
  auto b = bucket("198.18.0.1");
  ASSERT_TRUE(b);
  expect_tokens(*b, 3, "new bucket of burst 4 after one packet");
  // A second source, first seen after the first one drained, starts full as well.
  EXPECT_EQ(passes_until_drop(v4("198.18.0.1"), 10), 3);
  EXPECT_EQ(passes_until_drop(v4("198.18.0.2"), 10), 4) << "new source did not start full";
  EXPECT_EQ(passes_until_drop(v6("2001:2::2"), 10), 4) << "new IPv6 source did not start full";
}

TEST_F(XdpBucket, Ipv6SourcesInOneSlash64ShareABucket) {
  set_policy(0.001, 4);
  EXPECT_EQ(passes_until_drop(v6("2001:2:0:7::1"), 2), 2);
  EXPECT_EQ(passes_until_drop(v6("2001:2:0:7:ffff::9"), 10), 2)
      << "a second address of the same /64 must draw on the same bucket";
  EXPECT_EQ(passes_until_drop(v6("2001:2:0:8::1"), 10), 4) << "the next /64 has a bucket of its own";
  EXPECT_EQ(bucket_count(), 2);
}

TEST_F(XdpBucket, SeparateSourcesHaveSeparateBuckets) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 3));
  // IPv6 sources are bucketed per /64 under the default rule: use different /64s.
  const std::vector<std::string> srcs = {"198.18.0.1", "198.18.0.2", "198.19.255.254", "2001:2:0:1::1",
                                         "2001:2:0:2::1"};
  for (const auto &s : srcs) {
    const auto f = s.find(':') == std::string::npos ? v4(s) : v6(s);
    EXPECT_EQ(passes_until_drop(f, 10), 3) << "source " << s;
  }
  // Draining the others left nothing owed by the first, nor refilled it.
  EXPECT_EQ(run(v4("198.18.0.1")), XDP_DROP);
  EXPECT_EQ(bucket_count(), static_cast<long>(srcs.size()));
  for (const auto &s : srcs) {
    auto b = bucket(s);
    ASSERT_TRUE(b) << "no bucket for " << s;
    EXPECT_EQ(b->passed, 3u) << s;
  }
  EXPECT_EQ(stats().new_sources, srcs.size());
}

// ---- Refill ---------------------------------------------------------------------

TEST_F(XdpBucket, RefillRestoresTokensUpToBurst) {
  constexpr double kRate = 1000;  // one token per ms
  constexpr int kBurst = 2;
  ASSERT_NO_FATAL_FAILURE(set_policy(kRate, kBurst));
  const auto frame = v4("198.18.0.1");
  // Drain. (A token may accrue between packets on a slow machine, so count, don't script.)
  int passed = passes_until_drop(frame, 100);
  EXPECT_GE(passed, kBurst);

  // 20 ms idle is at least 20 tokens' worth of refill: the bucket is full again.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const uint64_t t0 = mono_now_ns();
  passed = send(frame, 10);
  const uint64_t t1 = mono_now_ns();
  EXPECT_GE(passed, kBurst) << "20 ms at " << kRate << "/s did not refill the bucket";
  // Upper bound from the arithmetic: a full bucket (never more than burst) plus what
  // accrued while the 10 packets were sent.
  const double accrued = kRate * static_cast<double>(t1 - t0) / 1e9;
  EXPECT_LE(passed, kBurst + static_cast<int>(std::ceil(accrued)))
      << "more than burst passed after an idle period: tokens exceeded burst";
}

TEST_F(XdpBucket, DrainedBucketStaysEmptyAtNegligibleRate) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 2));
  const auto frame = v4("198.18.0.1");
  EXPECT_EQ(passes_until_drop(frame, 10), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // 0.00002 token
  EXPECT_EQ(run(frame), XDP_DROP) << "a bucket refilling at 0.001/s gave a token within ~20 ms";
}

TEST_F(XdpBucket, FractionalRate) {
  ASSERT_NO_FATAL_FAILURE(set_policy(0.1666, 3));
  const dt_policy p = live_policy();
  EXPECT_EQ(p.interval_ns, 6002400960ull) << "round(1e9 / 0.1666) ns per token";
  EXPECT_EQ(p.burst_ns, 3 * 6002400960ull);

  const uint64_t t0 = mono_now_ns();
  EXPECT_EQ(passes_until_drop(v4("198.18.0.1"), 10), 3);
  auto b = bucket("198.18.0.1");
  ASSERT_TRUE(b);
  const uint64_t now = mono_now_ns();
  const int64_t t = dt_gcra_tokens_milli(b->tat_ns, now, &p);
  EXPECT_GE(t, 0);
  EXPECT_LE(t, static_cast<int64_t>(std::ceil(0.1666 * static_cast<double>(now - t0) / 1e6)))
      << "drained bucket holds more than refill since the first packet allows";
  // After any idle period, however long, the bucket holds exactly burst tokens.
  for (uint64_t idle_s : {20ull, 3600ull, 86400ull * 365})
    EXPECT_EQ(dt_gcra_tokens_milli(b->tat_ns, now + idle_s * DT_NSEC_PER_SEC, &p), 3000)
        << "tokens after " << idle_s << " s idle";
}

// ---- No policy ------------------------------------------------------------------

TEST_F(XdpBucket, NoPolicyFailsOpen) {
  // Freshly loaded: no policy published, every slot has interval_ns 0.
  EXPECT_EQ(send(v4("198.18.0.1"), 3), 3);
  EXPECT_EQ(send(v6("2001:2::1"), 2), 2);
  dt_stats s = stats();
  EXPECT_EQ(s.fail_open, 5u) << stats_to_string(s);
  EXPECT_EQ(s.passed + s.dropped + s.new_sources, 0u) << stats_to_string(s);
  EXPECT_EQ(bucket_count(), 0) << "a packet without policy created a bucket";

  // With a policy the source drains; withdrawing the policy lets it through again.
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  EXPECT_EQ(run(v4("198.18.0.1")), XDP_PASS);
  EXPECT_EQ(run(v4("198.18.0.1")), XDP_DROP);
  ASSERT_NO_FATAL_FAILURE(clear_policy());
  EXPECT_EQ(run(v4("198.18.0.1")), XDP_PASS) << "empty policy must fail open, even for an empty bucket";
  s = stats();
  EXPECT_EQ(s.fail_open, 6u) << stats_to_string(s);
  EXPECT_EQ(s.passed, 1u) << stats_to_string(s);
  EXPECT_EQ(s.dropped, 1u) << stats_to_string(s);
}

// ---- The debit program ----------------------------------------------------------

TEST_F(XdpBucket, DebitTakesTokensNegativeAndXdpDrops) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 10));
  const std::string s = "198.18.0.1";
  EXPECT_EQ(run(v4(s)), XDP_PASS);
  const DebitResult r = apply({make_debit(s, 20)});
  EXPECT_EQ(r.entries_applied, 1u);
  EXPECT_EQ(r.hits_applied, 20u);
  EXPECT_EQ(r.entries_failed, 0u);

  auto b = bucket(s);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->debited, 20u);
  EXPECT_EQ(b->passed, 1u);
  expect_tokens(*b, 10 - 1 - 20, "bucket of burst 10 after 1 packet and a debit of 20");
  EXPECT_EQ(send(v4(s), 3), 0) << "a bucket in debt admitted packets";
  b = bucket(s);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->dropped, 3u);
  const dt_stats st = stats();
  EXPECT_EQ(st.debit_hits, 20u) << stats_to_string(st);
  EXPECT_EQ(st.new_sources, 1u) << stats_to_string(st);
}

TEST_F(XdpBucket, DebitedBucketPassesAgainOnceRefilled) {
  constexpr double kRate = 20;  // one token per 50 ms
  ASSERT_NO_FATAL_FAILURE(set_policy(kRate, 2));
  const dt_policy p = live_policy();
  const std::string s = "198.18.0.1";
  EXPECT_EQ(run(v4(s)), XDP_PASS);
  EXPECT_EQ(apply({make_debit(s, 4)}).hits_applied, 4u);  // balance about 2 - 1 - 4 = -3
  auto b = bucket(s);
  ASSERT_TRUE(b);
  // The instant a whole token is back: tat - (burst - 1) * interval (exact, from the map).
  const uint64_t refilled_at = b->tat_ns - p.burst_ns + p.interval_ns;

  const int before = run(v4(s));
  const uint64_t after_ns = mono_now_ns();
  if (after_ns < refilled_at)
    EXPECT_EQ(before, XDP_DROP) << "passed " << (refilled_at - after_ns) / 1000000
                                << " ms before the debited bucket had a token";
  else std::printf("note: the run took past the refill instant; drop-before-refill not checked\n");

  while (mono_now_ns() < refilled_at)
    std::this_thread::sleep_for(std::chrono::nanoseconds(refilled_at - mono_now_ns()));
  EXPECT_EQ(run(v4(s)), XDP_PASS) << "debited bucket did not pass once refilled";
}

TEST_F(XdpBucket, DebitOfUnknownSourceCreatesFullBucketThenDebits) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 10));
  const std::string s = "2001:2::77";
  const DebitResult r = apply({make_debit(s, 3)});
  EXPECT_EQ(r.entries_applied, 1u);
  EXPECT_EQ(r.hits_applied, 3u);
  auto b = bucket(s);
  ASSERT_TRUE(b) << "debit for an unknown source created no bucket";
  EXPECT_EQ(b->debited, 3u);
  EXPECT_EQ(b->passed, 0u);
  EXPECT_EQ(b->rule, 0u);
  expect_tokens(*b, 10 - 3, "bucket of burst 10 created by a debit of 3");
  EXPECT_EQ(stats().new_sources, 1u);
  EXPECT_EQ(passes_until_drop(v6(s), 20), 7);
}

TEST_F(XdpBucket, ZeroHitDebitIsANoOp) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 10));
  const std::string known = "198.18.0.1", unknown = "198.18.0.2";
  EXPECT_EQ(run(v4(known)), XDP_PASS);
  const auto b0 = bucket(known);
  ASSERT_TRUE(b0);

  const DebitResult r = apply({make_debit(known, 0), make_debit(unknown, 0)});
  EXPECT_EQ(r.entries_applied, 0u);
  EXPECT_EQ(r.hits_applied, 0u);
  EXPECT_EQ(r.entries_failed, 0u);
  const auto b1 = bucket(known);
  ASSERT_TRUE(b1);
  EXPECT_EQ(b1->tat_ns, b0->tat_ns) << "a zero-hit debit moved the bucket";
  EXPECT_EQ(b1->debited, 0u);
  EXPECT_FALSE(bucket(unknown)) << "a zero-hit debit created a bucket";
  const dt_stats s = stats();
  EXPECT_EQ(s.debit_hits, 0u) << stats_to_string(s);
  EXPECT_EQ(s.new_sources, 1u) << stats_to_string(s);
}

TEST_F(XdpBucket, DebitWithoutPolicyIsReportedFailed) {
  const DebitResult r = apply({make_debit("198.18.0.1", 5)});
  EXPECT_EQ(r.entries_applied, 0u);
  EXPECT_EQ(r.hits_applied, 0u);
  EXPECT_EQ(r.entries_failed, 1u) << "a debit that could not be applied was not reported";
  EXPECT_EQ(bucket_count(), 0);
}

TEST_F(XdpBucket, DebitsAcrossSeveralBatchesAreExact) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1000000));
  const std::vector<std::string> srcs = {"198.18.0.1", "198.18.0.2", "2001:2::3"};
  // More than one DT_DEBIT_BATCH, round-robin over the sources, hits 1..7.
  std::vector<dt_debit> debits;
  std::vector<uint64_t> want(srcs.size(), 0);
  for (uint32_t i = 0; i < DT_DEBIT_BATCH + 1000; i++) {
    const uint32_t hits = 1 + i % 7;
    debits.push_back(make_debit(srcs[i % srcs.size()], hits));
    want[i % srcs.size()] += hits;
  }
  const DebitResult r = apply(debits);
  EXPECT_EQ(r.entries_applied, debits.size());
  EXPECT_EQ(r.entries_failed, 0u);
  // A smaller batch after a bigger one: the stale tail of the staging map must not be re-applied.
  EXPECT_EQ(apply({make_debit(srcs[0], 5)}).hits_applied, 5u);
  want[0] += 5;

  uint64_t total = 0;
  for (size_t i = 0; i < srcs.size(); i++) {
    auto b = bucket(srcs[i]);
    ASSERT_TRUE(b) << srcs[i];
    EXPECT_EQ(b->debited, want[i]) << "debited hits of " << srcs[i];
    expect_tokens(*b, 1000000 - static_cast<int64_t>(want[i]), "debited bucket " + srcs[i]);
    total += want[i];
  }
  EXPECT_EQ(r.hits_applied + 5, total);
  EXPECT_EQ(stats().debit_hits, total);
  EXPECT_EQ(stats().new_sources, srcs.size());
}

}  // namespace
}  // namespace dt::test
