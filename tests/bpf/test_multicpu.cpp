// test_multicpu.cpp - one source hammered from several CPUs at once, with peer
// debits landing on the same bucket, and every packet and hit accounted for.
//
// Each hammer thread is pinned to its own CPU and runs the XDP program with
// BPF_PROG_TEST_RUN and a large repeat: the kernel runs all repeats on the calling
// thread's CPU (migration disabled), so the CPUs really race on the one bucket's
// compare-and-swap. A debit thread meanwhile runs the debit program through
// dt::apply_debits on the same source.
//
// With rate 0.001/s one token takes 1000 s, so over the run refill is < 0.001 token
// and the bucket's state is pure arithmetic: tat_ns = t0 + (passed + debited) *
// interval_ns exactly, where t0 (the first packet's time) lies within the run. That
// identity holds only if no compare-and-swap update was lost, whatever the
// interleaving; it is the heart of these tests.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bpf_fixture.h"
#include "common/address.h"
#include "common/clock.h"
#include "dthrottle/bucket.h"
#include "frames/packet_builder.h"

namespace dt::test {
using namespace frames;  // PacketBuilder, the header lengths and TPIDs
namespace {

const std::string kSource = "198.18.0.1";
constexpr double kNoRefill = 0.001;  // tokens per second
constexpr uint64_t kTotalPackets = 400000;
constexpr uint32_t kChunk = 10000;  // repeats per BPF_PROG_TEST_RUN call in chunked phases
constexpr int kDebitRounds = 500;
constexpr uint32_t kDebitHits = 7;
// A debit takes a few microseconds: paced, the 500 rounds span ~150+ ms of the run
// instead of its first millisecond.
constexpr std::chrono::microseconds kDebitPause{300};
constexpr size_t kMaxThreads = 16;  // bound the run on big machines

struct HammerPlan {
  uint64_t phase1 = 0;           // packets sent in chunks while debits may still run
  uint64_t total = 0;            // packets in all
  bool wait_for_debits = false;  // hold phase 2 until every debit is applied
};

struct HammerResult {
  int cpu = -1;
  int ran_on = -1;  // sched_getcpu() after pinning
  int error = 0;    // -errno of a failed syscall
  uint64_t sent = 0;
  uint32_t last_verdict = 0;
};

struct DebitTotals {
  uint64_t hits = 0, entries_failed = 0;
  int error = 0;
  uint64_t first_ns = 0, last_ns = 0;  // when the first and last debit returned
};

// Everything one multi-CPU run produced.
struct RunOutcome {
  std::vector<HammerResult> hammers;
  DebitTotals debits;
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t sent() const {
    uint64_t n = 0;
    for (const auto &h : hammers) n += h.sent;
    return n;
  }
};

class XdpMultiCpu : public BpfFixture {
 protected:
  void SetUp() override {
    BpfFixture::SetUp();
    if (HasFatalFailure()) return;
    cpus_ = allowed_cpus(kMaxThreads);
    if (cpus_.size() < 2)
      GTEST_FAIL() << "the concurrency tests need at least 2 CPUs in the affinity mask, have " << cpus_.size();
  }

  // Runs the plan on every CPU, and `debit_rounds` debits of `kDebitHits` meanwhile,
  // `debit_pause` apart (to spread them over the run).
  RunOutcome hammer(const HammerPlan &plan, int debit_rounds, std::chrono::microseconds debit_pause = kDebitPause) {
    const auto frame = PacketBuilder().ipv4(kSource).udp().build();
    const size_t n = cpus_.size();
    RunOutcome out;
    out.hammers.resize(n);
    std::atomic<bool> go{false}, debits_done{debit_rounds == 0};
    std::atomic<size_t> ready{0};

    auto hammer_thread = [&](size_t i) {
      HammerResult &r = out.hammers[i];
      r.cpu = cpus_[i];
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(r.cpu, &set);
      if (sched_setaffinity(0, sizeof set, &set) != 0) r.error = -errno;
      r.ran_on = sched_getcpu();
      ready++;
      while (!go.load()) std::this_thread::yield();
      if (r.error) return;
      auto send = [&](uint64_t count) {  // one BPF_PROG_TEST_RUN, `count` repeats
        if (count == 0 || r.error) return;
        r.error = test_run_xdp(xdp_fd(), frame, static_cast<uint32_t>(count), &r.last_verdict);
        if (r.error == 0) r.sent += count;
      };
      // Phase 1 in chunks, so that the debits interleave with it at many points.
      for (uint64_t left = plan.phase1; left > 0 && r.error == 0;) {
        const uint64_t c = std::min<uint64_t>(left, kChunk);
        send(c);
        left -= c;
      }
      if (plan.wait_for_debits)
        while (!debits_done.load()) std::this_thread::yield();
      send(plan.total - plan.phase1);
    };

    auto debit_thread = [&] {
      ready++;
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < debit_rounds; i++) {
        DebitResult d = apply_debits(debit_batch_fd(), debit_prog_fd(), {make_debit(kSource, kDebitHits)});
        out.debits.last_ns = mono_now_ns();
        if (i == 0) out.debits.first_ns = out.debits.last_ns;
        out.debits.hits += d.hits_applied;
        out.debits.entries_failed += d.entries_failed;
        if (d.error) {
          out.debits.error = d.error;
          break;
        }
        if (debit_pause.count()) std::this_thread::sleep_for(debit_pause);
      }
      debits_done = true;
    };

    std::vector<std::thread> threads;
    for (size_t i = 0; i < n; i++) threads.emplace_back(hammer_thread, i);
    threads.emplace_back(debit_thread);
    while (ready.load() < threads.size()) std::this_thread::yield();
    out.start_ns = mono_now_ns();
    go = true;
    for (auto &t : threads) t.join();
    out.end_ns = mono_now_ns();
    return out;
  }

  // Checks that hold for every run: the syscalls worked, each thread ran on its own
  // CPU and its packets are counted on that CPU, no packet and no hit is unaccounted.
  void check_accounting(const RunOutcome &o, uint64_t want_sent, uint64_t want_debit_hits) {
    for (const auto &h : o.hammers) {
      EXPECT_EQ(h.error, 0) << "pinning or BPF_PROG_TEST_RUN failed on CPU " << h.cpu << ": " << strerror(-h.error);
      EXPECT_EQ(h.ran_on, h.cpu) << "thread not running on the CPU it was pinned to";
    }
    EXPECT_EQ(o.sent(), want_sent) << "not every packet was sent";
    EXPECT_EQ(o.debits.error, 0) << "apply_debits: " << strerror(-o.debits.error);
    EXPECT_EQ(o.debits.entries_failed, 0u) << "debits still failing after the agent's retries";
    EXPECT_EQ(o.debits.hits, want_debit_hits) << "debit hits applied";

    const dt_stats s = stats();
    const auto b = bucket(kSource);
    ASSERT_TRUE(b) << "no bucket for " << kSource;
    EXPECT_EQ(s.passed + s.dropped, o.sent()) << "packets lost by the counters: " << stats_to_string(s);
    EXPECT_EQ(b->passed, s.passed) << "bucket and global passed disagree";
    EXPECT_EQ(b->dropped, s.dropped) << "bucket (as users read it: held drops added) and global dropped disagree";
    // The bucket as stored lacks at most what each CPU holds (< one flush's worth).
    dt_key k{};
    ASSERT_TRUE(key_from_string(kSource, &k));
    dt_bucket stored{};
    ASSERT_EQ(bpf_map_lookup_elem(buckets_fd(), &k, &stored), 0);
    EXPECT_LE(stored.dropped, b->dropped);
    EXPECT_LT(b->dropped - stored.dropped, o.hammers.size() * DT_DROP_FLUSH_PACKETS)
        << "a CPU holds more drops than one flush's worth";
    EXPECT_EQ(b->debited, o.debits.hits) << "bucket debited != hits applied";
    EXPECT_EQ(s.debit_hits, o.debits.hits) << stats_to_string(s);
    EXPECT_EQ(s.new_sources, 1u) << "one source, several buckets created: " << stats_to_string(s);
    EXPECT_EQ(s.fail_open + s.parse_errors + s.non_ip + s.nd_exempt, 0u) << stats_to_string(s);
    EXPECT_LE(s.contended, s.dropped) << stats_to_string(s);
    EXPECT_LE(tokens_milli(*b), static_cast<int64_t>(policy_burst_) * 1000) << "tokens above burst";

    // Per CPU: the thread pinned there is the only one that ran XDP there.
    const std::vector<dt_stats> per_cpu = per_cpu_values<dt_stats>(stats_fd(), 0);
    ASSERT_FALSE(per_cpu.empty());
    for (const auto &h : o.hammers)
      EXPECT_EQ(per_cpu[h.cpu].passed + per_cpu[h.cpu].dropped, h.sent)
          << "packets counted on CPU " << h.cpu << " != packets its thread sent";

    std::printf(
        "  %zu CPUs, %llu packets in %.1f ms: passed %llu, dropped %llu (contended %llu; "
        "%llu in the stored bucket, the rest held per CPU), debited %llu",
        o.hammers.size(), static_cast<unsigned long long>(o.sent()), static_cast<double>(o.end_ns - o.start_ns) / 1e6,
        static_cast<unsigned long long>(s.passed), static_cast<unsigned long long>(s.dropped),
        static_cast<unsigned long long>(s.contended), static_cast<unsigned long long>(stored.dropped),
        static_cast<unsigned long long>(b->debited));
    if (o.debits.first_ns)
      std::printf(" (debits from +%.1f to +%.1f ms)", static_cast<double>(o.debits.first_ns - o.start_ns) / 1e6,
                  static_cast<double>(o.debits.last_ns - o.start_ns) / 1e6);
    std::printf("\n");
  }

  // The no-lost-update identity at negligible refill: tat = t0 + (passed + debited) * I
  // with start <= t0 <= end (the bucket was created by the run).
  void check_tat_identity(const RunOutcome &o) {
    const dt_policy p = live_policy();
    const auto b = bucket(kSource);
    ASSERT_TRUE(b);
    ASSERT_GE(b->tat_ns, o.start_ns);
    ASSERT_GT(p.interval_ns, o.end_ns - o.start_ns) << "test needs refill below one token";
    EXPECT_EQ((b->tat_ns - o.start_ns) / p.interval_ns, b->passed + b->debited)
        << "tat moved by a different number of tokens than were admitted + debited: "
           "a compare-and-swap update was lost";
    EXPECT_LE((b->tat_ns - o.start_ns) % p.interval_ns, o.end_ns - o.start_ns)
        << "tat is off the token grid by more than the run's duration";
  }

  void policy(double rate, uint64_t burst) {
    set_policy(rate, burst);
    policy_burst_ = burst;
  }

  // Rule 0 of `burst` tokens and no refill; every CPU sends its share of kTotalPackets
  // (`phase1` of them while the kDebitRounds debits land, 0: all) and the accounting
  // and tat identity are checked. Fails (fatally) the test on a broken run.
  RunOutcome hammer_no_refill(uint64_t burst, uint64_t phase1 = 0, bool wait_for_debits = false) {
    RunOutcome o;
    policy(kNoRefill, burst);
    if (HasFatalFailure()) return o;
    const uint64_t each = kTotalPackets / cpus_.size();
    o = hammer({phase1 ? phase1 : each, each, wait_for_debits}, kDebitRounds);
    check_accounting(o, each * cpus_.size(), kDebitRounds * kDebitHits);
    if (HasFatalFailure()) return o;
    check_tat_identity(o);
    return o;
  }

  std::vector<int> cpus_;
  uint64_t policy_burst_ = 0;
};

TEST_F(XdpMultiCpu, BurstNeverRunsOut) {
  constexpr uint64_t kBurst = 1000000;
  const RunOutcome o = hammer_no_refill(kBurst);
  ASSERT_FALSE(HasFatalFailure());

  const dt_stats s = stats();
  // Tokens never ran short, so the only possible drops are lost CAS races.
  EXPECT_EQ(s.dropped, s.contended) << "dropped with tokens left: " << stats_to_string(s);
  const auto b = bucket(kSource);
  ASSERT_TRUE(b);
  EXPECT_LE(b->passed + b->debited, kBurst);
  expect_tokens(*b, static_cast<int64_t>(kBurst - b->passed - b->debited), "hammered bucket");
}

TEST_F(XdpMultiCpu, RunsOutExactlyAtBurstAfterConcurrentDebits) {
  // Phase 1 (chunked, concurrent with the debits) cannot drain the bucket: it sends
  // at most 90% of what burst - debits leaves. Phase 2 starts once every debit is in
  // and drains it from all CPUs at once. So the last admission comes after the last
  // debit, and exactly burst tokens were spent: passed + debited == burst.
  constexpr uint64_t kBurst = 100000;
  const uint64_t debit_total = kDebitRounds * kDebitHits;
  const uint64_t phase1 = (kBurst - debit_total) * 9 / 10 / cpus_.size();
  const RunOutcome o = hammer_no_refill(kBurst, phase1, true);
  ASSERT_FALSE(HasFatalFailure());

  const dt_stats s = stats();
  const auto b = bucket(kSource);
  ASSERT_TRUE(b);
  const double refill = kNoRefill * static_cast<double>(o.end_ns - o.start_ns) / 1e9;
  EXPECT_GT(s.dropped, s.contended) << "the bucket never ran out: " << stats_to_string(s);
  EXPECT_EQ(b->passed + b->debited, kBurst) << "passed " << b->passed << " + debited " << b->debited;
  EXPECT_LE(b->passed + b->debited, kBurst + static_cast<uint64_t>(std::ceil(refill)));
  EXPECT_GE(b->passed + b->debited, kBurst);
  for (const auto &h : o.hammers)
    EXPECT_EQ(h.last_verdict, static_cast<uint32_t>(XDP_DROP)) << "CPU " << h.cpu << "'s last packet";
}

TEST_F(XdpMultiCpu, RunsOutWhileDebitsLand) {
  // Everything concurrent: debits may land before or after the bucket runs dry, so
  // passed + debited may exceed burst (a debit takes the balance below zero), but
  // never did more than burst pass, and the bucket state accounts for every token.
  constexpr uint64_t kBurst = 100000;
  // Paced, the debits typically straddle the moment the bucket runs dry.
  const RunOutcome o = hammer_no_refill(kBurst);
  ASSERT_FALSE(HasFatalFailure());

  const auto b = bucket(kSource);
  ASSERT_TRUE(b);
  EXPECT_LE(b->passed, kBurst) << "more than burst admitted";
  EXPECT_GE(b->passed + b->debited, kBurst) << "the bucket drained before burst tokens were spent";
  EXPECT_EQ(run(PacketBuilder().ipv4(kSource).udp().build()), XDP_DROP);
}

TEST_F(XdpMultiCpu, RefillNeverAdmitsMoreThanTheRateAllows) {
  // A real refill rate: from a full bucket, at most burst + rate * elapsed tokens can
  // have been taken, elapsed measured around the whole run (an upper bound from the
  // arithmetic, not a performance figure). And since a token was denied only when
  // the bucket had less than one, at least burst passed (less lost CAS races).
  constexpr double kRate = 50000;
  constexpr uint64_t kBurst = 1000;
  ASSERT_NO_FATAL_FAILURE(policy(kRate, kBurst));
  const uint64_t each = kTotalPackets / cpus_.size();
  const RunOutcome o = hammer({each, each, false}, 0);
  ASSERT_NO_FATAL_FAILURE(check_accounting(o, each * cpus_.size(), 0));

  const dt_stats s = stats();
  const double elapsed_s = static_cast<double>(o.end_ns - o.start_ns) / 1e9;
  EXPECT_LE(static_cast<double>(s.passed), static_cast<double>(kBurst) + kRate * elapsed_s + 1)
      << "admitted more than burst + rate * elapsed (" << elapsed_s << " s)";
  EXPECT_GE(s.passed + s.contended, kBurst) << stats_to_string(s);
}

}  // namespace
}  // namespace dt::test
