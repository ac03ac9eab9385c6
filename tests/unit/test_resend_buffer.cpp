// test_resend_buffer.cpp - the messages an agent keeps for its peers' resend requests.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cluster_core/resend_buffer.h"
#include "report_fixtures.h"

namespace {

using dt::test::kMsNs;

TEST(ResendBuffer, KeepsRecentMessagesAndResendsEachOncePerGap) {
  dt::ResendBuffer buf(1000 * kMsNs, 1000);
  auto msg = [](char c) { return std::make_shared<const std::string>(100, c); };
  for (uint64_t seq = 1; seq <= 5; seq++) buf.keep(seq, msg(static_cast<char>('a' + seq)), seq * 200 * kMsNs);
  const dt::ResendRequest r{"me", 9, {2, 4, 7}};
  auto got = buf.take(r, 9, 1000 * kMsNs, 100 * kMsNs);
  ASSERT_EQ(got.size(), 2u) << "seq 7 was never sent";
  EXPECT_EQ((*got[0])[0], 'c');
  EXPECT_EQ((*got[1])[0], 'e');
  EXPECT_TRUE(buf.take(r, 9, 1050 * kMsNs, 100 * kMsNs).empty()) << "asked again within the gap: once";
  EXPECT_EQ(buf.take(r, 9, 1100 * kMsNs, 100 * kMsNs).size(), 2u) << "after the gap: again";
  EXPECT_TRUE(buf.take(r, 8, 1500 * kMsNs, 100 * kMsNs).empty()) << "another boot's seqs";
  EXPECT_EQ(buf.take(r, 9, 1500 * kMsNs, 100 * kMsNs).size(), 1u) << "seq 2 (sent at 400 ms) expired at 1.5 s";
  for (uint64_t seq = 6; seq <= 30; seq++) buf.keep(seq, msg('z'), 1500 * kMsNs);
  EXPECT_LE(buf.bytes(), 1000u) << "bounded in bytes";
  EXPECT_EQ(buf.size(), 10u);
  buf.keep(1, msg('n'), 1600 * kMsNs);
  EXPECT_EQ(buf.size(), 1u) << "a new sequence (restart of ours) drops the old one";
}

}  // namespace

namespace {

// One request could make an agent publish 64 messages of 60 KiB, every time it came: now
// one node gets at most kMaxResentPerPeer a period, all of them kMaxResentPerPeriod.
TEST(ResendBudget, BoundsWhatOneNodeAndAllCanHaveAPeriod) {
  dt::ResendBudget b;
  EXPECT_EQ(b.left("h2"), dt::kMaxResentPerPeer);
  b.spend("h2", b.left("h2"));
  EXPECT_EQ(b.left("h2"), 0u) << "the same node again this period";
  size_t others = 0;
  for (int i = 0; i < 100; i++) {
    const std::string p = "p" + std::to_string(i);
    others += b.left(p);
    b.spend(p, b.left(p));
  }
  EXPECT_EQ(others + dt::kMaxResentPerPeer, dt::kMaxResentPerPeriod) << "every node together";
  b.new_period();
  b.spend("h2", 3);
  EXPECT_EQ(b.left("h2"), dt::kMaxResentPerPeer - 3) << "a new period";
  EXPECT_LT(dt::kMaxResentPerPeer, dt::kMaxResendSeqs) << "less than one request may ask";
}

// A full request for messages that are all kept yields the cap's worth, the newest first
// (the likelier to be fresh where they arrive), in seq order; the rest are counted.
TEST(ResendBuffer, TakesAtMostTheCapTheNewest) {
  dt::ResendBuffer buf(1000 * kMsNs);
  dt::ResendRequest r{"me", 9, {}};
  for (uint64_t seq = 1; seq <= 64; seq++) {
    buf.keep(seq, std::make_shared<const std::string>(std::to_string(seq)), 100 * kMsNs);
    r.seqs.push_back(seq);
  }
  size_t over = 0;
  const auto got = buf.take(r, 9, 200 * kMsNs, 100 * kMsNs, 16, &over);
  ASSERT_EQ(got.size(), 16u);
  EXPECT_EQ(*got.front(), "49");
  EXPECT_EQ(*got.back(), "64");
  EXPECT_EQ(over, 48u);
  r.seqs.resize(48);  // the next period the peer asks for what it still misses
  EXPECT_EQ(*buf.take(r, 9, 400 * kMsNs, 100 * kMsNs, 16, &over).front(), "33") << "the next newest";
}

}  // namespace
