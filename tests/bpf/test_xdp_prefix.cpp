// test_xdp_prefix.cpp - prefix budgets (bpf/prefix.bpf.h) as the XDP, debit and
// collect programs apply them: every level of a source's prefix must have a token,
// the levels are checked before the source gets a bucket, IPv4 and IPv6 levels, the
// refund that keeps a level exact when a later check refuses, peers' debits and
// reports of prefix buckets, and exactness under concurrent packets on two CPUs.
//
// Rates of 0.001/s make "burst B" mean exactly B passes over a test's milliseconds.
#include <bpf/bpf.h>
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "bpf_fixture.h"
#include "common/address.h"
#include "common/clock.h"
#include "dataplane/collector.h"
#include "dthrottle/bucket.h"
#include "frames/packet_builder.h"

namespace dt::test {
using namespace frames;  // PacketBuilder, the header lengths and TPIDs
namespace {

constexpr double kNoRefill = 0.001;

PrefixLimit level(bool is_v4, unsigned bits, double rate, uint64_t burst, bool bytes = false) {
  PrefixLimit l;
  l.v4 = is_v4;
  l.bits = static_cast<uint8_t>(bits);
  l.rate = rate;
  l.burst = burst;
  l.bytes = bytes;
  return l;
}

class XdpPrefix : public BpfFixture {
 protected:
  // Sends `n` frames; returns how many passed.
  int send(const std::vector<uint8_t> &frame, int n) {
    int passed = 0;
    for (int i = 0; i < n; i++) {
      const int v = run(frame);
      EXPECT_TRUE(v == XDP_PASS || v == XDP_DROP) << "unexpected verdict " << verdict_name(v);
      passed += v == XDP_PASS;
    }
    return passed;
  }
  // One step of a run of sends: `n` packets from `src` (IPv4 or IPv6), `passed` of
  // them expected through, and why (for the failure message).
  struct Step {
    const char *src;
    int n, passed;
    const char *why = "";
  };
  // The steps in order, each checked.
  void expect_steps(std::initializer_list<Step> steps) {
    for (const Step &st : steps) {
      const bool is_v6 = strchr(st.src, ':') != nullptr;
      EXPECT_EQ(send(is_v6 ? v6(st.src) : v4(st.src), st.n), st.passed) << st.src << ": " << st.why;
    }
  }
  // Tokens in thousandths of a prefix bucket under the level's policy.
  static int64_t level_tokens_milli(const dt_bucket &b, const PrefixLimit &l) {
    dt_policy p{};
    std::string err;
    EXPECT_TRUE(make_policy(l.rate, l.burst, &p, &err, l.bytes)) << err;
    return dt_gcra_tokens_milli(b.tat_ns, mono_now_ns(), &p);
  }
};

// A level is looked at the CPU's clock bound (bpf/clock.h), which reads no clock: a
// refusal there is exactly the clock's. A /24 with a token is never refused because
// jiffies lag: at 1000/s a token accrues every 1 ms, well within a tick (4 ms at
// HZ=250), so a look that forgot the lag would refuse most of these packets. Each
// round's packets come from new sources, so only the level can refuse them.
TEST_F(XdpPrefix, TheClockBoundNeverRefusesALevelWithAToken) {
  ASSERT_GT(live_config().coarse_lag_ns, 0u) << "the fixture sets the tick as the agent does";
  ASSERT_NO_FATAL_FAILURE(set_prefix_policy(1000, 100, {level(true, 24, 1000, 2)}));
  int source = 0, refused_with_a_token = 0;
  auto next = [&] { return v4("198.18.60." + std::to_string(1 + source++ % 250)); };
  for (int round = 0; round < 20; round++) {
    while (run(next()) == XDP_PASS) {
    }                                                              // the /24 is empty: the last packet was refused
    std::this_thread::sleep_for(std::chrono::microseconds(1500));  // 1.5 tokens accrue
    if (run(next()) != XDP_PASS) refused_with_a_token++;
  }
  EXPECT_EQ(refused_with_a_token, 0) << "packets refused although 1.5 ms (1.5 tokens at 1000/s) had passed";
}

TEST_F(XdpPrefix, APrefixAggregateIsCappedAndLateSourcesGetNoBucket) {
  ASSERT_NO_FATAL_FAILURE(set_prefix_policy(kNoRefill, 4, {level(true, 24, kNoRefill, 10)}));
  const int want[] = {4, 4, 2, 0, 0};  // burst 4 per source, 10 for the whole /24
  for (int i = 0; i < 5; i++) {
    const std::string src = "198.18.0." + std::to_string(i + 1);
    EXPECT_EQ(send(v4(src), 4), want[i]) << "source " << src << " (the /24's budget is 10)";
  }
  auto p = prefix_bucket("198.18.0.0", 24);
  ASSERT_TRUE(p) << "no bucket for the prefix 198.18.0.0/24";
  EXPECT_EQ(p->passed, 10u);
  EXPECT_EQ(p->rule, dt_prefix_key_rule(DT_RULE_DEFAULT, 24, false));
  ASSERT_TRUE(bucket("198.18.0.3"));
  EXPECT_EQ(bucket("198.18.0.3")->passed, 2u);
  EXPECT_FALSE(bucket("198.18.0.4")) << "a source whose prefix is out of budget must not get a bucket";
  EXPECT_FALSE(bucket("198.18.0.5")) << "a source whose prefix is out of budget must not get a bucket";
  EXPECT_EQ(prefix_drops(0), 10u) << "2 of 198.18.0.3, 4 each of .4 and .5";
  const dt_stats s = stats();
  EXPECT_EQ(s.passed, 10u) << stats_to_string(s);
  EXPECT_EQ(s.dropped, 10u) << stats_to_string(s);
  EXPECT_EQ(s.new_sources, 4u) << "3 sources and 1 prefix bucket: " << stats_to_string(s);
  // Another /24 has a budget of its own.
  EXPECT_EQ(send(v4("198.18.1.1"), 6), 4);
}

TEST_F(XdpPrefix, EveryLevelMustHaveATokenBroadestFirst) {
  // Given narrowest first: the agent sorts them, /16 is level 0 and /24 level 1.
  ASSERT_NO_FATAL_FAILURE(
      set_prefix_policy(kNoRefill, 4, {level(true, 24, kNoRefill, 6), level(true, 16, kNoRefill, 10)}));
  expect_steps({{"198.18.0.1", 4, 4},
                {"198.18.0.2", 4, 2, "the /24 holds 6"},
                {"198.18.0.3", 4, 0, "the /24 is spent"},
                {"198.18.1.1", 4, 4, "another /24 of the same /16: 4 of the /16's 10 left"},
                {"198.18.1.2", 4, 0, "the /16 is spent"}});
  EXPECT_EQ(prefix_drops(1), 2u + 4u) << "refused by the /24: 198.18.0.2 twice, 198.18.0.3 four times";
  EXPECT_EQ(prefix_drops(0), 4u) << "refused by the /16: 198.18.1.2";
  auto p16 = prefix_bucket("198.18.0.0", 16), p24a = prefix_bucket("198.18.0.0", 24),
       p24b = prefix_bucket("198.18.1.0", 24);
  ASSERT_TRUE(p16 && p24a && p24b);
  EXPECT_EQ(p16->passed, 10u);
  EXPECT_EQ(p24a->passed, 6u);
  EXPECT_EQ(p24b->passed, 4u);
  // Not a token more or less than what passed: nothing refunded twice or lost.
  EXPECT_EQ(level_tokens_milli(*p16, level(true, 16, kNoRefill, 10)) / 1000, 0);
  EXPECT_EQ(level_tokens_milli(*p24a, level(true, 24, kNoRefill, 6)) / 1000, 0);
  EXPECT_EQ(level_tokens_milli(*p24b, level(true, 24, kNoRefill, 6)) / 1000, 2);
  EXPECT_FALSE(bucket("198.18.0.3"));
  EXPECT_FALSE(bucket("198.18.1.2"));
}

TEST_F(XdpPrefix, ASourceOverItsOwnLimitSpendsNothingOfItsPrefix) {
  const PrefixLimit l24 = level(true, 24, kNoRefill, 100);
  ASSERT_NO_FATAL_FAILURE(set_prefix_policy(kNoRefill, 3, {l24}));
  EXPECT_EQ(send(v4("198.18.0.1"), 10), 3);
  auto p = prefix_bucket("198.18.0.0", 24);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->passed, 3u);
  EXPECT_EQ(level_tokens_milli(*p, l24) / 1000, 97) << "the source's own drops must leave the /24 untouched";
  EXPECT_EQ(prefix_drops(0), 0u);
  EXPECT_EQ(bucket("198.18.0.1")->dropped, 7u);
}

TEST_F(XdpPrefix, Ipv6LevelsCapTheirPrefixesAndIpv4LevelsLeaveIpv6Alone) {
  // Sources are IPv6 /64s under the default rule; a /56 and a /52 above them.
  ASSERT_NO_FATAL_FAILURE(
      set_prefix_policy(kNoRefill, 4, {level(false, 56, kNoRefill, 5), level(false, 52, kNoRefill, 8)}));
  expect_steps({{"2001:2:0:1::1", 4, 4},
                {"2001:2:0:2::1", 4, 1, "the /56 2001:2::/56 holds 5"},
                {"2001:2:0:101::1", 4, 3, "another /56, same /52: 3 of its 8 left"},
                {"2001:2:0:102::1", 4, 0}});
  EXPECT_EQ(prefix_drops(DT_PREFIX_LEVELS + 1), 3u) << "the /56 (IPv6 level 1)";
  EXPECT_EQ(prefix_drops(DT_PREFIX_LEVELS + 0), 1u + 4u) << "the /52 (IPv6 level 0)";
  auto p = prefix_bucket("2001:2::", 52);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->passed, 8u);
  EXPECT_EQ(p->rule, dt_prefix_key_rule(DT_RULE_DEFAULT, 52, true));
  // IPv4 sources have no level here: their own burst alone.
  EXPECT_EQ(send(v4("198.18.0.1"), 6), 4);
  EXPECT_EQ(send(v4("198.18.0.2"), 6), 4);
}

TEST_F(XdpPrefix, Ipv4LevelsDoNotApplyToIpv6Sources) {
  ASSERT_NO_FATAL_FAILURE(set_prefix_policy(kNoRefill, 4, {level(true, 16, kNoRefill, 2)}));
  expect_steps({{"2001:2:0:1::1", 6, 4}, {"2001:2:0:2::1", 6, 4}, {"198.18.0.1", 6, 2}});
}

TEST_F(XdpPrefix, ARefusedSourceGivesTheLevelsTheirTokensBackExactly) {
  // A byte rule: a new source's bucket holds 1518 bytes, so a 2000-byte frame passes
  // the level (100 kB) and is then refused by the source: the level's 2000 bytes must
  // come back, to the byte.
  const PrefixLimit l24 = level(true, 24, 1.0, 100000, true);
  ASSERT_NO_FATAL_FAILURE(set_prefix_policy(1.0, 1518, {l24}, true));
  const auto big = PacketBuilder().ipv4("198.18.0.1").udp(2000 - 42).build();
  ASSERT_EQ(big.size(), 2000u);
  EXPECT_EQ(run(big), XDP_DROP);
  auto p = prefix_bucket("198.18.0.0", 24);
  ASSERT_TRUE(p) << "the level's bucket was created when its tokens were taken";
  EXPECT_EQ(level_tokens_milli(*p, l24), 100000 * 1000) << "the refused frame's bytes were not given back";
  EXPECT_EQ(p->passed, 0u);
  const auto small = PacketBuilder().ipv4("198.18.0.1").udp(1000 - 42).build();
  EXPECT_EQ(run(small), XDP_PASS);
  p = prefix_bucket("198.18.0.0", 24);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->passed, 1000u);
  const int64_t t = level_tokens_milli(*p, l24);
  EXPECT_GE(t, 99000 * 1000) << "1000 bytes taken, not more";
  EXPECT_LE(t, 99000 * 1000 + 1000 * static_cast<int64_t>(1 + (mono_now_ns() - start_ns_) / 1'000'000'000))
      << "1000 bytes taken, plus at most 1 B/s of refill";
}

TEST_F(XdpPrefix, DryRunPassesWhatALevelWouldDropAndCountsIt) {
  ASSERT_NO_FATAL_FAILURE(set_prefix_policy(kNoRefill, 4, {level(true, 24, kNoRefill, 6)}, false, true));
  expect_steps({{"198.18.0.1", 4, 4}, {"198.18.0.2", 4, 4, "dry run: nothing is dropped"}, {"198.18.0.3", 4, 4}});
  EXPECT_EQ(would_drop_of_rule0(), 2u + 4u) << "enforcing, the /24 would have dropped 2 of .2 and all 4 of .3";
  EXPECT_EQ(prefix_drops(0), 6u);
  EXPECT_FALSE(bucket("198.18.0.3")) << "as enforcing: no bucket for a source whose prefix is out of budget";
  EXPECT_EQ(prefix_bucket("198.18.0.0", 24)->passed, 6u);
}

TEST_F(XdpPrefix, PeersDebitPrefixBucketsByTheirKey) {
  ASSERT_NO_FATAL_FAILURE(set_prefix_policy(kNoRefill, 4, {level(true, 24, kNoRefill, 10)}));
  dt_debit d{};
  dt_key src{};
  ASSERT_TRUE(key_from_string("198.18.0.0", &src));
  dt_key_for_level(&d.key, &src, DT_RULE_DEFAULT, 24, false);
  d.hits = 8;
  dt_debit unknown = d;  // a /20 level this rule does not have
  dt_key_for_level(&unknown.key, &src, DT_RULE_DEFAULT, 20, false);
  const DebitResult r = apply({d, unknown});
  EXPECT_EQ(r.entries_applied, 1u);
  EXPECT_EQ(r.entries_failed, 1u) << "a level the rule does not have cannot be debited";
  auto p = prefix_bucket("198.18.0.0", 24);
  ASSERT_TRUE(p) << "a debit creates the prefix bucket as it does a source's";
  EXPECT_EQ(p->debited, 8u);
  EXPECT_EQ(send(v4("198.18.0.7"), 4), 2) << "2 of the /24's 10 left after the peer's 8";
}

TEST_F(XdpPrefix, ClusterModeReportsPrefixBucketsLikeSources) {
  ASSERT_NO_FATAL_FAILURE(set_prefix_policy(kNoRefill, 4, {level(true, 24, kNoRefill, 10)}));
  auto c = new_collector();
  ASSERT_EQ(c->enable(false), 0);
  expect_steps({{"198.18.0.1", 4, 4}, {"198.18.0.2", 4, 4}, {"198.18.0.3", 4, 2}, {"198.18.0.4", 4, 0}});
  int err = 0;
  const auto entries = c->end_period(&err);
  ASSERT_EQ(err, 0);
  std::map<std::string, uint64_t> sources, prefixes;
  for (const auto &e : entries) (dt_key_is_prefix(e.key.rule) ? prefixes : sources)[key_to_string(e.key)] += e.hits;
  EXPECT_EQ(sources, (std::map<std::string, uint64_t>{{"198.18.0.1", 4}, {"198.18.0.2", 4}, {"198.18.0.3", 2}}));
  EXPECT_EQ(prefixes, (std::map<std::string, uint64_t>{{"198.18.0.0", 10}}));
  for (const auto &e : entries)
    if (dt_key_is_prefix(e.key.rule)) {
      EXPECT_EQ(e.key.rule, dt_prefix_key_rule(DT_RULE_DEFAULT, 24, false));
    }
}

// Two CPUs at once on two sources of one /24, under a /16 and a /24 level: whatever
// the interleaving (tokens taken at the /16, then refused at the /24 by a race and
// refunded), exactly the /24's budget passes and the /16 is charged exactly that.
TEST_F(XdpPrefix, ConcurrentPacketsOnTwoCpusStayExact) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs 2 CPUs";
  constexpr uint64_t k16 = 3000, k24 = 2000;
  const PrefixLimit l16 = level(true, 16, kNoRefill, k16), l24 = level(true, 24, kNoRefill, k24);
  ASSERT_NO_FATAL_FAILURE(set_prefix_policy(kNoRefill, 1000000, {l16, l24}));
  constexpr uint32_t kEach = 20000;
  int errs[2] = {0, 0};
  auto hammer = [&](int i) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(i, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    const auto f = v4("198.18.0." + std::to_string(i + 1));
    uint32_t verdict = 0;
    for (uint32_t done = 0; done < kEach; done += 1000)
      if (int rc = test_run_xdp(xdp_fd(), f, 1000, &verdict); rc != 0) errs[i] = rc;
  };
  std::thread a(hammer, 0), b(hammer, 1);
  a.join();
  b.join();
  ASSERT_EQ(errs[0], 0);
  ASSERT_EQ(errs[1], 0);
  const dt_stats s = stats();
  EXPECT_EQ(s.passed, k24) << stats_to_string(s);
  EXPECT_EQ(s.passed + s.dropped, 2u * kEach) << stats_to_string(s);
  auto p16 = prefix_bucket("198.18.0.0", 16), p24 = prefix_bucket("198.18.0.0", 24);
  ASSERT_TRUE(p16 && p24);
  EXPECT_EQ(p24->passed, k24);
  EXPECT_EQ(p16->passed, k24);
  EXPECT_EQ(level_tokens_milli(*p16, l16) / 1000, static_cast<int64_t>(k16 - k24))
      << "every token the /16 gave to a packet the /24 then refused came back";
  EXPECT_EQ(level_tokens_milli(*p24, l24) / 1000, 0);
  EXPECT_EQ(bucket("198.18.0.1")->passed + bucket("198.18.0.2")->passed, k24);
}

}  // namespace
}  // namespace dt::test
