// test_cluster_node.cpp - one member of the cluster (cluster_core/cluster_node.h): two nodes
// wired through in-memory publish calls, no sockets. A gap is asked for at once and served by
// its sender, the period's end asks again and takes silent peers down, and the period's
// report takes what the early ticks held back.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cluster_core/cluster_node.h"
#include "report_fixtures.h"

namespace {

using namespace dt;
using dt::test::v4;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kPeriod = 200 * kMs;

// One node named `id` and what it published, decoded.
struct Member {
  LocalRules rules;
  std::unique_ptr<ClusterNode> node;
  std::vector<Outgoing> sent;
  uint64_t epoch = 0;

  Member(const std::string &id, bool resends) {
    rules.set({"default"}, {true});
    NodeOptions o;
    o.tracker.down_after_ns = 5 * kPeriod;
    o.planner.node_id = id;
    o.planner.owner_scheme = false;
    o.planner.configured_peers = 1;
    o.join = JoinGuardOptions{0, 0, 1};
    o.receiver.node_id = id;
    o.early = EarlyReportOptions{kPeriod, kPeriod / 4, 2};
    o.resends = resends;
    node = std::make_unique<ClusterNode>(o, rules);
    node->open(OutboxOptions{id, 7, 2000 * kMs, kPeriod / 2}, {},
               NodeIo{[this](const Outgoing &out, uint64_t) { return sent.push_back(out), true; },
                      [this] { return node->outbox().header(epoch, 1000); },
                      [this] { return node->outbox().header(epoch, 1000); }});
  }
  // The report of one period, with `entries` (heard at now_ns).
  void report(std::vector<ReportEntry> entries, uint64_t now_ns) {
    ReportBody body;
    body.rules = {"default"};
    body.entries = std::move(entries);
    node->sender().period(node->outbox().header(++epoch, 1000), std::move(body), false, now_ns, false);
  }
  // Message i of what this member sent, as `to` reads it (tracker, then the node).
  Received deliver(size_t i, Member &to, uint64_t now_ns, Outbox::Resends *served = nullptr) {
    ReportHeader h;
    ReportBody body;
    EXPECT_EQ(decode_report(sent.at(i).bytes->data(), sent.at(i).bytes->size(), &h, &body), DecodeError::None);
    return to.node->receive(h, body, to.node->tracker().arrive(h, now_ns), now_ns, served);
  }
};

TEST(ClusterNode, AGapIsAskedForAtOnceAndItsSenderServesIt) {
  Member h0("h0", true), h1("h1", true);
  for (uint64_t p = 1; p <= 3; p++) h0.report({{v4(p), p}}, p * kPeriod);
  ASSERT_EQ(h0.sent.size(), 3u) << "one report a period (every-period cadence)";
  h0.deliver(0, h1, kPeriod + kMs);
  EXPECT_TRUE(h1.sent.empty()) << "no gap yet: nothing to ask";
  const Received r = h0.deliver(2, h1, 3 * kPeriod + kMs);
  EXPECT_EQ(r.plan.kind, InboundKind::Report);
  ASSERT_EQ(h1.sent.size(), 1u) << "the gap (seq 2) is asked for as soon as it shows";
  EXPECT_EQ(h1.sent[0].kind, OutKind::ResendRequest);
  Outbox::Resends served;
  h1.deliver(0, h0, 3 * kPeriod + 2 * kMs, &served);
  EXPECT_TRUE(served.named_us);
  ASSERT_EQ(h0.sent.size(), 4u) << "the request is served by the node";
  EXPECT_EQ(h0.sent[3].kind, OutKind::Resent);
  EXPECT_EQ(*h0.sent[3].bytes, *h0.sent[1].bytes) << "a resend is the very bytes of seq 2";
  EXPECT_TRUE(h0.deliver(3, h1, 3 * kPeriod + 3 * kMs).charges.size() == 1) << "the resent report is charged";
}

TEST(ClusterNode, WithoutResendsNothingIsAskedForOrServed) {
  Member h0("h0", false), h1("h1", false);
  for (uint64_t p = 1; p <= 3; p++) h0.report({{v4(p), p}}, p * kPeriod);
  h0.deliver(0, h1, kPeriod + kMs);
  h0.deliver(2, h1, 3 * kPeriod + kMs);
  h1.node->end_period(3 * kPeriod + 2 * kMs);
  EXPECT_TRUE(h1.sent.empty()) << "a cluster that never asks again: no request, at once or at the period's end";
}

TEST(ClusterNode, ThePeriodsEndAsksAgainAndTakesSilentPeersDown) {
  Member h0("h0", true), h1("h1", true);
  for (uint64_t p = 1; p <= 3; p++) h0.report({{v4(p), p}}, p * kPeriod);
  h0.deliver(0, h1, kPeriod + kMs);
  h0.deliver(2, h1, 3 * kPeriod + kMs);
  h1.sent.clear();
  EXPECT_TRUE(h1.node->end_period(4 * kPeriod).empty()) << "h0 was heard lately: still up";
  ASSERT_EQ(h1.sent.size(), 1u) << "seq 2 still missing: asked for again at the period's end";
  EXPECT_EQ(h1.sent[0].kind, OutKind::ResendRequest);
  const auto downs = h1.node->end_period(3 * kPeriod + 6 * kPeriod);
  ASSERT_EQ(downs.size(), 1u) << "silent for more than down_after";
  EXPECT_EQ(downs[0].node_id, "h0");
  EXPECT_FALSE(downs[0].up);
}

TEST(ClusterNode, ThePeriodsReportTakesWhatEarlyTicksHeldBack) {
  Member h0("h0", true);
  EarlyReport &early = h0.node->early();
  early.period_reported({}, 0);
  ASSERT_EQ(early.due({v4(1)}).size(), 1u);
  EXPECT_TRUE(early.tick({{v4(1), 1}}).empty()) << "one hit: below min_hits, held";
  const auto served = h0.node->period_served({{v4(1), 2}, {v4(2), 5}}, kPeriod);
  ASSERT_EQ(served.size(), 2u);
  EXPECT_EQ(served[0].hits + served[1].hits, 8u) << "the held hit goes with the period's report";
  EXPECT_TRUE(h0.node->period_served({}, 2 * kPeriod).empty()) << "held once only";
}

}  // namespace
