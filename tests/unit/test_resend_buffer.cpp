// test_resend_buffer.cpp - the messages an agent keeps for its peers' resend requests.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cluster/resend_buffer.h"
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
