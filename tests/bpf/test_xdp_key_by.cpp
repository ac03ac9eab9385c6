// test_xdp_key_by.cpp - rules keyed by destination (key_by = "destination") in the XDP
// program: the bucket is the packet's destination's (key.rule | DT_KEY_DEST), shared by
// every source; two destinations are independent; a source-keyed rule beside it is
// unchanged; the collect and debit programs handle destination buckets (what the cluster
// reports and peers debit), and a debit keyed the other way is refused.
//
// Rules are parsed, compiled and published with the agent's own code, as `agent --rules`
// does. Rates of 0.001/s make refill negligible, so counts are exact.
#include <linux/bpf.h>

#include <map>
#include <string>
#include <vector>

#include "bpf_fixture.h"
#include "common/address.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"
#include "frames/packet_builder.h"
#include "prog_maps.h"
#include "rules/rules.h"

namespace dt::test {
using frames::PacketBuilder;
namespace {

constexpr double kNoRefill = 0.001;     // tokens per second
constexpr uint32_t kVip = 1, kSrc = 2;  // rule ids, in file order

// Rule 1 "vip": sources of 198.18.0.0/16 (UDP), a bucket per destination, burst 10.
// Rule 2 "src": sources of 198.19.0.0/16, a bucket per source, burst 3.
const std::string kRules =
    "version = 1\n"
    "[[rule]]\nname = \"vip\"\ncidr = \"198.18.0.0/16\"\nproto = \"udp\"\nrate = 0.001\nburst = 10\n"
    "key_by = \"destination\"\n"
    "[[rule]]\nname = \"src\"\ncidr = \"198.19.0.0/16\"\nrate = 0.001\nburst = 3\n"
    "[[rule]]\nname = \"vip6\"\ncidr = \"2001:2::/48\"\nrate = 0.001\nburst = 4\nkey_by = \"destination\"\n";

std::vector<uint8_t> udp4(const std::string &src, const std::string &dst) {
  return PacketBuilder().ipv4(src, dst).udp(16).ports(40000, 53).build();
}
std::vector<uint8_t> udp6(const std::string &src, const std::string &dst) {
  return PacketBuilder().ipv6(src, dst).udp(16).ports(40000, 53).build();
}
// The i-th of many sources, 198.18.1.0 + i (i < 250).
std::string source(int i) { return "198.18.1." + std::to_string(i + 1); }

class XdpKeyBy : public RuleMapsFixture {
 protected:
  void SetUp() override {
    RuleMapsFixture::SetUp();
    if (HasFatalFailure()) return;
    publish_toml(kRules, 0, 0);
  }

  // How many of `frames` passed.
  int passes(const std::vector<std::vector<uint8_t>> &frames) {
    int n = 0;
    for (const auto &f : frames) n += run(f) == XDP_PASS;
    return n;
  }

  // Every bucket as "address#rule" (rule in hex, so DT_KEY_DEST shows), for messages.
  std::string bucket_list() {
    std::string s;
    for_each_bucket(buckets_fd(), [&](const dt_key &k, const dt_bucket &) {
      char rule[16];
      snprintf(rule, sizeof rule, "%#x", k.rule);
      s += (s.empty() ? "" : " ") + key_to_string(k) + "#" + rule;
    });
    return s.empty() ? "(none)" : s;
  }

  dt_debit debit_of(const std::string &addr, uint32_t key_rule, uint32_t hits) {
    dt_debit d{};
    EXPECT_TRUE(key_from_string(addr, &d.key)) << addr;
    d.key.rule = key_rule;
    d.hits = hits;
    return d;
  }
};

TEST_F(XdpKeyBy, ManySourcesToOneDestinationShareOneBucket) {
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 50; i++) frames.push_back(udp4(source(i), "198.18.200.7"));
  EXPECT_EQ(passes(frames), 10) << "50 sources, one destination: its burst of 10 in all; buckets: " << bucket_list();
  auto b = bucket_of("198.18.200.7", kVip | DT_KEY_DEST);
  ASSERT_TRUE(b) << "no destination bucket 198.18.200.7#vip|DT_KEY_DEST; buckets: " << bucket_list();
  EXPECT_EQ(b->passed, 10u);
  EXPECT_EQ(b->dropped, 40u);
  EXPECT_EQ(b->rule, kVip | DT_KEY_DEST) << "the bucket's rule carries the key bit too";
  EXPECT_EQ(bucket_count(), 1) << "no bucket per source under a rule keyed by destination: " << bucket_list();
  EXPECT_FALSE(bucket_of(source(0), kVip)) << "the source has no bucket of its own";
  EXPECT_FALSE(bucket_of("198.18.200.7", kVip)) << "the destination's bucket is not a source bucket";
}

TEST_F(XdpKeyBy, TwoDestinationsAreIndependent) {
  std::vector<std::vector<uint8_t>> to_a, to_b;
  for (int i = 0; i < 30; i++) to_a.push_back(udp4(source(i), "198.18.200.1"));
  for (int i = 0; i < 30; i++) to_b.push_back(udp4(source(i), "198.18.200.2"));
  EXPECT_EQ(passes(to_a), 10) << bucket_list();
  EXPECT_EQ(passes(to_b), 10) << "B's budget is its own, whatever A used: " << bucket_list();
  EXPECT_EQ(run(udp4(source(99), "198.18.200.1")), XDP_DROP) << "A stays empty";
  auto a = bucket_of("198.18.200.1", kVip | DT_KEY_DEST), b = bucket_of("198.18.200.2", kVip | DT_KEY_DEST);
  ASSERT_TRUE(a && b) << bucket_list();
  EXPECT_EQ(a->passed, 10u);
  EXPECT_EQ(a->dropped, 21u);
  EXPECT_EQ(b->passed, 10u);
  EXPECT_EQ(b->dropped, 20u);
}

TEST_F(XdpKeyBy, SourceKeyedRuleUnchanged) {
  // Rule src (by source, burst 3): each source its own bucket, whatever the destination.
  EXPECT_EQ(passes({udp4("198.19.0.1", "198.18.200.1"), udp4("198.19.0.1", "198.18.200.2"),
                    udp4("198.19.0.1", "198.18.200.3"), udp4("198.19.0.1", "198.18.200.4")}),
            3)
      << bucket_list();
  EXPECT_EQ(passes({udp4("198.19.0.2", "198.18.200.1"), udp4("198.19.0.2", "198.18.200.1")}), 2) << bucket_list();
  auto one = bucket_of("198.19.0.1", kSrc), two = bucket_of("198.19.0.2", kSrc);
  ASSERT_TRUE(one && two) << bucket_list();
  EXPECT_EQ(one->passed, 3u);
  EXPECT_EQ(one->dropped, 1u);
  EXPECT_EQ(one->rule, kSrc);
  EXPECT_EQ(two->passed, 2u);
  EXPECT_FALSE(bucket_of("198.18.200.1", kSrc | DT_KEY_DEST)) << bucket_list();
  // A source of the vip rule's prefix that its conditions do not match (TCP): the
  // default rule (none here: it passes, fail-open) and no bucket.
  EXPECT_EQ(run(PacketBuilder().ipv4(source(0), "198.18.200.1").tcp(80, 0x02).build()), XDP_PASS);
  EXPECT_EQ(bucket_count(), 2) << bucket_list();
}

TEST_F(XdpKeyBy, IPv6DestinationsAreCutToTheKeyPrefix) {
  // vip6: a bucket per destination /64 (the IPv6 default), burst 4.
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 6; i++)
    frames.push_back(udp6("2001:2::" + std::to_string(i + 1), "2001:2:0:9::" + std::to_string(i + 1)));
  EXPECT_EQ(passes(frames), 4) << "six sources to six addresses of one /64: one bucket; " << bucket_list();
  auto b = bucket_of("2001:2:0:9::", 3 | DT_KEY_DEST);
  ASSERT_TRUE(b) << bucket_list();
  EXPECT_EQ(b->passed, 4u);
  EXPECT_EQ(b->dropped, 2u);
}

TEST_F(XdpKeyBy, CollectAndDebitHandleDestinationBuckets) {
  auto c = new_collector();
  ASSERT_EQ(c->enable(false), 0);
  for (int i = 0; i < 4; i++) ASSERT_EQ(run(udp4(source(i), "198.18.200.9")), XDP_PASS);
  int err = 0;
  const std::vector<ReportEntry> served = c->end_period(&err);
  ASSERT_EQ(err, 0) << strerror(-err);
  ASSERT_EQ(served.size(), 1u) << "one destination bucket announced and collected";
  EXPECT_EQ(key_to_string(served[0].key), "198.18.200.9");
  EXPECT_EQ(served[0].key.rule, kVip | DT_KEY_DEST) << "reports carry the key as it is";
  EXPECT_EQ(served[0].hits, 4u);

  // A peer's 5 hits on the destination: its bucket has 10 - 4 - 5 = 1 token left.
  DebitResult r = apply({debit_of("198.18.200.9", kVip | DT_KEY_DEST, 5)});
  EXPECT_EQ(r.entries_applied, 1u);
  EXPECT_EQ(r.entries_failed, 0u);
  EXPECT_EQ(run(udp4(source(7), "198.18.200.9")), XDP_PASS);
  EXPECT_EQ(run(udp4(source(8), "198.18.200.9")), XDP_DROP) << "the debited hits took the rest of the budget";
  auto b = bucket_of("198.18.200.9", kVip | DT_KEY_DEST);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->debited, 5u);

  // Keyed the other way: a source key for vip, a destination key for src. Refused.
  r = apply({debit_of("198.18.200.10", kVip, 5), debit_of("198.19.0.5", kSrc | DT_KEY_DEST, 5)});
  EXPECT_EQ(r.entries_applied, 0u);
  EXPECT_EQ(r.entries_failed, 2u) << "a debit must meet a bucket keyed as its rule keys them";
  EXPECT_FALSE(bucket_of("198.18.200.10", kVip)) << bucket_list();
  EXPECT_FALSE(bucket_of("198.19.0.5", kSrc | DT_KEY_DEST)) << bucket_list();
}

}  // namespace
}  // namespace dt::test
