// test_crowdsec_stream.cpp - the CrowdSec bouncer's state machine (crowdsec/stream_state.h):
// startup pulls that reconcile, deltas, failures that keep every ban and back off, bans
// keyed by prefix so that pulling the same decision twice changes nothing.
#include <gtest/gtest.h>

#include <string>

#include "crowdsec/stream_state.h"

namespace {

using dt::BanChange;
using dt::DecisionStream;
using dt::StreamBatch;

constexpr uint64_t kS = 1'000'000'000;

dt::BanPrefix prefix(const char *value) {
  dt::BanPrefix p;
  EXPECT_TRUE(dt::parse_ban_value(value, true, &p)) << value;
  return p;
}

dt::StreamBan ban(const char *value, int64_t seconds, const char *reason = "ssh-bf") {
  return {prefix(value), seconds * static_cast<int64_t>(kS), reason, "crowdsec"};
}

// "set 198.18.0.1 60s ssh-bf, lift 198.18.0.2": the changes in order, for one comparison.
std::string text(const std::vector<BanChange> &changes) {
  std::string out;
  for (const auto &c : changes) {
    out += out.empty() ? "" : ", ";
    if (c.kind == BanChange::Kind::Set)
      out += "set " + dt::ban_prefix_text(c.prefix) + " " + std::to_string(c.duration_ns / kS) + "s " + c.reason;
    else out += "lift " + dt::ban_prefix_text(c.prefix);
  }
  return out;
}

DecisionStream stream() { return DecisionStream({10 * kS, 60 * kS}); }

TEST(CrowdsecStream, StartupThenDeltas) {
  DecisionStream s = stream();
  EXPECT_TRUE(s.startup_next());
  EXPECT_EQ(s.next_pull_ns(), 0u) << "the first pull is due at once";
  StreamBatch startup;
  startup.added = {ban("198.18.0.1", 60), ban("198.18.5.0/24", 3600, "manual")};
  startup.deleted = {prefix("198.18.0.9")};  // a startup answer lists expired ones: nothing to do
  EXPECT_EQ(text(s.on_pull(startup, 100 * kS)), "set 198.18.0.1 60s ssh-bf, set 198.18.5.0/24 3600s manual");
  EXPECT_FALSE(s.startup_next());
  EXPECT_EQ(s.next_pull_ns(), 110 * kS);
  EXPECT_EQ(s.held(), 2u);

  StreamBatch delta;
  delta.deleted = {prefix("198.18.0.1"), prefix("198.18.0.1")};
  delta.added = {ban("2001:2::7", 30)};
  EXPECT_EQ(text(s.on_pull(delta, 110 * kS)), "lift 198.18.0.1, set 2001:2::7 30s ssh-bf");
  EXPECT_EQ(s.held(), 2u);
  EXPECT_EQ(text(s.on_pull({}, 120 * kS)), "") << "an empty delta changes nothing";
}

TEST(CrowdsecStream, DeletedAndNewInOneDeltaKeepsTheBan) {
  DecisionStream s = stream();
  s.on_pull({}, 0);
  StreamBatch delta;
  delta.deleted = {prefix("198.18.0.1")};
  delta.added = {ban("198.18.0.1", 600, "longer")};
  EXPECT_EQ(text(s.on_pull(delta, kS)), "set 198.18.0.1 600s longer") << "no lift in between";
}

TEST(CrowdsecStream, OnePrefixTwiceIsOneBanTheLongest) {
  DecisionStream s = stream();
  StreamBatch b;
  b.added = {ban("198.18.0.1", 60, "short"), ban("198.18.0.1/32", 600, "long"), ban("198.18.0.1", 300, "mid")};
  EXPECT_EQ(text(s.on_pull(b, 0)), "set 198.18.0.1 600s long");
}

TEST(CrowdsecStream, FailuresKeepBansBackOffAndResync) {
  DecisionStream s = stream();
  StreamBatch startup;
  startup.added = {ban("198.18.0.1", 3600), ban("198.18.0.2", 3600)};
  s.on_pull(startup, 0);
  uint64_t now = 10 * kS;
  const uint64_t waits[] = {10, 20, 40, 60, 60};  // poll, doubling, capped at 60 s
  for (uint64_t wait : waits) {
    s.on_failure(now);
    EXPECT_EQ(s.next_pull_ns() - now, wait * kS) << "after " << s.failures() << " failures";
    EXPECT_TRUE(s.startup_next()) << "the first pull after a failure is a startup one";
    EXPECT_EQ(s.held(), 2u) << "a failure keeps every ban";
    now = s.next_pull_ns();
  }
  // The LAPI is back; meanwhile 198.18.0.2 was deleted and 198.18.0.3 added.
  StreamBatch again;
  again.added = {ban("198.18.0.1", 3600 - now / kS), ban("198.18.0.3", 60)};
  EXPECT_EQ(text(s.on_pull(again, now)), "lift 198.18.0.2, set 198.18.0.3 60s ssh-bf")
      << "198.18.0.1 is held as it is: not set again";
  EXPECT_EQ(s.failures(), 0u);
  EXPECT_EQ(s.next_pull_ns(), now + 10 * kS);
}

TEST(CrowdsecStream, StartupSetsAgainWhatChanged) {
  DecisionStream s = stream();
  StreamBatch b;
  b.added = {ban("198.18.0.1", 600), ban("198.18.0.2", 600)};
  s.on_pull(b, 0);
  s.on_failure(kS);
  b.added = {ban("198.18.0.1", 900), ban("198.18.0.2", 599, "other reason")};
  EXPECT_EQ(text(s.on_pull(b, kS)), "set 198.18.0.1 900s ssh-bf, set 198.18.0.2 599s other reason");
}

TEST(CrowdsecStream, AdoptedBansAreLiftedWhenTheLapiDroppedThem) {
  DecisionStream s = stream();
  s.adopt(prefix("198.18.0.1"), 500 * kS, "ssh-bf");  // from an earlier bouncer
  s.adopt(prefix("198.18.0.2"), 500 * kS, "ssh-bf");
  StreamBatch b;
  b.added = {ban("198.18.0.1", 400)};  // the same expiry: left as it is
  EXPECT_EQ(text(s.on_pull(b, 100 * kS)), "lift 198.18.0.2");
}

TEST(CrowdsecStream, ExpiredBansAreForgotten) {
  DecisionStream s = stream();
  StreamBatch b;
  b.added = {ban("198.18.0.1", 5), ban("198.18.0.2", 50)};
  s.on_pull(b, 0);
  s.expire(5 * kS);
  EXPECT_EQ(s.held(), 1u);
  s.expire(50 * kS);
  EXPECT_EQ(s.held(), 0u);
}

TEST(CrowdsecStream, ChangesThatFailAreRetriedByAStartupPullWithBackoff) {
  DecisionStream s = stream();
  StreamBatch b;
  b.added = {ban("198.18.0.1", 600), ban("198.18.0.2", 600)};
  auto changes = s.on_pull(b, 0);
  s.on_change_failed(changes[0], 0);
  s.on_change_failed(changes[1], 0);
  EXPECT_TRUE(s.startup_next());
  EXPECT_EQ(s.next_pull_ns(), 10 * kS) << "two failures of one pull count once";
  EXPECT_EQ(s.held(), 0u) << "a ban not set is not held";
  changes = s.on_pull(b, 10 * kS);
  EXPECT_EQ(text(changes), "set 198.18.0.1 600s ssh-bf, set 198.18.0.2 600s ssh-bf");
  s.on_change_failed(changes[1], 10 * kS);
  EXPECT_EQ(s.next_pull_ns(), 30 * kS) << "still failing: the wait doubles";
  b.added = {ban("198.18.0.1", 580), ban("198.18.0.2", 580)};  // 20 s later: 20 s less left
  EXPECT_EQ(text(s.on_pull(b, 30 * kS)), "set 198.18.0.2 580s ssh-bf") << "only the one that failed";
  EXPECT_EQ(s.next_pull_ns(), 40 * kS);
}

}  // namespace
