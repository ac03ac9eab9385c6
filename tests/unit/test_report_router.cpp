// test_report_router.cpp - the owner reporting scheme's routing (cluster_core/report_router.h)
// and rendezvous ownership (cluster_core/source_owner.h): who hears of which source, and the
// bound: every hit an owner holds is relayed, to everyone, once a second host reports it.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "cluster_core/report_router.h"
#include "cluster_core/source_owner.h"
#include "report_fixtures.h"

namespace {

using dt::ReportEntry;
using dt::ReportRouter;
using dt::RouterOptions;

constexpr uint64_t kMs = 1'000'000;

using dt::test::v4;  // source number i as a key (report_fixtures.h)

std::vector<std::string> ids(size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; i++) out.push_back("h" + std::to_string(i));
  return out;
}

ReportRouter router(size_t members, size_t self) {
  ReportRouter r(RouterOptions{5000 * kMs, 2000 * kMs});
  r.set_members(ids(members), self);
  return r;
}

// A source owned by `owner` among `members` hosts (searching the address space).
dt_key owned_by(size_t owner, size_t members) {
  for (uint32_t i = 0;; i++)
    if (dt::source_owner(ids(members), v4(i)) == owner) return v4(i);
}

TEST(SourceOwner, SameOwnerEverywhereSpreadEvenlyAndStableWhenAMemberLeaves) {
  std::map<size_t, int> per_owner;
  int moved = 0;
  auto all = ids(40), fewer = ids(40);
  fewer.erase(fewer.begin() + 7);  // h7 leaves
  for (uint32_t i = 0; i < 40000; i++) {
    const size_t o = dt::source_owner(all, v4(i));
    per_owner[o]++;
    const std::string &after = fewer[dt::source_owner(fewer, v4(i))];
    if (o != 7 && after != all[o]) moved++;
  }
  ASSERT_EQ(per_owner.size(), 40u) << "every member must own some sources";
  for (const auto &[o, n] : per_owner) EXPECT_NEAR(n, 1000, 200) << "member " << o << " owns an uneven share";
  EXPECT_EQ(moved, 0) << "a member leaving must move only the sources it owned (rendezvous hashing)";
  EXPECT_EQ(dt::source_owner(all, v4(5, 0)), dt::source_owner(all, v4(5, 3)))
      << "one owner per address, whatever the rule (peers number rules differently)";
}

TEST(ReportRouter, UnsharedSourcesGoToTheirOwnerOnlySharedOnesToEveryone) {
  auto r = router(5, 0);
  const dt_key mine = owned_by(0, 5), theirs = owned_by(2, 5), shared = owned_by(3, 5);
  r.heard(shared, 0);
  const auto routed = r.route({{mine, 3}, {theirs, 4}, {shared, 5}}, 100 * kMs);
  ASSERT_EQ(routed.everyone.size(), 1u) << "only the shared source goes to every peer";
  EXPECT_EQ(routed.everyone[0].hits, 5u);
  ASSERT_EQ(routed.to_owner.size(), 1u) << "the source owned by h2 goes to h2 alone";
  EXPECT_EQ(routed.to_owner.begin()->first, 2u);
  EXPECT_EQ(routed.to_owner.begin()->second[0].hits, 4u);
  EXPECT_TRUE(routed.relays.empty()) << "our own unshared source waits here until a second host serves it";
  EXPECT_EQ(r.pending_count(), 1u);
}

// The bound: nothing an owner holds is lost once a second host serves the source: every
// hit is relayed, each naming the host that admitted it.
TEST(ReportRouter, SecondHostRelaysEveryHitHeldWithItsHost) {
  auto owner = router(3, 0);
  const dt_key k = owned_by(0, 3);
  EXPECT_TRUE(owner.contribute(k, 1, 7, 10 * kMs).empty()) << "one host so far: nothing to relay";
  EXPECT_TRUE(owner.contribute(k, 1, 2, 210 * kMs).empty()) << "the same host again: still unshared";
  const auto relays = owner.contribute(k, 2, 5, 300 * kMs);
  std::multiset<std::pair<uint32_t, uint64_t>> got;
  for (const auto &x : relays) got.insert({x.from, x.entry.hits});
  EXPECT_EQ(got, (std::multiset<std::pair<uint32_t, uint64_t>>{{1, 7}, {1, 2}, {2, 5}}))
      << "all 14 hits held, each with the host that admitted it";
  EXPECT_TRUE(owner.shared(k, 300 * kMs));
  const auto later = owner.contribute(k, 1, 4, 400 * kMs);
  ASSERT_EQ(later.size(), 1u) << "a shared source's hits are relayed at once";
  EXPECT_EQ(later[0].entry.hits, 4u);
  EXPECT_EQ(owner.pending_count(), 0u);
}

TEST(ReportRouter, OwnersOwnHitsCountAsASecondHost) {
  auto owner = router(5, 0);
  const dt_key k = owned_by(0, 5);
  EXPECT_TRUE(owner.contribute(k, 2, 6, 10 * kMs).empty());
  const auto routed = owner.route({{k, 3}}, 200 * kMs);
  EXPECT_EQ(routed.relays.size(), 2u) << "h2's 6 hits and our 3: relayed together";
  EXPECT_TRUE(routed.everyone.empty()) << "our own hits go out as a relay entry, not twice";
  EXPECT_FALSE(owner.route({{k, 1}}, 400 * kMs).everyone.empty()) << "shared now: to everyone";
}

TEST(ReportRouter, HitsOlderThanTheReportMaxAgeAreNotRelayed) {
  auto owner = router(3, 0);
  const dt_key k = owned_by(0, 3);
  owner.contribute(k, 1, 9, 0);
  const auto relays = owner.contribute(k, 2, 1, 2500 * kMs);  // 2.5 s later: past 2 s
  ASSERT_EQ(relays.size(), 0u) << "h1's hits are stale (no receiver would charge them): only one host left";
  const auto second = owner.contribute(k, 1, 2, 2600 * kMs);
  EXPECT_EQ(second.size(), 2u) << "h2's 1 and h1's 2 hits";
}

TEST(ReportRouter, SharedStateExpiresAndMemoryIsSwept) {
  auto r = router(5, 0);
  const dt_key k = owned_by(1, 5);
  r.heard(k, 0);
  EXPECT_TRUE(r.shared(k, 4999 * kMs));
  EXPECT_FALSE(r.shared(k, 5000 * kMs)) << "25 periods without news: not shared any more";
  EXPECT_EQ(r.route({{k, 1}}, 6000 * kMs).to_owner.size(), 1u) << "back to its owner";
  EXPECT_EQ(r.shared_count(), 0u) << "the sweep forgot the expired source";
}

TEST(ReportRouter, SmallClustersStayAMesh) {
  for (size_t members = 1; members < dt::kOwnerMinMembers; members++) {
    auto r = router(members, 0);
    const auto routed = r.route({{owned_by(members - 1, members), 3}, {owned_by(0, members), 2}}, 0);
    EXPECT_EQ(routed.everyone.size(), 2u) << members << " members: every source to every peer";
    EXPECT_TRUE(routed.to_owner.empty() && routed.relays.empty()) << members << " members";
  }
}

}  // namespace
