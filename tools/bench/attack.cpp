// attack.cpp - Part 4 (`bench attack`), under attack: rows of two measurements side by side
// with a target ratio (AttackRow; add a row to the list in under_attack_part()): the drop path
// of one flooding source on every CPU at once vs on one CPU, the one-CPU drop path vs a
// read-only program (lookup + per-CPU counter; precise and coarse clock) with, beside it, the
// least a drop without a clock read and with a per-source count does, and cluster mode over
// 1,000,000 sources, each announced in the period while a thread drains the ring as the agent
// does, vs the LRU baseline; beside it, on the same sources, what bounds that row from below:
// cluster mode vs the same program in single-host mode (what announcing costs), and the
// precise clock's baseline (an admission into a full bucket reads the clock) vs the LRU one.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench/cpus.h"
#include "bench/measure.h"
#include "bench/parts.h"
#include "bench/programs.h"
#include "dataplane/collector.h"

namespace dt::bench {

namespace {

// Each row measures a path of ours ("measured") and a reference side by side, in
// interleaved rounds (AB BA ...), and prints the medians, their ratio and the
// target ratio. To add a row, append one to the list in under_attack_part().

struct AttackRow {
  std::string what;            // what the row compares
  std::string a_name, b_name;  // the measured path and the reference
  double target;               // a / b at most (0: none, the row explains another)
  int rounds;
  std::function<double()> a, b;       // one measurement each: ns per packet
  std::function<std::string()> note;  // optional: printed under the row
};

void run_attack_row(const AttackRow &row) {
  std::vector<double> a, b;
  for (int r = 0; r < row.rounds; r++) {
    if (r % 2 == 0) a.push_back(row.a()), b.push_back(row.b());
    else b.push_back(row.b()), a.push_back(row.a());
  }
  const double ma = median(a), mb = median(b), ratio = ma / mb;
  char target[32] = "-";
  if (row.target > 0) snprintf(target, sizeof target, "<= %.2fx %s", row.target, ratio <= row.target ? "ok" : "OVER");
  printf("  %-56s | %-22s %8.1f | %-22s %8.1f | %5.2fx | %s\n", row.what.c_str(), row.a_name.c_str(), ma,
         row.b_name.c_str(), mb, ratio, target);
  auto [alo, ahi] = std::minmax_element(a.begin(), a.end());
  auto [blo, bhi] = std::minmax_element(b.begin(), b.end());
  printf("  %-56s   spread %.1f-%.1f and %.1f-%.1f ns%s%s\n", "", *alo, *ahi, *blo, *bhi, row.note ? "; " : "",
         row.note ? row.note().c_str() : "");
}

// dt_xdp's drop path for one source (rate 1e-6/s, burst 1: the first packet takes
// the only token, every later one is dropped), checked by its counters.
class DropPath {
 public:
  explicit DropPath(bool coarse_clock = false)
      : t_(1024, policy_or_die(DT_RATE_MIN, 1), coarse_clock), frame_(make_frame(false)) {
    if (run_on_cpus(t_.fd.xdp, frame_, {allowed_cpus()[0]}, 1, XDP_PASS) < 0) die("prefill");
  }
  double run(const std::vector<int> &cpus, uint32_t repeat) {
    const dt_stats before = t_.stats();
    const double ns = run_on_cpus(t_.fd.xdp, frame_, cpus, repeat, XDP_DROP);
    const dt_stats after = t_.stats();
    if (after.dropped - before.dropped != static_cast<uint64_t>(repeat) * cpus.size())
      die("drop path: %llu of %zu frames dropped", static_cast<unsigned long long>(after.dropped - before.dropped),
          static_cast<size_t>(repeat) * cpus.size());
    return ns;
  }

 private:
  Throttle t_;
  std::vector<uint8_t> frame_;
};

// Cluster mode (DT_CFG_REPORT) over n sources, each admitted once per period, so
// every packet announces its source; a thread drains the ring as the agent's event
// loop does (poll on the ring's fd, drain when readable). After each run the period
// ends (Collector::end_period, not timed) and every source must be reported.
class ClusterPath {
 public:
  ClusterPath(Rotator &rot, uint32_t n)
      : rot_(rot),
        n_(n),
        t_(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX)),
        collector_(t_.fd.config, t_.fd.ring, t_.fd.stage, t_.fd.collect_batch, t_.fd.collect),
        frame_(make_frame(true)) {
    if (int rc = collector_.enable(false); rc != 0) die("Collector::enable: %s", strerror(-rc));
    run();  // creates every bucket: the timed runs see known sources, as in steady state
  }
  double run() {
    rot_.set_sources(true, 1, n_);
    std::atomic<bool> stop{false};
    uint64_t wakeups = 0;
    std::thread drainer([&] {
      pollfd p{collector_.poll_fd(), POLLIN, 0};
      while (!stop.load())
        if (poll(&p, 1, 10) > 0) {
          wakeups++;
          collector_.drain();
        }
    });
    const dt_stats before = t_.stats();
    uint32_t retval = 0;
    const double ns = rot_.run(t_.fd.xdp, frame_, n_, &retval);
    stop = true;
    drainer.join();
    const dt_stats after = t_.stats();
    if (retval != XDP_PASS || after.passed - before.passed != n_)
      die("cluster mode: %llu of %u frames admitted", static_cast<unsigned long long>(after.passed - before.passed),
          n_);
    int err = 0;
    const size_t reported = collector_.end_period(&err).size();
    const uint64_t lost = after.report_overflow - before.report_overflow;
    if (err != 0) die("Collector::end_period: %s", strerror(-err));
    if (reported + lost < n_)
      die("cluster mode: %zu of %u sources reported (%llu lost to a full ring)", reported, n_,
          static_cast<unsigned long long>(lost));
    last_wakeups_ = wakeups;
    last_lost_ = lost;
    return ns;
  }
  std::string note() const {
    char buf[128];
    snprintf(buf, sizeof buf, "last run: the draining thread woke %llu times for %u announcements, %llu lost",
             static_cast<unsigned long long>(last_wakeups_), n_, static_cast<unsigned long long>(last_lost_));
    return buf;
  }

 private:
  Rotator &rot_;
  uint32_t n_;
  Throttle t_;
  dt::Collector collector_;
  std::vector<uint8_t> frame_;
  uint64_t last_wakeups_ = 0, last_lost_ = 0;
};

}  // namespace

void under_attack_part() {
  const std::vector<int> cpus = allowed_cpus();
  const std::vector<int> one = {cpus[0]};
  constexpr uint32_t kDropRepeat = 2'000'000;
  constexpr uint32_t kClusterSources = 1'000'000;
  printf(
      "\nPart 4: under attack: ns per packet, side by side (BPF_PROG_TEST_RUN, thread CPU time;\n"
      "  median of interleaved rounds; a row of several CPUs: the median of its threads, one\n"
      "  pinned per CPU, SCHED_FIFO, all running at once)\n\n");
  printf("  %-56s | %-31s | %-31s | %6s | %s\n", "row", "measured (ns)", "reference (ns)", "ratio", "target");

  Rotator rot;
  std::vector<AttackRow> rows;
  {  // the drop rows' programs, freed before the cluster row's million buckets are built
    DropPath drop, coarse(true);
    std::vector<uint8_t> v4 = make_frame(false);
    if (run_on_cpus(rot.fd.readonly, v4, one, 1, XDP_PASS) < 0) die("prefill");  // creates its bucket
    const auto readonly = [&] { return run_on_cpus(rot.fd.readonly, v4, one, kDropRepeat, XDP_DROP); };
    char all_name[32];
    snprintf(all_name, sizeof all_name, "drop, %zu CPUs at once", cpus.size());
    rows.push_back({"drop path, one source: every CPU vs one CPU", all_name, "drop, 1 CPU", 1.05, kRounds,
                    [&] { return drop.run(cpus, kDropRepeat); }, [&] { return drop.run(one, kDropRepeat); }, nullptr});
    rows.push_back({"drop path, one source, one CPU vs read-only program", "drop, 1 CPU", "lookup + per-CPU count", 1.2,
                    kRounds, [&] { return drop.run(one, kDropRepeat); }, readonly, nullptr});
    rows.push_back(
        {"  its floor: a counted drop vs the read-only program", "counted drop, 1 CPU", "lookup + per-CPU count", 0,
         kRounds, [&] { return run_on_cpus(rot.fd.counted_drop, v4, one, kDropRepeat, XDP_DROP); }, readonly, nullptr});
    rows.push_back({"the same, --clock coarse", "drop coarse, 1 CPU", "lookup + per-CPU count", 1.2, kRounds,
                    [&] { return coarse.run(one, kDropRepeat); }, readonly, nullptr});
    for (const AttackRow &r : rows) run_attack_row(r);
    rows.clear();
  }

  // The cluster row needs its million buckets and the baseline's: built only now.
  ClusterPath cluster(rot, kClusterSources);
  const std::vector<uint8_t> v6 = make_frame(true);
  rot.set_sources(true, 1, kClusterSources);
  uint32_t retval = 0;
  rot.run(rot.fd.baseline, v6, kClusterSources, &retval);  // prefill the baseline's map
  rot.run(rot.fd.clock, v6, kClusterSources, &retval);     // and the clock baseline's
  Throttle single(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX));
  rot.run(single.fd.xdp, v6, kClusterSources, &retval);  // its buckets
  const auto over_sources = [&](int fd) {
    return [&, fd] {
      rot.set_sources(true, 1, kClusterSources);
      uint32_t rv = 0;
      return rot.run(fd, v6, kClusterSources, &rv);
    };
  };
  rows.push_back({"cluster mode, 1,000,000 sources, each new in the period", "ours, ring drained", "LRU baseline", 1.5,
                  5, [&] { return cluster.run(); }, over_sources(rot.fd.baseline), [&] { return cluster.note(); }});
  rows.push_back({"  the same sources: cluster mode vs single-host mode", "ours, ring drained", "ours, single host", 0,
                  5, [&] { return cluster.run(); }, over_sources(single.fd.xdp), nullptr});
  rows.push_back({"  the same sources: the clock's baseline vs the LRU one", "lookup + clock + CAS", "LRU baseline", 0,
                  5, over_sources(rot.fd.clock), over_sources(rot.fd.baseline), nullptr});
  for (const AttackRow &r : rows) run_attack_row(r);
}

}  // namespace dt::bench
