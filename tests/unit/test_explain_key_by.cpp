// test_explain_key_by.cpp - `agent explain` and rules keyed by destination: a sender's rule
// says where its tokens come from, and an address that is a destination shows its bucket.
#include <gtest/gtest.h>

#include "commands/explain.h"
#include "common/address.h"
#include "dataplane/policy.h"
#include "dthrottle/bucket.h"
#include "text_checks.h"

namespace dt {
namespace {

using test::contains;

// Rule 3 "vip": 1000/s burst 100, a bucket per destination /32.
ExplainRule vip_rule(const dt_key &addr) {
  ExplainRule r;
  r.id = 3;
  r.name = "vip";
  r.when = "udp";
  std::string err;
  EXPECT_TRUE(make_policy(1000, 100, &r.policy, &err)) << err;
  r.policy.flags |= DT_POL_KEY_DEST;
  r.policy.v4_key_bits = 32;
  r.key = addr;
  dt_key_for_rule(&r.key, &r.policy, r.id, 0);
  return r;
}

Explanation explanation_of(const char *address) {
  Explanation e;
  e.address = address;
  EXPECT_TRUE(key_from_string(address, &e.addr));
  e.rules_on = true;
  e.prefix = "198.18.0.0/16";
  e.peers.state = ExplainPeers::State::NotAsked;
  return e;
}

TEST(ExplainKeyBy, ASendersRuleKeyedByDestinationHasNoBucketOfItsOwn) {
  Explanation e = explanation_of("198.18.1.7");
  e.rules.push_back(vip_rule(e.addr));
  const std::string text = render_explanation_text(e);
  EXPECT_TRUE(contains(text, "-> rule vip: throttle 1000/s burst 100, a bucket per destination /32"));
  EXPECT_TRUE(contains(text,
                       "rule vip: keyed by destination: its packets take their tokens from the bucket of the address "
                       "they go to (one per destination /32, shared by every source), not from a bucket of its own"));
  const std::string json = render_explanation_json(e);
  EXPECT_TRUE(contains(json, R"("key_by":"destination","key_prefix_len":32,"bucket":null)"));
  EXPECT_TRUE(contains(json, R"("as_destination":[])"));
}

TEST(ExplainKeyBy, ADestinationShowsItsBucket) {
  Explanation e = explanation_of("198.18.200.7");
  e.now_ns = 10'000'000'000ull;
  ExplainRule r = vip_rule(e.addr);
  r.as_destination = true;
  r.when = "to this address";
  r.has_bucket = true;
  r.bucket.passed = 1234;
  r.bucket.debited = 66;
  r.bucket.tat_ns = e.now_ns + r.policy.burst_ns - 40 * r.policy.interval_ns;  // 40 tokens left
  r.bucket.last_seen_ns = e.now_ns;
  EXPECT_EQ(r.key.rule, 3u | DT_KEY_DEST);
  e.as_destination.push_back(r);
  const std::string text = render_explanation_text(e);
  EXPECT_TRUE(contains(text,
                       "as a destination of rule vip (throttle 1000/s burst 100, a bucket per destination /32): "
                       "bucket dst 198.18.200.7/32: 40.000 of 100 tokens now; passed 1234, dropped 0, debited 66"));
  const std::string json = render_explanation_json(e);
  EXPECT_TRUE(contains(json, R"("as_destination":[{"id":3,"name":"vip","when":"to this address")"));
  EXPECT_TRUE(
      contains(json, R"("key_by":"destination","key_prefix_len":32,"key":"198.18.200.7","bucket":{"tokens":40.0,)"));
}

}  // namespace
}  // namespace dt
