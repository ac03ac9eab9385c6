// test_xdp_owner.cpp - one owner of the frames (struct dt_config.owner): while a new agent
// takes over in libxdp's dispatcher, its program and the old one both see each frame, and
// only the one config.owner names may count it. The object here is loaded as instance
// kInstance; another instance in config.owner stands for the other agent's program.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include <string>

#include "bpf_fixture.h"
#include "dataplane/policy.h"
#include "frames/packet_builder.h"

namespace dt::test {
using namespace frames;
namespace {

constexpr double kNoRefill = 0.001;  // tokens per second: < 0.001 token per test
constexpr uint32_t kOtherInstance = BpfFixture::kInstance + 1;

class XdpOwner : public BpfFixture {
 protected:
  void own(uint32_t owner) { ASSERT_EQ(set_config_owner(config_fd(), owner), 0) << "set_config_owner " << owner; }
};

TEST_F(XdpOwner, NoOwnerEveryProgramCounts) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  ASSERT_EQ(live_config().owner, 0u) << "a fresh config names no owner";
  const auto frame = v4("198.18.0.31");
  EXPECT_EQ(run(frame), XDP_PASS) << "the burst of 1";
  EXPECT_EQ(run(frame), XDP_DROP) << "over the burst, with no owner named";
}

TEST_F(XdpOwner, TheOwnerCounts) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  ASSERT_NO_FATAL_FAILURE(own(kInstance));
  const auto frame = v4("198.18.0.32");
  EXPECT_EQ(run(frame), XDP_PASS) << "the burst of 1";
  EXPECT_EQ(run(frame), XDP_DROP) << "over the burst, this program the owner";
  auto b = bucket("198.18.0.32");
  ASSERT_TRUE(b) << "the owner made no bucket";
  EXPECT_EQ(b->passed, 1u);
}

TEST_F(XdpOwner, NotTheOwnerPassesUncounted) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  ASSERT_NO_FATAL_FAILURE(own(kOtherInstance));
  const std::string before = stats_to_string(stats());
  const auto frame = v4("198.18.0.33");
  for (int i = 0; i < 3; i++) EXPECT_EQ(run(frame), XDP_PASS) << "frame " << i + 1 << " at XDP, not the owner";
  for (int i = 0; i < 3; i++) EXPECT_EQ(run_tc(frame), TC_ACT_UNSPEC) << "frame " << i + 1 << " at tc, not the owner";
  EXPECT_FALSE(bucket("198.18.0.33")) << "a program that is not the owner made a bucket";
  EXPECT_EQ(stats_to_string(stats()), before) << "a program that is not the owner counted";
}

// The take-over's order: the new program owns the frames from the write on, so the budget
// a source had under the old owner is the one it spends under the new.
TEST_F(XdpOwner, OwnershipMovesAtTheWrite) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 2));
  const auto frame = v4("198.18.0.34");
  ASSERT_NO_FATAL_FAILURE(own(kOtherInstance));
  EXPECT_EQ(run(frame), XDP_PASS) << "the other program's frame";
  EXPECT_FALSE(bucket("198.18.0.34")) << "counted before the write";
  ASSERT_NO_FATAL_FAILURE(own(kInstance));
  EXPECT_EQ(run(frame), XDP_PASS) << "1 of the burst of 2";
  EXPECT_EQ(run(frame), XDP_PASS) << "2 of the burst of 2";
  EXPECT_EQ(run(frame), XDP_DROP) << "over the burst once this program owns the frames";
}

}  // namespace
}  // namespace dt::test
