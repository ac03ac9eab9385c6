// test_cluster_core.cpp - the cluster core (agent/cluster_core/): this node's message
// streams (outbox.h) and who hears of which source, when (report_planner.h). Pure logic:
// messages and events in, what to publish out; no sockets, no maps.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "cluster_core/inbound.h"
#include "cluster_core/outbox.h"
#include "cluster_core/report_planner.h"
#include "cluster_core/source_owner.h"
#include "report_fixtures.h"

namespace {

using namespace dt;
using dt::test::v4;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kPeriod = 200 * kMs;

ReportBody body_of(std::vector<ReportEntry> entries) {
  ReportBody b;
  b.rules = {"default"};
  b.entries = std::move(entries);
  return b;
}

ReportHeader decoded(const Outgoing &o, ReportBody *body = nullptr) {
  ReportHeader h;
  ReportBody scratch;
  size_t inner = 0;
  std::string to;
  const char *data = o.bytes->data();
  size_t len = o.bytes->size();
  if (unwrap_directed(data, len, &to, &inner)) data += inner, len -= inner;
  EXPECT_EQ(decode_report(data, len, &h, body ? body : &scratch), DecodeError::None);
  return h;
}

Outbox outbox(Seal seal = {}) { return Outbox(OutboxOptions{"h0", 77, 2000 * kMs, kPeriod / 2}, std::move(seal)); }

TEST(Outbox, ReportsNumberOneStreamAndAreKeptForResends) {
  Outbox out = outbox();
  const auto a = out.report(out.header(1, 1000), body_of({{v4(1), 3}}), 0);
  const auto b = out.report(out.header(2, 1200), body_of({}), kPeriod);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(decoded(a[0]).seq, 1u);
  EXPECT_EQ(decoded(b[0]).seq, 2u) << "an empty report (a heartbeat) is the stream's next message";
  EXPECT_EQ(decoded(b[0]).boot_id, 77u);
  EXPECT_EQ(out.kept().size(), 2u);
  const auto r = out.serve_resend("h1", {{"h0", 77, {1}}}, kPeriod + 1);
  ASSERT_TRUE(r.named_us);
  ASSERT_EQ(r.out.size(), 1u);
  EXPECT_EQ(*r.out[0].bytes, *a[0].bytes) << "a resent message is the very bytes (signed once)";
  EXPECT_TRUE(out.serve_resend("h2", {{"h0", 77, {1}}}, kPeriod + 2).out.empty())
      << "one publish reaches every subscriber: not sent again within half a period";
  EXPECT_FALSE(out.serve_resend("h1", {{"h9", 77, {1}}}, kPeriod).named_us);
  EXPECT_TRUE(out.serve_resend("h1", {{"h0", 78, {2}}}, 3 * kPeriod).out.empty()) << "another boot's seqs";
}

TEST(Outbox, ResendsStayWithinThePeriodsBudget) {
  Outbox out = outbox();
  std::vector<uint64_t> seqs;
  for (uint64_t i = 1; i <= kMaxResendSeqs; i++) {
    out.report(out.header(i, 1000), body_of({{v4(1), 1}}), 0);
    seqs.push_back(i);
  }
  const auto r = out.serve_resend("h1", {{"h0", 77, seqs}}, 1);
  EXPECT_EQ(r.out.size(), kMaxResentPerPeer);
  EXPECT_EQ(r.over_budget, kMaxResendSeqs - kMaxResentPerPeer);
  EXPECT_TRUE(out.serve_resend("h1", {{"h0", 77, {1}}}, 2).out.empty()) << "h1 spent its budget";
  out.new_period();
  EXPECT_EQ(out.serve_resend("h1", {{"h0", 77, {1}}}, 2 * kPeriod).out.size(), 1u);
}

TEST(Outbox, EachKindHasAStreamOfItsOwn) {
  Outbox out = outbox();
  out.report(out.header(1, 1000), body_of({{v4(1), 1}}), 0);
  const auto d1 = out.directed("h3", out.header(1, 1000), body_of({{v4(2), 1}}));
  const auto d2 = out.directed("h3", out.header(1, 1000), body_of({{v4(2), 1}}));
  const auto e1 = out.directed("h4", out.header(1, 1000), body_of({{v4(3), 1}}));
  ASSERT_EQ(d1.size(), 1u);
  EXPECT_EQ(d1[0].to, "h3");
  EXPECT_EQ(decoded(d1[0]).to, "h3") << "the recipient is in the signed header, not only the envelope";
  EXPECT_EQ(decoded(d1[0]).seq, 1u);
  EXPECT_EQ(decoded(d2[0]).seq, 2u);
  EXPECT_EQ(decoded(e1[0]).seq, 1u) << "a stream per owner";
  const auto req = out.resend_request(out.header(1, 1000), {{"h1", 5, {3, 4}}});
  ASSERT_TRUE(req);
  EXPECT_EQ(decoded(*req).seq, 1u);
  EXPECT_FALSE(out.resend_request(out.header(1, 1000), {})) << "nothing missing: no request";
  EXPECT_EQ(decoded(*out.resend_request(out.header(1, 1000), {{"h1", 5, {3}}})).seq, 2u);
  const auto relay = out.relay(out.header(1, 1000), {RelayedReport{"h2", {"default"}, {{v4(5), 2}}}}, 0);
  ASSERT_EQ(relay.size(), 1u);
  EXPECT_EQ(relay[0].seq, 2u) << "a relay is in our report stream";
  EXPECT_EQ(out.kept().size(), 2u);
}

TEST(Outbox, SealedMessagesAreSealedOnceAndLeaveRoomForTheSignature) {
  int sealed = 0;
  Outbox out = outbox([&](std::string *m) {
    sealed++;
    m->append(kSignatureBytes, 's');
  });
  std::vector<ReportEntry> many;
  for (uint32_t i = 0; i < 20000; i++) many.push_back({v4(i), 1});
  const auto msgs = out.report(out.header(1, 1000), body_of(many), 0);
  ASSERT_GT(msgs.size(), 1u);
  EXPECT_EQ(sealed, static_cast<int>(msgs.size()));
  for (const auto &m : msgs) EXPECT_LE(m.bytes->size(), kMaxMessageBytes) << "a signed part must fit";
  out.serve_resend("h1", {{"h0", 77, {1}}}, 1);
  EXPECT_EQ(sealed, static_cast<int>(msgs.size())) << "a resent message is not signed again";
}

std::vector<std::string> peers_but(size_t self, size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; i++)
    if (i != self) out.push_back("h" + std::to_string(i));
  return out;
}

ReportPlanner planner(size_t self, size_t hosts) {
  PlannerOptions o;
  o.node_id = "h" + std::to_string(self);
  o.configured_peers = hosts - 1;
  o.router = RouterOptions{25 * kPeriod, 10 * kPeriod};
  o.cadence = CadenceOptions{kPeriod, 5 * kPeriod, kMaxBatchEntries};
  return ReportPlanner(o);
}

dt_key owned_by(size_t owner, size_t hosts) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < hosts; i++) ids.push_back("h" + std::to_string(i));
  for (uint32_t i = 0;; i++)
    if (source_owner(ids, v4(i)) == owner) return v4(i);
}

TEST(ReportPlanner, OwnersOnlyOnceEveryConfiguredPeerIsUp) {
  ReportPlanner p = planner(0, 6);
  EXPECT_FALSE(p.owner_ready(peers_but(0, 5))) << "a peer not heard yet: every source to every peer";
  EXPECT_TRUE(p.owner_ready(peers_but(0, 6)));
  EXPECT_EQ(p.router().members().size(), 6u);
  std::vector<std::string> stray = peers_but(0, 6);
  stray.push_back("intruder");
  EXPECT_FALSE(p.owner_ready(stray)) << "one node id more than peers configured could own sources nobody hears";
  PlannerOptions hubs;
  hubs.node_id = "h0", hubs.hubs = true, hubs.configured_peers = 5;
  EXPECT_FALSE(ReportPlanner(hubs).owner_ready(peers_but(0, 6))) << "no owners behind hubs";
}

TEST(ReportPlanner, APeriodsOwnedSourcesWaitInBatchesAnEarlyTicksGoAtOnce) {
  ReportPlanner p = planner(0, 6);
  ASSERT_TRUE(p.owner_ready(peers_but(0, 6)));
  const dt_key k = owned_by(3, 6);
  Routed r = p.route({{k, 1}}, true, true, kPeriod);
  EXPECT_TRUE(r.everyone.empty());
  EXPECT_TRUE(r.directed.empty()) << "a one-hit source waits in its owner's batch";
  EXPECT_EQ(p.cadence().waiting(), 1u);
  r = p.route({{owned_by(4, 6), 3}}, true, false, kPeriod + 50 * kMs);
  ASSERT_EQ(r.directed.size(), 1u) << "an early tick's new source goes to its owner now";
  EXPECT_EQ(r.directed[0].first, "h4");
  const PeriodPlan plan = p.plan(false, 2 * kPeriod);
  EXPECT_TRUE(plan.broadcast) << "the first period end says alive to everyone";
}

TEST(ReportPlanner, WithoutOwnersEverySourceAndEveryWaitingBatchGoesToEveryone) {
  ReportPlanner p = planner(0, 6);
  ASSERT_TRUE(p.owner_ready(peers_but(0, 6)));
  p.route({{owned_by(3, 6), 1}}, true, true, kPeriod);
  ASSERT_FALSE(p.owner_ready(peers_but(0, 5))) << "a peer went down";
  Routed r = p.route({{owned_by(2, 6), 1}}, false, true, 2 * kPeriod);
  EXPECT_FALSE(r.owners);
  EXPECT_EQ(r.everyone.size(), 2u) << "the batch waiting for h3 goes to everyone with this period's source";
  EXPECT_EQ(p.cadence().waiting(), 0u);
  EXPECT_TRUE(p.router().shared(owned_by(2, 6), 2 * kPeriod)) << "what everyone hears of is shared";
}

TEST(ReportPlanner, AnOwnerRelaysWhatASecondMemberReports) {
  ReportPlanner p = planner(0, 6);
  ASSERT_TRUE(p.owner_ready(peers_but(0, 6)));
  const dt_key k = owned_by(0, 6);
  EXPECT_TRUE(p.on_directed("h1", {{k, 2}}, kPeriod).relays.empty()) << "one member so far: nothing to relay";
  const RelayPlan r = p.on_directed("h2", {{k, 5}}, kPeriod + 10 * kMs);
  ASSERT_EQ(r.relays.size(), 2u) << "a second member: every hit held is relayed";
  uint64_t hits = 0;
  for (const RelayEntry &e : r.relays) hits += e.entry.hits;
  EXPECT_EQ(hits, 7u);
  EXPECT_EQ(r.ids[r.relays[0].from].substr(0, 1), "h");
  const RelayPlan stranger = p.on_directed("h9", {{k, 1}}, kPeriod);
  ASSERT_EQ(stranger.relays.size(), 1u) << "a sender outside our members: passed on at once";
  EXPECT_EQ(stranger.ids, std::vector<std::string>{"h9"});
}

TEST(Inbound, OneDispatchForEveryKindOfMessage) {
  Arrival fresh;
  fresh.verdict = Verdict::Accept;
  ReportHeader h;
  h.node_id = "h1";
  ReportBody report = body_of({{v4(1), 2}});
  InboundPlan p = plan_inbound(h, report, fresh, false);
  EXPECT_EQ(p.kind, InboundKind::Report);
  EXPECT_TRUE(p.join_heard) << "a report tells a joiner the sender's period";
  EXPECT_FALSE(plan_inbound(h, report, fresh, true).join_heard) << "no join guard behind hubs";
  Arrival gap = fresh;
  gap.gap = true, gap.stale = true;
  p = plan_inbound(h, report, gap, false);
  EXPECT_TRUE(p.ask_resends) << "a gap: ask at once";
  EXPECT_TRUE(p.stale);
  Arrival dup;
  dup.verdict = Verdict::Duplicate;
  EXPECT_EQ(plan_inbound(h, report, dup, false).kind, InboundKind::Dropped);
  ReportBody resend;
  resend.resend = {{"h0", 1, {1}}};
  p = plan_inbound(h, resend, gap, false);
  EXPECT_EQ(p.kind, InboundKind::ResendRequest);
  EXPECT_FALSE(p.ask_resends || p.join_heard) << "a request is not a report of the sender's stream";
  ReportBody relay;
  relay.relayed = {RelayedReport{"h2", {"default"}, {{v4(1), 1}}}};
  EXPECT_EQ(plan_inbound(h, relay, fresh, false).kind, InboundKind::Relay);
  ReportBody bans;
  bans.bans.resize(1);
  EXPECT_EQ(plan_inbound(h, bans, fresh, false).kind, InboundKind::Bans);
  h.to = "h0";
  EXPECT_EQ(plan_inbound(h, report, fresh, false).kind, InboundKind::Directed);
}

}  // namespace
