// test_capture.cpp - the packet path's sampler for `agent capture` (bpf/capture.bpf.h):
// nothing without a lease, the verdict mask, the rule and source filters (before the rate
// bound), the rate bound of each CPU, would-drop in dry run, a lapsed lease, and the tc hook.
// The control is written with the agent's own encoding (capture_ctl_for); the records are
// read from the ring as `agent capture` reads them (ring_buffer__consume).
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include <cstring>
#include <vector>

#include "bpf_fixture.h"
#include "capture/capture_control.h"
#include "common/clock.h"
#include "dthrottle/capture.h"
#include "frames/packet_builder.h"

namespace dt::test {
using namespace frames;
namespace {

constexpr double kNoRefill = 0.001;  // tokens per second: < 0.001 token per test

std::vector<uint8_t> v4(const std::string &src, size_t payload = 18) {
  return PacketBuilder().ipv4(src).udp(payload).build();
}

class CaptureSampler : public BpfFixture {
 protected:
  void SetUp() override {
    BpfFixture::SetUp();
    ctl_fd_ = map_fd(DT_MAP_CAPTURE_CTL);
    cpu_fd_ = map_fd(DT_MAP_CAPTURE_CPU);
    ring_ = ring_buffer__new(map_fd(DT_MAP_CAPTURE_RING), on_record, &records_, nullptr);
    ASSERT_NE(ring_, nullptr) << "ring_buffer__new on capture_ring: " << strerror(errno);
  }
  void TearDown() override {
    if (ring_) ring_buffer__free(ring_);
    BpfFixture::TearDown();
  }

  // Switches sampling on with `f` (a lease expiring `expires_in_ns` from now).
  void arm(const CaptureFilter &f, int64_t expires_in_ns = 10'000'000'000ll) {
    const dt_capture_ctl c = capture_ctl_for(f, 42, mono_now_ns() + expires_in_ns);
    uint32_t zero = 0;
    ASSERT_EQ(bpf_map_update_elem(ctl_fd_, &zero, &c, BPF_ANY), 0) << strerror(errno);
  }
  dt_capture_ctl ctl() {
    dt_capture_ctl c{};
    uint32_t zero = 0;
    EXPECT_EQ(bpf_map_lookup_elem(ctl_fd_, &zero, &c), 0) << strerror(errno);
    return c;
  }
  // The records written since the last call.
  std::vector<dt_capture_rec> drain() {
    records_.clear();
    ring_buffer__consume(ring_);
    return records_;
  }
  CaptureCounts counts() {
    CaptureCounts c;
    EXPECT_EQ(read_capture_counts(cpu_fd_, &c), 0);
    return c;
  }
  // `n` frames through dt_xdp, each expected to get `want`.
  void send(const std::vector<uint8_t> &frame, int n, int want) {
    for (int i = 0; i < n; i++) ASSERT_EQ(run(frame), want) << "frame " << i;
  }

  static int on_record(void *ctx, void *data, size_t size) {
    EXPECT_EQ(size, sizeof(dt_capture_rec));
    auto *out = static_cast<std::vector<dt_capture_rec> *>(ctx);
    dt_capture_rec r{};
    memcpy(&r, data, std::min(size, sizeof r));
    out->push_back(r);
    return 0;
  }

  int ctl_fd_ = -1, cpu_fd_ = -1;
  ring_buffer *ring_ = nullptr;
  std::vector<dt_capture_rec> records_;
};

TEST_F(CaptureSampler, NoLeaseEmitsNothing) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.1.1"), 1, XDP_PASS));
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.1.1"), 20, XDP_DROP));
  EXPECT_TRUE(drain().empty()) << "a record was written with no capture running";
  const CaptureCounts c = counts();
  EXPECT_EQ(c.captured + c.sampled_out + c.ring_full, 0u) << "the sampler counted with no capture running";
}

TEST_F(CaptureSampler, DroppedRecordHoldsTheFrameAndItsVerdict) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  CaptureFilter f;
  f.verdicts = DT_CAP_DROPPED;
  f.snaplen = 40;
  ASSERT_NO_FATAL_FAILURE(arm(f));
  const auto frame = v4("198.18.1.2", 100);
  ASSERT_NO_FATAL_FAILURE(send(frame, 1, XDP_PASS));
  EXPECT_TRUE(drain().empty()) << "a passed packet was sampled by a capture of drops only";
  ASSERT_NO_FATAL_FAILURE(send(frame, 3, XDP_DROP));
  const auto recs = drain();
  ASSERT_EQ(recs.size(), 3u);
  for (const dt_capture_rec &r : recs) {
    EXPECT_EQ(r.verdict, DT_CAP_DROPPED);
    EXPECT_EQ(r.rule, DT_RULE_DEFAULT);
    EXPECT_EQ(r.hook, DT_CAP_HOOK_XDP);
    EXPECT_EQ(r.len, frame.size());
    ASSERT_EQ(r.cap_len, 40u) << "snaplen 40 of a " << frame.size() << "-byte frame";
    EXPECT_EQ(memcmp(r.data, frame.data(), 40), 0) << "the record's bytes are not the frame's";
    EXPECT_GE(r.ts_ns, start_ns_);
  }
  EXPECT_EQ(counts().captured, 3u);
}

TEST_F(CaptureSampler, PassedOnlyWhenAsked) {
  ASSERT_NO_FATAL_FAILURE(set_policy(1e6, 1000));
  CaptureFilter f;
  f.verdicts = DT_CAP_PASSED;
  ASSERT_NO_FATAL_FAILURE(arm(f));
  const auto frame = v4("198.18.1.3");  // shorter than snaplen 128: all of it
  ASSERT_NO_FATAL_FAILURE(send(frame, 2, XDP_PASS));
  const auto recs = drain();
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].verdict, DT_CAP_PASSED);
  EXPECT_EQ(recs[0].cap_len, frame.size());
}

TEST_F(CaptureSampler, DryRunIsWouldDrop) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  dt_policy p = live_policy();
  p.flags |= DT_POL_DRY_RUN;
  ASSERT_NO_FATAL_FAILURE(publish_policy(p));
  CaptureFilter f;
  f.verdicts = DT_CAP_WOULD_DROP;
  ASSERT_NO_FATAL_FAILURE(arm(f));
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.1.4"), 4, XDP_PASS));  // 1 admitted, 3 would-drop
  const auto recs = drain();
  ASSERT_EQ(recs.size(), 3u) << "one admitted packet and three would-drops: only these are would-drop";
  for (const dt_capture_rec &r : recs) EXPECT_EQ(r.verdict, DT_CAP_WOULD_DROP);
}

TEST_F(CaptureSampler, RuleFilterHitAndMiss) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  CaptureFilter f;
  f.has_rule = true;
  f.rule = 7;  // no such rule decides anything here
  ASSERT_NO_FATAL_FAILURE(arm(f));
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.1.5"), 1, XDP_PASS));
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.1.5"), 5, XDP_DROP));
  EXPECT_TRUE(drain().empty()) << "drops of rule 0 were sampled by a capture of rule 7";
  f.rule = DT_RULE_DEFAULT;
  ASSERT_NO_FATAL_FAILURE(arm(f));
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.1.5"), 5, XDP_DROP));
  EXPECT_EQ(drain().size(), 5u);
}

// --source is applied before the rate bound: a flood from elsewhere that fills nothing
// (it is filtered out) cannot starve the source asked for.
TEST_F(CaptureSampler, SourceFilterBeforeTheRateBound) {
  PinnedToThisCpu pin;
  ASSERT_TRUE(pin.ok());
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  CaptureFilter f;
  f.has_source = true;
  std::string err;
  ASSERT_TRUE(parse_ban_prefix("198.18.5.0/24", &f.source, &err)) << err;
  f.per_cpu_rate = 2;
  ASSERT_NO_FATAL_FAILURE(arm(f));
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.6.1"), 1, XDP_PASS));
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.6.1"), 50, XDP_DROP));  // the flood, outside the prefix
  EXPECT_TRUE(drain().empty()) << "packets from outside --source were sampled";
  EXPECT_EQ(counts().sampled_out, 0u) << "packets the source filter refused were counted against the rate";
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.5.9"), 1, XDP_PASS));
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.5.9"), 1, XDP_DROP));
  const auto recs = drain();
  ASSERT_EQ(recs.size(), 1u) << "the rare source's drop was not sampled";
  EXPECT_EQ(memcmp(recs[0].data + 14 + 12, "\xc6\x12\x05\x09", 4), 0) << "the record is not 198.18.5.9's packet";
}

TEST_F(CaptureSampler, IPv6SourceFilter) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  CaptureFilter f;
  f.has_source = true;
  std::string err;
  ASSERT_TRUE(parse_ban_prefix("2001:2:0:7::/64", &f.source, &err)) << err;
  ASSERT_NO_FATAL_FAILURE(arm(f));
  const auto in = PacketBuilder().ipv6("2001:2:0:7::5").udp().build();
  const auto out = PacketBuilder().ipv6("2001:2:0:8::5").udp().build();
  ASSERT_NO_FATAL_FAILURE(send(in, 1, XDP_PASS));
  ASSERT_NO_FATAL_FAILURE(send(in, 2, XDP_DROP));
  ASSERT_NO_FATAL_FAILURE(send(out, 1, XDP_PASS));
  ASSERT_NO_FATAL_FAILURE(send(out, 2, XDP_DROP));
  EXPECT_EQ(drain().size(), 2u) << "only 2001:2:0:7::5's two drops are in 2001:2:0:7::/64";
}

// At most K records per second on one CPU: the rest counted as sampled out.
TEST_F(CaptureSampler, RateBoundOnOneCpu) {
  PinnedToThisCpu pin;
  ASSERT_TRUE(pin.ok());
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  CaptureFilter f;
  f.per_cpu_rate = 5;
  ASSERT_NO_FATAL_FAILURE(arm(f));
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.1.6"), 1, XDP_PASS));
  const uint64_t t0 = mono_now_ns();
  uint32_t verdict = 0;
  ASSERT_EQ(test_run_xdp(xdp_fd(), v4("198.18.1.6"), 200, &verdict), 0);
  const uint64_t windows = 1 + (mono_now_ns() - t0) / 1'000'000'000ull + 1;  // windows the run can touch
  const auto recs = drain();
  const CaptureCounts c = counts();
  EXPECT_GE(recs.size(), 5u);
  EXPECT_LE(recs.size(), 5 * windows) << "more than 5 records per one-second window";
  EXPECT_EQ(c.captured, recs.size());
  EXPECT_EQ(c.captured + c.sampled_out, 200u) << "every drop is either captured or sampled out";
}

// Each CPU has a bound of its own: two CPUs, K each.
TEST_F(CaptureSampler, RateBoundIsPerCpu) {
  const std::vector<int> cpus = allowed_cpus(2);
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU only";
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  CaptureFilter f;
  f.per_cpu_rate = 3;
  ASSERT_NO_FATAL_FAILURE(arm(f));
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.1.7"), 1, XDP_PASS));
  cpu_set_t saved;
  sched_getaffinity(0, sizeof saved, &saved);
  for (int cpu : cpus) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    uint32_t verdict = 0;
    ASSERT_EQ(test_run_xdp(xdp_fd(), v4("198.18.1.7"), 50, &verdict), 0);
  }
  sched_setaffinity(0, sizeof saved, &saved);
  const auto recs = drain();
  EXPECT_GE(recs.size(), 6u) << "each of two CPUs should take its own 3";
  std::vector<int> per_cpu(2, 0);
  for (const dt_capture_rec &r : recs) per_cpu[r.cpu == cpus[0] ? 0 : 1]++;
  EXPECT_GE(per_cpu[0], 3);
  EXPECT_GE(per_cpu[1], 3);
}

// A lease past its expiry: nothing sampled, and the lease cleared by the packet path.
TEST_F(CaptureSampler, LapsedLeaseStopsSampling) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  ASSERT_NO_FATAL_FAILURE(arm(CaptureFilter{}, -1'000'000));
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.1.8"), 1, XDP_PASS));
  ASSERT_NO_FATAL_FAILURE(send(v4("198.18.1.8"), 3, XDP_DROP));
  EXPECT_TRUE(drain().empty()) << "a lapsed lease still sampled";
  EXPECT_EQ(ctl().lease, 0u) << "the packet path left a lapsed lease on";
}

TEST_F(CaptureSampler, TcHookRecords) {
  ASSERT_NO_FATAL_FAILURE(set_policy(kNoRefill, 1));
  ASSERT_NO_FATAL_FAILURE(arm(CaptureFilter{}));
  const auto frame = v4("198.18.1.9");
  ASSERT_EQ(run_tc(frame), TC_ACT_UNSPEC);
  ASSERT_EQ(run_tc(frame), TC_ACT_SHOT);
  const auto recs = drain();
  ASSERT_EQ(recs.size(), 1u) << "the default capture takes drops only: the one tc drop";
  EXPECT_EQ(recs[0].hook, DT_CAP_HOOK_TC);
  EXPECT_EQ(recs[0].verdict, DT_CAP_DROPPED);
  EXPECT_EQ(recs[0].cap_len, frame.size());
  EXPECT_EQ(memcmp(recs[0].data, frame.data(), frame.size()), 0);
}

}  // namespace
}  // namespace dt::test
