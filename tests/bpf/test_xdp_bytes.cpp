// test_xdp_bytes.cpp - byte budgets (DT_POL_BYTES) as the XDP and debit programs
// apply them: a frame costs its length (Ethernet header included), passes only if
// all of it is there, and a byte bucket's passed/dropped count bytes.
//
// Exact counts where refill is negligible: at 1 B/s a test's milliseconds refill
// well under one byte. Where time matters, only lower bounds on elapsed time.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "bpf_fixture.h"
#include "packet_builder.h"

namespace dt::test {
namespace {

constexpr double kSlowBytes = 1.0;  // 1 B/s: under one byte of refill per test

// An IPv4/UDP frame of exactly `len` bytes as XDP sees it (14 + 20 + 8 + payload).
std::vector<uint8_t> frame_of(const std::string &src, size_t len) {
  auto f = PacketBuilder().ipv4(src).udp(len - 42).build();
  EXPECT_EQ(f.size(), len);
  return f;
}

class XdpBytes : public BpfFixture {
 protected:
  // Sends `n` frames; returns how many passed.
  int send(const std::vector<uint8_t> &frame, int n) {
    int passed = 0;
    for (int i = 0; i < n; i++) passed += run(frame) == XDP_PASS;
    return passed;
  }
  // A rule's rule_bytes entry, its per-CPU values summed.
  dt_rule_bytes rule_bytes(uint32_t rule) { return summed_per_cpu<dt_rule_bytes>(rule_bytes_fd(), rule); }
};

TEST_F(XdpBytes, BurstOverFrameLengthFramesPassAtOnce) {
  int host = 0;
  for (uint64_t burst : {10000ull, 15500ull, 64000ull}) {
    const std::string src = "198.18.0." + std::to_string(++host);
    ASSERT_NO_FATAL_FAILURE(set_byte_policy(kSlowBytes, burst));
    const auto f = frame_of(src, 1000);
    const int want = static_cast<int>(burst / 1000);
    EXPECT_EQ(send(f, want + 5), want) << "burst " << burst << " B of 1000-byte frames";
    auto b = bucket(src);
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->passed, static_cast<uint64_t>(want) * 1000) << "passed counts bytes";
    EXPECT_EQ(b->dropped, 5000u) << "dropped counts bytes";
  }
  const dt_stats st = stats();
  EXPECT_EQ(st.passed, 10u + 15 + 64) << "global counters stay in packets: " << stats_to_string(st);
  EXPECT_EQ(st.dropped, 15u) << stats_to_string(st);
  const dt_rule_bytes rb = rule_bytes(DT_RULE_DEFAULT);
  EXPECT_EQ(rb.passed, (10u + 15 + 64) * 1000) << "rule_bytes: the rule's bytes passed, summed over CPUs";
  EXPECT_EQ(rb.dropped, 15u * 1000) << "rule_bytes: the rule's bytes dropped";
}

TEST_F(XdpBytes, PacketRulesLeaveRuleBytesAlone) {
  ASSERT_NO_FATAL_FAILURE(set_policy(1, 3));
  const auto f = frame_of("198.18.0.9", 1000);
  EXPECT_EQ(send(f, 10), 3);
  const dt_rule_bytes rb = rule_bytes(DT_RULE_DEFAULT);
  EXPECT_EQ(rb.passed + rb.dropped, 0u) << "a packet rule costs no rule_bytes lookup";
}

TEST_F(XdpBytes, LargerFrameDroppedSmallerPasses) {
  ASSERT_NO_FATAL_FAILURE(set_byte_policy(kSlowBytes, 2500));
  const std::string src = "198.18.0.7";
  EXPECT_EQ(run(frame_of(src, 1000)), XDP_PASS);
  EXPECT_EQ(run(frame_of(src, 1000)), XDP_PASS);
  EXPECT_EQ(run(frame_of(src, 1000)), XDP_DROP) << "1000 bytes do not fit in the 500 left";
  EXPECT_EQ(run(frame_of(src, 501)), XDP_DROP) << "501 bytes do not fit in the 500 left";
  EXPECT_EQ(run(frame_of(src, 400)), XDP_PASS) << "400 bytes fit in the 500 left";
  EXPECT_EQ(run(frame_of(src, 101)), XDP_DROP) << "101 bytes do not fit in the 100 left";
  EXPECT_EQ(run(frame_of(src, 100)), XDP_PASS) << "exactly the 100 left";
  EXPECT_EQ(run(frame_of(src, 60)), XDP_DROP) << "nothing left";
  auto b = bucket(src);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->passed, 2500u);
  EXPECT_EQ(b->dropped, 1000u + 501 + 101 + 60);
}

TEST_F(XdpBytes, RefillsBytesWithTime) {
  ASSERT_NO_FATAL_FAILURE(set_byte_policy(100000, 2000));  // 100 kB/s: 1000 bytes per 10 ms
  const std::string src = "198.18.0.9";
  const auto f = frame_of(src, 1000);
  EXPECT_EQ(send(f, 2), 2);
  EXPECT_EQ(run(f), XDP_DROP) << "the bucket is empty, and refilling 1000 bytes takes 10 ms";
  std::this_thread::sleep_for(std::chrono::milliseconds(11));
  EXPECT_EQ(run(f), XDP_PASS) << "after 11 ms, at least 1000 bytes are back";
  std::this_thread::sleep_for(std::chrono::milliseconds(25));
  EXPECT_EQ(send(f, 3), 2) << "after 25 ms more the bucket is full again (2000 B): two frames";
}

TEST_F(XdpBytes, DebitsAreBytes) {
  ASSERT_NO_FATAL_FAILURE(set_byte_policy(kSlowBytes, 10000));
  const std::string src = "198.18.0.11";
  const auto f = frame_of(src, 1000);
  ASSERT_EQ(run(f), XDP_PASS);  // the bucket exists: 9000 bytes left
  const DebitResult r = apply({make_debit(src, 1500)});
  EXPECT_EQ(r.hits_applied, 1500u);
  EXPECT_EQ(send(f, 10), 7) << "9000 - 1500 = 7500 bytes: seven 1000-byte frames";
  auto b = bucket(src);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->debited, 1500u);
  EXPECT_EQ(b->passed, 8000u);
}

}  // namespace
}  // namespace dt::test
