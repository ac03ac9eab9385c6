// test_xdp_dryrun.cpp - dry run (DT_POL_DRY_RUN) as the XDP program applies it.
//
// A rule in dry run decides and charges every packet exactly as when enforcing, but
// passes what enforcing would drop, counting it as would-drop for the source
// (dt_bucket.would_drop) and for the rule (the per-CPU rule_would_drop map). Each
// test compares with enforcing on the same traffic, so nothing here is a hard-coded
// outcome that dry run could meet by doing nothing.
//
// Rules are parsed and compiled with the agent's own code and published with
// publish_rules, as `agent --rules` and `agent reload` do; --dry-run is
// set_all_dry_run, as the daemon applies it. Rates of 0.001/s make refill negligible.
// In cluster mode, admissions are reported and peers' debits charge the bucket as usual.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bpf_fixture.h"
#include "common/address.h"
#include "common/clock.h"
#include "dataplane/collector.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"
#include "frames/packet_builder.h"
#include "prog_maps.h"
#include "rules/rules.h"

namespace dt::test {
using namespace frames;  // PacketBuilder, the header lengths and TPIDs
namespace {

constexpr double kNoRefill = 0.001;  // tokens per second: < 0.001 token per test

// What a run of packets did: verdicts, and the counters that moved.
struct Verdicts {
  int passed = 0, dropped = 0;  // verdicts
};

class XdpDryRun : public RuleMapsFixture {
 protected:
  // Publishes `toml` over the default rule (rate, burst; 0: none); all_dry: --dry-run.
  void publish(const std::string &toml, double rate, uint64_t burst, bool all_dry = false) {
    RuleSet rs = default_rules(rate, burst);
    LoadedRules r;
    std::string err;
    ASSERT_TRUE(parse_rules("version = 1\n" + toml, "test.toml", &rs, &err)) << err;
    ASSERT_TRUE(compile_rules(rs, &r.compiled, &err)) << err;
    r.set = rs;
    if (all_dry) set_all_dry_run(&r);
    const int rc = publish_rules(rule_maps(), r.compiled.policies, r.compiled.lpm, {});
    ASSERT_EQ(rc, 0) << "publish_rules: " << strerror(-rc);
  }

  Verdicts send(const std::vector<uint8_t> &frame, int n) {
    Verdicts r;
    for (int i = 0; i < n; i++) {
      const int v = run(frame);
      EXPECT_TRUE(v == XDP_PASS || v == XDP_DROP) << "unexpected verdict " << verdict_name(v);
      r.passed += v == XDP_PASS;
      r.dropped += v == XDP_DROP;
    }
    return r;
  }

  uint64_t rule_would_drop(uint32_t rule) { return summed_per_cpu<uint64_t>(map_fd(DT_MAP_RULE_WOULD_DROP), rule); }

  // A bucket for `addr` under rule 0 whose tat is `tat` (a test's setup, not the agent's way).
  void seed_bucket(const std::string &addr, uint64_t tat) {
    dt_key key{};
    ASSERT_TRUE(key_from_string(addr, &key)) << addr;
    dt_bucket b{};
    b.tat_ns = tat;
    ASSERT_EQ(bpf_map_update_elem(buckets_fd(), &key, &b, BPF_NOEXIST), 0) << strerror(errno);
  }
};

// The same run of packets from two sources whose buckets start alike (a tat in the
// future, so that every admission adds exactly one interval): one enforcing, one in
// dry run. Same admissions, same tat; the dry run's drops are its would-drops.
TEST_F(XdpDryRun, ChargesExactlyAsEnforcingAndPassesWhatWouldDrop) {
  constexpr uint64_t kBurst = 5;
  constexpr int kPackets = 12;
  ASSERT_NO_FATAL_FAILURE(publish("", kNoRefill, kBurst));
  const uint64_t interval = live_policy().interval_ns;
  const uint64_t tat = mono_now_ns() + 2 * interval;  // 3 tokens left of 5
  ASSERT_NO_FATAL_FAILURE(seed_bucket("198.18.7.1", tat));
  ASSERT_NO_FATAL_FAILURE(seed_bucket("198.18.7.2", tat));

  const Verdicts enforcing = send(v4("198.18.7.1"), kPackets);
  ASSERT_NO_FATAL_FAILURE(publish("", kNoRefill, kBurst, /*all_dry=*/true));
  EXPECT_TRUE(live_policy().flags & DT_POL_DRY_RUN) << "set_all_dry_run must flag rule 0's policy";
  const dt_stats before = stats();
  const Verdicts dry = send(v4("198.18.7.2"), kPackets);
  const dt_stats after = stats();

  EXPECT_EQ(enforcing.passed, 3) << "enforcing: 3 tokens were left";
  EXPECT_EQ(enforcing.dropped, kPackets - 3);
  EXPECT_EQ(dry.passed, kPackets) << "dry run drops nothing";
  auto e = bucket_of("198.18.7.1", 0), d = bucket_of("198.18.7.2", 0);
  ASSERT_TRUE(e && d);
  EXPECT_EQ(d->passed, e->passed) << "the same packets admitted";
  EXPECT_EQ(d->tat_ns, e->tat_ns) << "the same tokens taken";
  EXPECT_EQ(d->tat_ns, tat + 3 * interval);
  EXPECT_EQ(d->would_drop, e->dropped) << "would-drop where enforcing dropped";
  EXPECT_EQ(d->dropped, 0u);
  EXPECT_EQ(e->would_drop, 0u) << "enforcing counts no would-drop";
  EXPECT_EQ(rule_would_drop(0), e->dropped) << "per rule";
  EXPECT_EQ(after.passed - before.passed, d->passed) << stats_to_string(after);
  EXPECT_EQ(after.dropped, before.dropped) << "nothing dropped in dry run: " << stats_to_string(after);
}

// A fresh bucket: burst passes, then every packet is a would-drop; per source and per rule.
TEST_F(XdpDryRun, FreshBucketCountsPerSourceAndPerRule) {
  ASSERT_NO_FATAL_FAILURE(
      publish("[[rule]]\nname = \"t\"\ncidr = \"198.18.8.0/24\"\nrate = 0.001\nburst = 4\n"
              "dry_run = true\n",
              kNoRefill, 2));
  const Verdicts a = send(v4("198.18.8.1"), 10);
  const Verdicts b = send(v4("198.18.8.2"), 3);
  const Verdicts c = send(v4("198.18.9.1"), 5);  // the default rule: enforcing
  EXPECT_EQ(a.passed, 10);
  EXPECT_EQ(b.passed, 3);
  EXPECT_EQ(c.passed, 2) << "the default rule is not in dry run";
  EXPECT_EQ(c.dropped, 3);
  auto ba = bucket_of("198.18.8.1", 1), bb = bucket_of("198.18.8.2", 1), bc = bucket_of("198.18.9.1", 0);
  ASSERT_TRUE(ba && bb && bc);
  EXPECT_EQ(ba->passed, 4u);
  EXPECT_EQ(ba->would_drop, 6u);
  EXPECT_EQ(bb->passed, 3u);
  EXPECT_EQ(bb->would_drop, 0u);
  EXPECT_EQ(bc->dropped, 3u);
  EXPECT_EQ(bc->would_drop, 0u);
  EXPECT_EQ(rule_would_drop(1), 6u);
  EXPECT_EQ(rule_would_drop(0), 0u);
  EXPECT_EQ(rule_stats(1).passed, 7u);
  EXPECT_EQ(rule_stats(1).dropped, 0u);
  EXPECT_EQ(rule_stats(0).dropped, 3u);
}

TEST_F(XdpDryRun, DenyRuleInDryRunPassesAndCountsPerRule) {
  ASSERT_NO_FATAL_FAILURE(
      publish("[[rule]]\nname = \"bad\"\ncidr = \"198.18.10.0/24\"\naction = \"deny\"\n"
              "dry_run = true\n"
              "[[rule]]\nname = \"worse\"\ncidr = \"198.18.11.0/24\"\naction = \"deny\"\n",
              kNoRefill, 100));
  const Verdicts dry = send(v4("198.18.10.1"), 7);
  const Verdicts enforcing = send(v4("198.18.11.1"), 4);
  EXPECT_EQ(dry.passed, 7);
  EXPECT_EQ(enforcing.dropped, 4);
  EXPECT_EQ(rule_would_drop(1), 7u);
  EXPECT_EQ(rule_stats(1).dropped, 0u);
  EXPECT_EQ(rule_stats(2).dropped, 4u);
  EXPECT_EQ(rule_would_drop(2), 0u);
  const dt_stats st = stats();
  EXPECT_EQ(st.denied, 4u) << "only the enforcing deny rule denies: " << stats_to_string(st);
  EXPECT_EQ(bucket_count(), 0) << "deny rules need no bucket, in dry run either";
}

// dry_run = true, then the same rule enforcing by a reload: the bucket carries on.
TEST_F(XdpDryRun, ReloadToEnforcingKeepsTheBucket) {
  const std::string r = "[[rule]]\nname = \"t\"\ncidr = \"198.18.12.0/24\"\nrate = 0.001\nburst = 3\n";
  ASSERT_NO_FATAL_FAILURE(publish(r + "dry_run = true\n", kNoRefill, 100));
  const auto f = v4("198.18.12.1");
  EXPECT_EQ(send(f, 5).passed, 5);
  auto b = bucket_of("198.18.12.1", 1);
  ASSERT_TRUE(b);
  const uint64_t tat = b->tat_ns;
  EXPECT_EQ(b->would_drop, 2u);

  ASSERT_NO_FATAL_FAILURE(publish(r, kNoRefill, 100));
  const Verdicts after = send(f, 2);
  EXPECT_EQ(after.dropped, 2) << "enforcing now, on the bucket dry run drained";
  b = bucket_of("198.18.12.1", 1);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->passed, 3u) << "kept across the reload";
  EXPECT_EQ(b->tat_ns, tat) << "no token given back";
  EXPECT_EQ(b->dropped, 2u);
  EXPECT_EQ(b->would_drop, 2u) << "the dry run's count stays";
  EXPECT_EQ(rule_would_drop(1), 2u);
}

// Cluster mode in dry run: what the source was admitted is reported (and only that),
// and peers' hits debited here count against it as when enforcing, so the would-drops
// are what the cluster would drop.
TEST_F(XdpDryRun, ReportsAdmissionsAndTakesPeersDebits) {
  ASSERT_NO_FATAL_FAILURE(publish("", kNoRefill, 10, /*all_dry=*/true));
  auto c = new_collector();
  ASSERT_EQ(c->enable(false), 0);
  auto period = [&] {
    int err = 0;
    std::map<std::string, uint64_t> m;
    for (const auto &e : c->end_period(&err)) m[key_to_string(e.key)] += e.hits;
    EXPECT_EQ(err, 0) << strerror(-err);
    return m;
  };
  const auto f = v4("198.18.13.1");
  EXPECT_EQ(send(f, 4).passed, 4);
  EXPECT_EQ(period(), (std::map<std::string, uint64_t>{{"198.18.13.1", 4}}));
  const DebitResult d = apply({make_debit("198.18.13.1", 3)});
  EXPECT_EQ(d.hits_applied, 3u) << "a peer's 3 hits";
  EXPECT_EQ(send(f, 5).passed, 5) << "dry run passes everything";
  auto b = bucket_of("198.18.13.1", 0);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->passed, 7u) << "10 - 4 admitted - 3 debited = 3 more admitted";
  EXPECT_EQ(b->would_drop, 2u) << "what the cluster would have dropped";
  EXPECT_EQ(period(), (std::map<std::string, uint64_t>{{"198.18.13.1", 3}})) << "admissions only, not would-drops";
}

}  // namespace
}  // namespace dt::test
