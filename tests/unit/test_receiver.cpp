// test_receiver.cpp - the cluster core's receiving side (cluster_core/receiver.h) and the end
// of a period (cluster_core/period_end.h): what a judged peer message does to a node, and
// what a node asks for and takes down when its period ends. Pure logic: no sockets, no maps.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster_core/period_end.h"
#include "cluster_core/receiver.h"
#include "cluster_core/source_owner.h"
#include "report_fixtures.h"

namespace {

using namespace dt;
using dt::test::v4;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kPeriod = 200 * kMs;
constexpr uint64_t kUnixMs = 1'700'000'000'000ull;

ReportBody body_of(std::vector<ReportEntry> entries) {
  ReportBody b;
  b.rules = {"default"};
  b.entries = std::move(entries);
  return b;
}

ReportHeader header(const std::string &node, uint64_t epoch = 1) {
  ReportHeader h;
  h.node_id = node;
  h.boot_id = 7;
  h.epoch = epoch;
  h.seq = epoch;
  h.sent_unix_ms = kUnixMs;
  return h;
}

// Node h0 of six (h0..h5), its rules those of a default LocalRules: "default", burst 50.
struct Node {
  Node() {
    PlannerOptions o;
    o.node_id = "h0";
    o.configured_peers = 5;
    o.router = RouterOptions{25 * kPeriod, 10 * kPeriod};
    o.cadence = CadenceOptions{kPeriod, 5 * kPeriod, kMaxBatchEntries};
    planner = ReportPlanner(o);
    rules.burst_hits = {50};
  }
  ReportPlanner planner;
  JoinGuard guard{JoinGuardOptions{2000 * kMs, 10}};
  LocalRules rules;
  Receiver receiver{ReceiverOptions{"h0", false}, planner, guard, rules};
};

Arrival fresh() { return Arrival{}; }

TEST(Receiver, AReportIsChargedAndItsSourcesAreShared) {
  Node n;
  const ReportBody body = body_of({{v4(1), 3}, {v4(2), 4}});
  const Received r = n.receiver.receive(header("h1"), body, fresh(), kPeriod);
  EXPECT_EQ(r.plan.kind, InboundKind::Report);
  ASSERT_EQ(r.charges.size(), 1u);
  EXPECT_EQ(r.charges[0].node_id, "h1");
  EXPECT_EQ(r.charges[0].body, &body) << "the charge names the hits as the message did";
  ASSERT_EQ(r.charges[0].debits.size(), 2u);
  EXPECT_EQ(r.charges[0].hits, 7u);
  EXPECT_TRUE(n.planner.router().shared(v4(1), kPeriod)) << "what a peer told everyone about is shared";
  EXPECT_TRUE(n.guard.joined() == false) << "epoch 1: peers that started with us, no joined cluster";
}

TEST(Receiver, AStaleMessageIsCountedNotCharged) {
  Node n;
  Arrival old = fresh();
  old.stale = true;
  ReportBody body = body_of({{v4(1), 3}});
  body.tags = {TagHit{"t", 5}};
  const Received r = n.receiver.receive(header("h1"), body, old, kPeriod);
  EXPECT_TRUE(r.plan.stale);
  EXPECT_EQ(r.stale_hits, 8u) << "its entries' and its tags' hits";
  EXPECT_TRUE(r.charges.empty());
  EXPECT_FALSE(n.planner.router().shared(v4(1), kPeriod)) << "nothing of a stale report is taken in";
}

TEST(Receiver, ARulePeersHaveAndWeDoNotIsCountedNotDebited) {
  Node n;
  ReportBody body = body_of({{v4(1), 3}});
  body.rules = {"other"};
  const Received r = n.receiver.receive(header("h1"), body, fresh(), kPeriod);
  ASSERT_EQ(r.charges.size(), 1u) << "still seen (agent explain): it came";
  EXPECT_TRUE(r.charges[0].debits.empty());
  EXPECT_EQ(r.unknown_entries, 1u);
}

TEST(Receiver, ARelayChargesEveryMemberButUsAndRefusesStrangers) {
  Node n;
  n.receiver.set_relay_member([](const std::string &id) { return id != "hub"; });
  ReportBody relay;
  relay.relayed = {RelayedReport{"h0", {"default"}, {{v4(1), 9}}}, RelayedReport{"h2", {"default"}, {{v4(1), 2}}},
                   RelayedReport{"hub", {"default"}, {{v4(1), 5}}}};
  const Received r = n.receiver.receive(header("h1"), relay, fresh(), kPeriod);
  EXPECT_EQ(r.plan.kind, InboundKind::Relay);
  ASSERT_EQ(r.charges.size(), 1u) << "our own hits were charged when we admitted them";
  EXPECT_EQ(r.charges[0].node_id, "h2");
  EXPECT_EQ(r.charges[0].hits, 2u);
  ASSERT_EQ(r.strangers.size(), 1u);
  EXPECT_EQ(r.strangers[0]->node_id, "hub");
  EXPECT_TRUE(n.planner.router().shared(v4(1), kPeriod));
}

TEST(Receiver, AJoinerStartsThePeersSourcesEmpty) {
  Node n;
  const ReportBody body = body_of({{v4(1), 3}});
  const Received r = n.receiver.receive(header("h1", 40), body, fresh(), kPeriod);
  ASSERT_TRUE(n.guard.active(kPeriod)) << "epoch 40: we joined a running cluster";
  ASSERT_EQ(r.charges.size(), 1u);
  ASSERT_EQ(r.charges[0].debits.size(), 1u);
  EXPECT_EQ(r.charges[0].debits[0].hits, 53u) << "a burst more at the first debit";
  EXPECT_EQ(r.charges[0].hits, 3u) << "the hits as reported";
  EXPECT_EQ(r.join.sources, 1u);
  EXPECT_EQ(r.join.hits, 50u);
  const Received again = n.receiver.receive(header("h1", 41), body, fresh(), kPeriod + 1);
  EXPECT_EQ(again.charges[0].debits[0].hits, 3u) << "once per source";
}

// A source h0 owns among h0..h5.
dt_key owned_by_us() {
  const std::vector<std::string> ids{"h0", "h1", "h2", "h3", "h4", "h5"};
  for (uint32_t i = 0;; i++)
    if (source_owner(ids, v4(i)) == 0) return v4(i);
}

TEST(Receiver, ADirectedMessageIsChargedAndWhatTurnsSharedIsRelayed) {
  Node n;
  ASSERT_TRUE(n.planner.owner_ready(std::vector<std::string>{"h1", "h2", "h3", "h4", "h5"}));
  const dt_key k = owned_by_us();
  ReportHeader h = header("h1");
  h.to = "h0";
  const Received r = n.receiver.receive(h, body_of({{k, 2}}), fresh(), kPeriod);
  EXPECT_EQ(r.plan.kind, InboundKind::Directed);
  ASSERT_EQ(r.charges.size(), 1u);
  EXPECT_TRUE(r.relay.relays.empty()) << "one member so far";
  ReportHeader h2 = header("h2");
  h2.to = "h0";
  const Received second = n.receiver.receive(h2, body_of({{k, 5}}), fresh(), kPeriod + kMs);
  EXPECT_EQ(second.relay.relays.size(), 2u) << "a second member: every hit held is relayed";
}

TEST(Receiver, ResendRequestsAndBansAreTheCallers) {
  Node n;
  ReportBody resend;
  resend.resend = {{"h0", 1, {1}}};
  EXPECT_EQ(n.receiver.receive(header("h1"), resend, fresh(), kPeriod).plan.kind, InboundKind::ResendRequest);
  Arrival dup;
  dup.verdict = Verdict::Duplicate;
  const Received r = n.receiver.receive(header("h1"), body_of({{v4(1), 2}}), dup, kPeriod);
  EXPECT_EQ(r.plan.kind, InboundKind::Dropped);
  EXPECT_TRUE(r.charges.empty());
}

TEST(PeriodEnd, AsksForWhatIsMissingAndTakesSilentPeersDown) {
  PeerTracker tracker(TrackerOptions{5 * kPeriod, 0, false, kMinTrackedPeers, 0});
  Outbox out(OutboxOptions{"h0", 77, 2000 * kMs, kPeriod / 2});
  tracker.arrive(header("h1", 1), kPeriod);
  const Arrival gap = tracker.arrive(header("h1", 3), kPeriod + kMs);
  ASSERT_TRUE(gap.gap);
  PeriodEnd e = end_period(tracker, out, out.header(1, kUnixMs), 2 * kPeriod);
  ASSERT_TRUE(e.resend_request) << "seq 2 is missing";
  EXPECT_EQ(e.resend_request->kind, OutKind::ResendRequest);
  EXPECT_TRUE(e.changes.empty());
  EXPECT_FALSE(end_period(tracker, out, out.header(1, kUnixMs), 2 * kPeriod, false).resend_request)
      << "a cluster that never asks again";
  e = end_period(tracker, out, out.header(9, kUnixMs), 9 * kPeriod);
  ASSERT_EQ(e.changes.size(), 1u) << "h1 silent for down_after";
  EXPECT_FALSE(e.changes[0].up);
}

}  // namespace
