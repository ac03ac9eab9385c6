// test_xdp_report.cpp - cluster mode in the kernel: the packet path announces each
// admitted source once per report period, and dt_collect (driven by the agent's
// Collector) returns exactly the packets admitted since the last report. (The cluster's
// own traffic, passed without a bucket: test_xdp_exempt.cpp.)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "bpf_fixture.h"
#include "common/address.h"
#include "dataplane/collector.h"
#include "frames/packet_builder.h"

namespace dt::test {
using namespace frames;  // PacketBuilder, the header lengths and TPIDs
namespace {

class XdpReport : public BpfFixture {
 protected:
  // Runs `n` packets of `frame` and checks each one's verdict.
  void send(const std::vector<uint8_t> &frame, int n, int verdict = XDP_PASS) {
    for (int i = 0; i < n; i++) ASSERT_EQ(run(frame), verdict) << "packet " << i;
  }
  static std::map<std::string, uint64_t> as_map(const std::vector<ReportEntry> &v) {
    std::map<std::string, uint64_t> m;
    for (const auto &e : v) m[key_to_string(e.key)] += e.hits;
    return m;
  }
  std::map<std::string, uint64_t> end_period(Collector &c) {
    int err = 0;
    auto v = c.end_period(&err);
    EXPECT_EQ(err, 0) << "Collector::end_period failed: " << strerror(-err);
    return as_map(v);
  }
  // A collector taking announcements (Collector::enable, as in cluster mode), or null
  // and a failure.
  std::unique_ptr<Collector> enabled_collector() {
    auto c = new_collector();
    const int rc = c->enable(false);
    EXPECT_EQ(rc, 0) << "Collector::enable: " << strerror(-rc);
    return rc == 0 ? std::move(c) : nullptr;
  }
  // Rule 0 = (rate/s, burst), then enabled_collector().
  std::unique_ptr<Collector> reporting(double rate, uint64_t burst) {
    set_policy(rate, burst);
    return HasFatalFailure() ? nullptr : enabled_collector();
  }
};

TEST_F(XdpReport, SingleHostModeAnnouncesNothing) {
  set_policy(1000, 100);
  auto c = new_collector();
  send(v4("198.18.1.1"), 5);
  EXPECT_TRUE(end_period(*c).empty()) << "without DT_CFG_REPORT the packet path must not announce sources";
  auto b = bucket("198.18.1.1");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->epoch, 0u);
}

TEST_F(XdpReport, CollectsExactlyWhatWasAdmittedOncePerPeriod) {
  auto c = reporting(0.001, 100);
  ASSERT_TRUE(c);
  send(v4("198.18.1.1"), 5);
  send(v6("2001:2::7"), 3);
  auto r1 = end_period(*c);
  EXPECT_EQ(r1, (std::map<std::string, uint64_t>{{"198.18.1.1", 5}, {"2001:2::", 3}}))
      << "reported per bucket: IPv6 sources by their /64";
  EXPECT_TRUE(end_period(*c).empty()) << "nothing admitted since: nothing to report";
  send(v4("198.18.1.1"), 2);
  EXPECT_EQ(end_period(*c), (std::map<std::string, uint64_t>{{"198.18.1.1", 2}}));
  auto b = bucket("198.18.1.1");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->reported, 7u);
  EXPECT_EQ(b->passed, 7u);
}

TEST_F(XdpReport, DroppedPacketsAreNotReported) {
  auto c = reporting(0.001, 4);
  ASSERT_TRUE(c);
  send(v4("198.18.2.1"), 4);
  send(v4("198.18.2.1"), 6, XDP_DROP);
  EXPECT_EQ(end_period(*c), (std::map<std::string, uint64_t>{{"198.18.2.1", 4}}))
      << "a report carries served hits only";
}

TEST_F(XdpReport, ManySourcesInOnePeriodAreAllCollected) {
  auto c = reporting(1000, 10);
  ASSERT_TRUE(c);
  // 1000 sources (the fixture's map never evicts below kMaxSources = 1024), 1 or 2 hits each.
  uint64_t want = 0;
  for (int i = 0; i < 1000; i++) {
    std::string src = "198.18." + std::to_string(10 + i / 250) + "." + std::to_string(1 + i % 250);
    send(v4(src), 1 + i % 2);
    want += 1 + i % 2;
  }
  auto r = end_period(*c);
  uint64_t got = 0;
  for (const auto &[k, v] : r) got += v;
  EXPECT_EQ(r.size(), 1000u);
  EXPECT_EQ(got, want);
  EXPECT_EQ(c->events(), 1000u) << "one announcement per source per period";
}

TEST_F(XdpReport, AnnouncementsWakeNobodyAndReachTheNextReport) {
  // No wakeup per record (BPF_RB_NO_WAKEUP below half a ring): the agent's poll on the
  // ring stays quiet, and end_period drains the ring on its own timer all the same.
  auto c = reporting(1000, 10);
  ASSERT_TRUE(c);
  for (int i = 0; i < 50; i++) send(v4("198.18.40." + std::to_string(i + 1)), 2);
  pollfd p{c->poll_fd(), POLLIN, 0};
  ASSERT_GE(p.fd, 0);
  EXPECT_EQ(poll(&p, 1, 20), 0) << "the ring woke its reader for a few records";
  const auto r = end_period(*c);
  EXPECT_EQ(r.size(), 50u) << "every announced source reaches the report";
  uint64_t hits = 0;
  for (const auto &[k, v] : r) hits += v;
  EXPECT_EQ(hits, 100u);
  EXPECT_EQ(c->events(), 50u);
  EXPECT_EQ(stats().report_overflow, 0u);
}

// Announcements gather per CPU (bpf/announce.h): a stage of DT_STAGE_KEYS goes to the
// ring as one record, a partial one is read by the agent at the period's end.
class XdpStage : public XdpReport {
 protected:
  // Pins the test to the CPU it runs on (pin_): its packets all run there, and stage()
  // is that CPU's. False (and a failure) if it could not be pinned.
  bool pin() {
    pin_.emplace();
    return pin_->ok();
  }
  // pin(), then reporting(1000, 10).
  std::unique_ptr<Collector> pinned_reporting() { return pin() ? reporting(1000, 10) : nullptr; }
  // The stage of the CPU the test is pinned to.
  dt_active_stage stage() {
    return per_cpu_values<dt_active_stage>(active_stage_fd(), 0).at(static_cast<size_t>(pin_->cpu()));
  }
  static std::string src(int i) { return "198.18.50." + std::to_string(i + 1); }

  std::optional<PinnedToThisCpu> pin_;
};

TEST_F(XdpStage, AFullStageGoesToTheRingAsOneRecord) {
  auto c = pinned_reporting();
  ASSERT_TRUE(c);
  for (uint32_t i = 0; i + 1 < DT_STAGE_KEYS; i++) send(v4(src(static_cast<int>(i))), 1);
  EXPECT_EQ(stage().count, DT_STAGE_KEYS - 1) << "announcements are held per CPU";
  EXPECT_EQ(stage().epoch, c->epoch());
  send(v4(src(DT_STAGE_KEYS - 1)), 1);
  EXPECT_EQ(stage().count, 0u) << "a full stage is written to the ring at once";
  send(v4(src(DT_STAGE_KEYS)), 2);  // one more, held
  EXPECT_EQ(stage().count, 1u);
  const auto r = end_period(*c);
  EXPECT_EQ(r.size(), DT_STAGE_KEYS + 1) << "the ring's record and the held key both reach the report";
  EXPECT_EQ(r.at(src(DT_STAGE_KEYS)), 2u);
  EXPECT_EQ(c->events(), DT_STAGE_KEYS + 1);
  EXPECT_EQ(stats().report_overflow, 0u);
}

// A stage of the period that ended is read at its end, and written to the ring before a
// key of the new period joins it: the keys reach the agent twice, the hits once.
TEST_F(XdpStage, AnOlderPeriodsStageIsWrittenOutAndCountedOnce) {
  auto c = pinned_reporting();
  ASSERT_TRUE(c);
  for (int i = 0; i < 3; i++) send(v4(src(i)), 2);
  EXPECT_EQ(end_period(*c), (std::map<std::string, uint64_t>{{src(0), 2}, {src(1), 2}, {src(2), 2}}))
      << "the held keys are read at the period's end";
  EXPECT_EQ(stage().count, 3u) << "reading leaves the stage as it is";
  send(v4(src(0)), 1);  // the new period's first announcement writes the old stage out
  const dt_active_stage s = stage();
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.epoch, c->epoch());
  EXPECT_EQ(end_period(*c), (std::map<std::string, uint64_t>{{src(0), 1}}))
      << "keys read twice are charged once: only the new hit";
  EXPECT_EQ(stats().report_overflow, 0u);
}

// A quiet CPU's stage of an older period is taken once, not at every period's end.
TEST_F(XdpStage, AQuietCpusStageIsTakenOnce) {
  auto c = pinned_reporting();
  ASSERT_TRUE(c);
  for (int i = 0; i < 3; i++) send(v4(src(i)), 1);
  EXPECT_EQ(end_period(*c).size(), 3u);
  EXPECT_EQ(c->events(), 3u);
  EXPECT_TRUE(end_period(*c).empty());
  EXPECT_TRUE(end_period(*c).empty());
  EXPECT_EQ(c->events(), 3u) << "the quiet stage was taken again";
  EXPECT_EQ(stage().count, 3u);
}

// An agent that stops after taking announcements from the ring but before collecting
// them leaves hits that nothing announces again: the next agent on the same maps
// finds them with one walk of the buckets (Collector::adopt_unreported).
TEST_F(XdpStage, ANewCollectorAdoptsWhatTheLastOneLeftUnreported) {
  ASSERT_TRUE(pin());
  set_policy(1000, 10);
  constexpr int kSources = DT_STAGE_KEYS + 8;  // one ring record, 8 keys left staged
  {
    auto a = enabled_collector();
    ASSERT_TRUE(a);
    for (int i = 0; i < kSources; i++) send(v4(src(i)), 1);
    a->drain();  // the record is taken from the ring, then the agent stops
    EXPECT_EQ(a->events(), DT_STAGE_KEYS);
  }
  {
    auto b = enabled_collector();
    ASSERT_TRUE(b);
    EXPECT_EQ(end_period(*b).size(), 8u) << "without adoption only the keys still staged are found";
  }
  auto c = enabled_collector();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->adopt_unreported(buckets_fd()), static_cast<long>(DT_STAGE_KEYS));
  const auto r = end_period(*c);
  EXPECT_EQ(r.size(), DT_STAGE_KEYS) << "the drained record's sources reach the report";
  for (const auto &[k, hits] : r) EXPECT_EQ(hits, 1u) << k;
  EXPECT_EQ(c->adopt_unreported(buckets_fd()), 0) << "nothing is left unreported";
}

// Cluster mode with every CPU announcing while periods end: each admitted packet is
// reported exactly once, whichever CPU announced its source and wherever a period's end
// found its key (in a stage, in the ring, or in both).
TEST_F(XdpStage, ReportsStayExactWithEveryCpuAnnouncingWhilePeriodsEnd) {
  const std::vector<int> cpus = allowed_cpus(4);
  ASSERT_GE(cpus.size(), 2u) << "needs at least 2 CPUs in the affinity mask";
  set_policy(1e6, 1000000);  // every packet passes
  auto c = enabled_collector();
  ASSERT_TRUE(c);
  constexpr int kSources = 601, kRounds = 40;  // a prime: every thread's stride visits each source once per round
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < kSources; i++)
    frames.push_back(v4("198.18." + std::to_string(70 + i / 250) + "." + std::to_string(1 + i % 250)));
  std::atomic<size_t> running{cpus.size()};
  std::vector<int> errors(cpus.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < cpus.size(); t++)
    threads.emplace_back([&, t] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[t], &one);
      errors[t] = sched_setaffinity(0, sizeof one, &one) == 0 ? 0 : errno;
      uint32_t verdict = 0;
      for (int r = 0; r < kRounds && !errors[t]; r++)
        for (int i = 0; i < kSources && !errors[t]; i++)  // each thread in its own order
          errors[t] = -test_run_xdp(xdp_fd(), frames[(i * (2 * t + 1) + r) % kSources], 1, &verdict);
      running--;
    });
  std::map<std::string, uint64_t> reported;
  int periods = 0;
  auto end_and_add = [&] {
    for (const auto &[k, v] : end_period(*c)) reported[k] += v;
    periods++;
  };
  while (running.load() > 0) end_and_add();
  for (auto &t : threads) t.join();
  end_and_add();
  end_and_add();
  for (size_t t = 0; t < cpus.size(); t++) ASSERT_EQ(errors[t], 0) << "CPU " << cpus[t] << ": " << strerror(errors[t]);
  const uint64_t sent = cpus.size() * kSources * kRounds;
  uint64_t total = 0;
  for (const auto &[k, v] : reported) total += v;
  EXPECT_EQ(stats().passed, sent);
  EXPECT_EQ(total, sent) << "reported over " << periods << " periods";
  EXPECT_EQ(reported.size(), static_cast<size_t>(kSources));
  for (const auto &[k, v] : reported) EXPECT_EQ(v, cpus.size() * kRounds) << k;
  EXPECT_EQ(stats().report_overflow, 0u);
  std::printf("  %zu CPUs, %llu packets of %d sources, %d periods ended meanwhile\n", cpus.size(),
              static_cast<unsigned long long>(sent), kSources, periods);
}

}  // namespace
}  // namespace dt::test
