// bench.cpp - `make bench`: what dthrottle costs per packet, and what the agent pays
// per period. `bench packet` or `bench period` runs one part only.
//
// Part 1, per packet: BPF_PROG_TEST_RUN runs the bench wrapper dt_bench_rotate
// (bpf/bench.bpf.c) millions of times on one frame; the wrapper gives every
// repetition the next of N source addresses and tail-calls one of four targets:
//   ours PASS  the production dt_xdp (unpinned skeleton), a policy that admits all
//   ours DROP  dt_xdp again (its own maps), a policy under which every bucket is empty
//   baseline   dt_bench_baseline: same parser, one LRU lookup, one atomic add
//   empty      XDP_PASS only: the wrapper's own cost, subtracted for the "net" ratio
// Every map is prefilled by one pass over all N sources, then each round measures
// the four targets back to back (order reversed every other round) and the table
// shows per-target medians. The counters of dt_xdp are checked after every run:
// a figure is only printed for the path it claims to measure. 198.18.0.0/15 holds
// 131,072 addresses, so the million-source case uses IPv6 sources in 2001:2::/48.
// Time is the thread's CPU time: it leaves out whatever else ran on the CPU while
// the test run yielded it (the wall clock would not), and unlike the kernel's own
// per-run figure it is not rounded to whole nanoseconds.
//
// Part 1b, the hook: dt_xdp and dt_tc (--attach tc) run directly, side by side, on one source.
// Part 1c, a random-source flood with prefix budgets (`bench flood`): see prefix_flood_part.
//
// Part 2, per agent period (refill is lazy, so nothing sweeps the bucket map): the
// time of read_stats, of apply_debits over 100k and 1M sources into bucket maps of
// two capacities, of the full for_each_bucket walk a periodic sweep would pay (for
// scale), and of Collector::end_period over 100k and 1M sources active in a period.
//
// Part 4, under attack (`bench attack`): rows of two measurements side by side with
// a target ratio (AttackRow; add a row to the list in under_attack_part()): the drop
// path of one flooding source on every CPU at once vs on one CPU, the one-CPU drop
// path vs a read-only program (lookup + per-CPU counter; precise and coarse clock),
// and cluster mode over 1,000,000 sources, each announced in the period while a
// thread drains the ring as the agent does, vs the LRU baseline.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <poll.h>
#include <sched.h>
#include <sys/utsname.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "adaptive/adaptive.h"
#include "bench.skel.h"
#include "common/clock.h"
#include "dataplane/collector.h"
#include "dataplane/dataplane.h"
#include "dataplane/debits.h"
#include "dthrottle.skel.h"
#include "dthrottle/common.h"
#include "dataplane/map_reader.h"
#include "cluster/peer_protocol.h"
#include "dataplane/policy.h"

namespace {

// Many shortish rounds rather than a few long ones: on a shared machine a burst of
// interference then spoils few samples, and the median drops them.
constexpr int kRounds = 9;
constexpr uint32_t kBucketCapacity = DT_DEFAULT_MAX_SOURCES;  // 1,048,576

[[noreturn]] __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

// CPU time of this thread, system time (the BPF runs) included.
uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

dt_policy policy_or_die(double rate, uint64_t burst) {
  dt_policy p{};
  std::string err;
  if (!dt::make_policy(rate, burst, &p, &err)) die("make_policy: %s", err.c_str());
  p.v6_key_bits = 128;  // a bucket per IPv6 address: the bench varies the low 32 bits
  return p;
}

// --- Machine description ------------------------------------------------------------

std::string first_line_with(const char *path, const char *prefix) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) {
      auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown";
}

std::string read_trimmed(const char *path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s.empty() ? "unknown" : s;
}

void print_machine() {
  char date[64];
  time_t t = time(nullptr);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
  utsname u{};
  uname(&u);
  const std::string jit = read_trimmed("/proc/sys/net/core/bpf_jit_enable");
  printf("dthrottle bench, %s\n", date);
  printf("  CPU     %s (%d possible CPUs)\n",
         first_line_with("/proc/cpuinfo", "model name").c_str(), libbpf_num_possible_cpus());
  printf("  kernel  %s %s %s\n", u.sysname, u.release, u.version);
  printf("  BPF JIT %s\n", jit == "0" ? "OFF (figures are the interpreter's!)" : ("on (" + jit + ")").c_str());
}

// --- The programs under test ----------------------------------------------------------

// One dthrottle object (dt_xdp, dt_debit, dt_collect and their maps), loaded from the skeleton
// with nothing pinned, its bucket map sized `capacity`, rule 0 set to `pol`.
class Throttle {
 public:
  Throttle(uint32_t capacity, const dt_policy &pol, bool coarse_clock = false) {
    skel_ = dthrottle_bpf__open();
    if (!skel_) die("cannot open the dthrottle skeleton: %s", strerror(errno));
    bpf_map *m;
    bpf_object__for_each_map(m, skel_->obj) bpf_map__set_pin_path(m, nullptr);
    bpf_map__set_max_entries(skel_->maps.buckets, capacity);
    bpf_map__set_max_entries(skel_->maps.active, dt::active_ring_bytes(capacity));  // as the agent does
    if (int rc = dthrottle_bpf__load(skel_); rc != 0)
      die("cannot load dthrottle.bpf.o (bucket map of %u): %s", capacity, strerror(-rc));
    const int pfd = bpf_map__fd(skel_->maps.policy), cfd = bpf_map__fd(skel_->maps.config);
    dt::RuleMaps maps;
    maps.policy_fd = pfd;
    maps.config_fd = cfd;
    if (int rc = dt::publish_rules(maps, {pol}, {}, {}); rc != 0) die("publish_rules: %s", strerror(-rc));
    // As the agent configures it: the coarse clock's lag (the refusal shortcut), --clock coarse if asked.
    if (dt::update_config_flags(cfd, coarse_clock ? DT_CFG_COARSE_CLOCK : 0, 0, dt::coarse_clock_lag_ns()) != 0)
      die("cannot write the config map");
  }
  ~Throttle() { dthrottle_bpf__destroy(skel_); }
  Throttle(const Throttle &) = delete;
  Throttle &operator=(const Throttle &) = delete;

  int xdp_fd() const { return bpf_program__fd(skel_->progs.dt_xdp); }
  int tc_fd() const { return bpf_program__fd(skel_->progs.dt_tc); }
  int debit_fd() const { return bpf_program__fd(skel_->progs.dt_debit); }
  int buckets_fd() const { return bpf_map__fd(skel_->maps.buckets); }
  int stats_fd() const { return bpf_map__fd(skel_->maps.stats); }
  int batch_fd() const { return bpf_map__fd(skel_->maps.debit_batch); }
  int config_fd() const { return bpf_map__fd(skel_->maps.config); }
  int ring_fd() const { return bpf_map__fd(skel_->maps.active); }
  int stage_fd() const { return bpf_map__fd(skel_->maps.active_stage); }
  int collect_batch_fd() const { return bpf_map__fd(skel_->maps.collect_batch); }
  int collect_fd() const { return bpf_program__fd(skel_->progs.dt_collect); }
  int prefix_policy_fd() const { return bpf_map__fd(skel_->maps.prefix_policy); }
  dt::RuleMaps rule_maps() const {
    dt::RuleMaps m;
    m.policy_fd = bpf_map__fd(skel_->maps.policy);
    m.config_fd = config_fd();
    m.rules_fd[0] = bpf_map__fd(skel_->maps.rules0);
    m.rules_fd[1] = bpf_map__fd(skel_->maps.rules1);
    m.names_fd = bpf_map__fd(skel_->maps.rule_names);
    return m;
  }

  dt_stats stats() const {
    dt_stats s{};
    if (int rc = dt::read_stats(stats_fd(), &s); rc != 0) die("read_stats: %s", strerror(-rc));
    return s;
  }

 private:
  dthrottle_bpf *skel_ = nullptr;
};

// The wrapper program and its two bench-only targets.
class Rotator {
 public:
  Rotator() {
    skel_ = bench_bpf__open();
    if (!skel_) die("cannot open the bench skeleton: %s", strerror(errno));
    bpf_map__set_max_entries(skel_->maps.baseline_counts, kBucketCapacity);
    if (int rc = bench_bpf__load(skel_); rc != 0) die("cannot load bench.bpf.o: %s", strerror(-rc));
  }
  ~Rotator() { bench_bpf__destroy(skel_); }
  Rotator(const Rotator &) = delete;
  Rotator &operator=(const Rotator &) = delete;

  int baseline_fd() const { return bpf_program__fd(skel_->progs.dt_bench_baseline); }
  int readonly_fd() const { return bpf_program__fd(skel_->progs.dt_bench_readonly); }
  int empty_fd() const { return bpf_program__fd(skel_->progs.dt_bench_empty); }

  // Sources base, base+1, ... (the IPv4 address, or the IPv6 address's last word).
  void set_sources(bool ipv6, uint32_t base_host_order, uint32_t n) {
    skel_->bss->ipv6 = ipv6;
    skel_->bss->base_addr = htonl(base_host_order);
    skel_->data->nsources = n;
  }

  // Runs `repeat` frames through the wrapper into `target`, starting at the first
  // source. Returns thread CPU ns per frame; *retval is the last frame's verdict.
  double run(int target, const std::vector<uint8_t> &frame, uint32_t repeat, uint32_t *retval) {
    uint32_t slot = 0;
    if (bpf_map_update_elem(bpf_map__fd(skel_->maps.jump), &slot, &target, BPF_ANY) != 0)
      die("cannot put the target in the prog array: %s", strerror(errno));
    skel_->bss->next_source = 0;
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(),
                .data_size_in = static_cast<uint32_t>(frame.size()), .repeat = static_cast<int>(repeat));
    const uint64_t t0 = thread_cpu_ns();
    if (bpf_prog_test_run_opts(bpf_program__fd(skel_->progs.dt_bench_rotate), &opts) != 0)
      die("BPF_PROG_TEST_RUN: %s", strerror(errno));
    const uint64_t t1 = thread_cpu_ns();
    *retval = opts.retval;
    return static_cast<double>(t1 - t0) / repeat;
  }

  // Entries of the baseline map (to check nothing was evicted).
  long baseline_entries() const {
    const int fd = bpf_map__fd(skel_->maps.baseline_counts);
    dt_key cur{}, next{};
    long n = 0;
    for (const dt_key *k = nullptr; bpf_map_get_next_key(fd, k, &next) == 0; k = &cur, n++) cur = next;
    return n;
  }

 private:
  bench_bpf *skel_ = nullptr;
};

// BPF_PROG_TEST_RUN of `fd` itself, `repeat` times on `frame`: thread CPU ns per frame and,
// in *retval, the verdict. An XDP program runs on an xdp_buff, a tc one on an skb the kernel
// built once for the whole run (its allocation, which a real packet pays before tc, is not in it).
double run_direct(int fd, const std::vector<uint8_t> &frame, uint32_t repeat, uint32_t *retval) {
  LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(),
              .data_size_in = static_cast<uint32_t>(frame.size()), .repeat = static_cast<int>(repeat));
  const uint64_t t0 = thread_cpu_ns();
  if (bpf_prog_test_run_opts(fd, &opts) != 0) die("BPF_PROG_TEST_RUN: %s", strerror(errno));
  const uint64_t t1 = thread_cpu_ns();
  *retval = opts.retval;
  return static_cast<double>(t1 - t0) / repeat;
}

// A minimal UDP frame from the first source (198.18.0.1 or 2001:2::1) to a
// destination in the same benchmark range. Never sent anywhere.
std::vector<uint8_t> make_frame(bool ipv6) {
  std::vector<uint8_t> f(ipv6 ? 14 + 40 + 8 + 2 : 64, 0);
  auto *eth = reinterpret_cast<ethhdr *>(f.data());
  memset(eth->h_dest, 0x02, ETH_ALEN);
  memset(eth->h_source, 0x04, ETH_ALEN);
  eth->h_proto = htons(ipv6 ? ETH_P_IPV6 : ETH_P_IP);
  if (ipv6) {
    auto *ip6 = reinterpret_cast<ipv6hdr *>(f.data() + 14);
    ip6->version = 6;
    ip6->payload_len = htons(static_cast<uint16_t>(f.size() - 14 - 40));
    ip6->nexthdr = IPPROTO_UDP;
    ip6->hop_limit = 64;
    inet_pton(AF_INET6, "2001:2::1", &ip6->saddr);
    inet_pton(AF_INET6, "2001:2::ffff:fffe", &ip6->daddr);
  } else {
    auto *ip = reinterpret_cast<iphdr *>(f.data() + 14);
    ip->version = 4;
    ip->ihl = 5;
    ip->ttl = 64;
    ip->protocol = IPPROTO_UDP;
    ip->tot_len = htons(static_cast<uint16_t>(f.size() - 14));
    inet_pton(AF_INET, "198.18.0.1", &ip->saddr);
    inet_pton(AF_INET, "198.19.255.254", &ip->daddr);
  }
  return f;
}

// --- Part 1b: the same decision at tc ingress (--attach tc) ------------------------------------

// dt_xdp and dt_tc side by side on one IPv4 source, passing and dropping, rounds alternating:
// the program's own cost at each hook (the skb tc needs is the kernel's, not in these figures).
void hook_part() {
  constexpr uint32_t kRepeat = 3'000'000;
  Throttle pass(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX));
  Throttle drop(kBucketCapacity, policy_or_die(DT_RATE_MIN, 1));
  const std::vector<uint8_t> frame = make_frame(false);
  struct Row {
    const char *name;
    int fd;
    uint32_t want;
    std::vector<double> ns;
  } rows[] = {{"xdp PASS", pass.xdp_fd(), XDP_PASS, {}},      {"tc PASS", pass.tc_fd(), static_cast<uint32_t>(-1), {}},
              {"xdp DROP", drop.xdp_fd(), XDP_DROP, {}},      {"tc DROP", drop.tc_fd(), 2 /* TC_ACT_SHOT */, {}}};
  uint32_t retval = 0;
  for (Row &r : rows) run_direct(r.fd, frame, 1000, &retval);  // buckets created, drop's emptied
  for (int round = 0; round < kRounds; round++)
    for (int i = 0; i < 4; i++) {
      Row &r = rows[round % 2 ? 3 - i : i];
      r.ns.push_back(run_direct(r.fd, frame, kRepeat, &retval));
      if (retval != r.want) die("%s: the last frame returned %d, expected %d", r.name, static_cast<int>(retval),
                                static_cast<int>(r.want));
    }
  printf("\nPart 1b: the hook, one IPv4 source (BPF_PROG_TEST_RUN of dt_xdp and dt_tc, ns per frame, median of %d)\n",
         kRounds);
  for (int i = 0; i < 4; i += 2)
    printf("  %-9s %6.1f   %-9s %6.1f   tc/xdp %.2fx\n", rows[i].name, median(rows[i].ns), rows[i + 1].name,
           median(rows[i + 1].ns), median(rows[i + 1].ns) / median(rows[i].ns));
  printf("  (at tc the kernel has already built an skb for the frame: dropping there saves less than at XDP)\n");
}

// --- Part 1: per packet ------------------------------------------------------------------

struct Scenario {
  const char *label;
  bool ipv6;
  uint32_t sources;
  uint32_t repeat;  // frames per measurement
};

enum Target { kOursPass, kOursCoarse, kOursDrop, kBaseline, kEmpty, kTargets };
const char *const kTargetNames[kTargets] = {"ours PASS", "PASS coarse", "ours DROP", "baseline", "empty"};

struct ScenarioResult {
  std::vector<double> ns[kTargets];
};

// Runs one measurement and checks that dt_xdp took the path it is meant to measure,
// with every source's bucket already there (no eviction, no re-creation).
double measure(Rotator &rot, Target t, int fd, const Throttle *ours, const std::vector<uint8_t> &frame,
               uint32_t repeat) {
  const dt_stats before = ours ? ours->stats() : dt_stats{};
  uint32_t retval = 0;
  const double ns = rot.run(fd, frame, repeat, &retval);
  const uint32_t want = t == kOursDrop ? XDP_DROP : XDP_PASS;
  if (retval != want)
    die("%s: the last frame returned %u, expected %u (did the tail call fail?)", kTargetNames[t], retval, want);
  if (ours) {
    const dt_stats after = ours->stats();
    const uint64_t on_path = t != kOursDrop ? after.passed - before.passed : after.dropped - before.dropped;
    const uint64_t created = after.new_sources - before.new_sources;
    if (on_path != repeat || created != 0)
      die("%s: %llu of %u frames took the measured path and %llu buckets were created "
          "(expected all and none: eviction, or the policy does not fit)",
          kTargetNames[t], static_cast<unsigned long long>(on_path), repeat,
          static_cast<unsigned long long>(created));
  }
  return ns;
}

ScenarioResult run_scenario(const Scenario &s) {
  // Rate 1e6/s, burst 1e9: no source runs dry in this bench (each frame moves a
  // bucket's TAT by 1 us, the burst covers 1e9 of them). Rate 1e-6/s, burst 1: the
  // prefill pass takes each source's only token, every later frame is dropped.
  Throttle pass(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX));
  Throttle coarse(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX), true);
  Throttle drop(kBucketCapacity, policy_or_die(DT_RATE_MIN, 1));
  Rotator rot;
  rot.set_sources(s.ipv6, s.ipv6 ? 1u : 0xc6120001u /* 198.18.0.1 */, s.sources);
  const std::vector<uint8_t> frame = make_frame(s.ipv6);

  const int fds[kTargets] = {pass.xdp_fd(), coarse.xdp_fd(), drop.xdp_fd(), rot.baseline_fd(), rot.empty_fd()};
  const Throttle *owners[kTargets] = {&pass, &coarse, &drop, nullptr, nullptr};
  uint32_t retval = 0;
  for (int fd : {fds[kOursPass], fds[kOursCoarse], fds[kOursDrop], fds[kBaseline]}) rot.run(fd, frame, s.sources, &retval);
  if (pass.stats().new_sources != s.sources || drop.stats().new_sources != s.sources ||
      coarse.stats().new_sources != s.sources)
    die("%s: prefill created %llu / %llu buckets, expected %u", s.label,
        static_cast<unsigned long long>(pass.stats().new_sources),
        static_cast<unsigned long long>(drop.stats().new_sources), s.sources);

  ScenarioResult r;
  for (int round = 0; round < kRounds; round++)
    for (int i = 0; i < kTargets; i++) {
      const Target t = static_cast<Target>(round % 2 ? kTargets - 1 - i : i);  // ABCD DCBA ...
      r.ns[t].push_back(measure(rot, t, fds[t], owners[t], frame, s.repeat));
    }
  if (long n = rot.baseline_entries(); n != s.sources)
    die("%s: the baseline map holds %ld sources, expected %u (evicted?)", s.label, n, s.sources);
  return r;
}

void per_packet_part() {
  const Scenario scenarios[] = {
      {"IPv4, 1 source", false, 1, 5'000'000},
      {"IPv6, 1 source", true, 1, 5'000'000},
      {"IPv4, 131,072 (198.18.0.0/15)", false, 131'072, 131'072 * 24},
      {"IPv6, 1,000,000 (2001:2::/48)", true, 1'000'000, 3'000'000},
  };
  printf("\nPart 1: cost per packet in ns (BPF_PROG_TEST_RUN; thread CPU time / frames)\n"
         "  bucket maps of %u entries (dt_xdp's and the baseline's), prefilled by one pass\n"
         "  over all sources; median of %d interleaved rounds; net = minus the empty target\n"
         "  (the wrapper's own cost). Target: ours/baseline <= 1.5x.\n\n",
         kBucketCapacity, kRounds);
  printf("  %-30s %-9s| %9s %9s %9s %9s %7s | %-13s | %-13s | %-13s\n", "sources", "frames", "ours PASS",
         "coarse", "ours DROP", "baseline", "empty", "PASS/baseline", "coarse/base", "DROP/baseline");
  printf("  %-30s %-9s| %9s %9s %9s %9s %7s | %-13s | %-13s | %-13s\n", "", "", "", "", "", "", "", " raw    net",
         " raw    net", " raw    net");
  std::vector<ScenarioResult> results;
  for (const Scenario &s : scenarios) {
    results.push_back(run_scenario(s));
    const ScenarioResult &r = results.back();
    double med[kTargets];
    for (int t = 0; t < kTargets; t++) med[t] = median(r.ns[t]);
    const double base_net = med[kBaseline] - med[kEmpty];
    printf("  %-30s %-9u| %9.1f %9.1f %9.1f %9.1f %7.1f |", s.label, s.repeat, med[kOursPass], med[kOursCoarse],
           med[kOursDrop], med[kBaseline], med[kEmpty]);
    for (Target t : {kOursPass, kOursCoarse, kOursDrop})
      printf(" %4.2fx %5.2fx %s", med[t] / med[kBaseline], (med[t] - med[kEmpty]) / base_net,
             t != kOursDrop ? "|" : "\n");
  }
  printf("\n  spread over the rounds (min - max ns):\n");
  for (size_t i = 0; i < results.size(); i++) {
    printf("  %-30s", scenarios[i].label);
    for (int t = 0; t < kTargets; t++) {
      auto [lo, hi] = std::minmax_element(results[i].ns[t].begin(), results[i].ns[t].end());
      printf("  %s %.1f-%.1f", kTargetNames[t], *lo, *hi);
    }
    printf("\n");
  }
}

// --- Part 1c: a random-source flood with prefix budgets -----------------------------------

// A flood in which every frame comes from a source without a bucket (131,072 sources of
// 198.18.0.0/15 in turn, so none is seen twice within 131,072 frames):
//   prefix budgets  rule 0 with levels v4/16 and v4/24 whose budgets the prefill pass
//                   spent: each frame is dropped by the /16 after one look at the (absent)
//                   source bucket and one at the /16's, and no bucket is created
//   no budgets      rule 0 alone, a bucket map of 65,536: each frame creates a bucket
//                   (evicting another; a few of the LRU's survive a lap) and passes, as
//                   every spoofed frame did before
//   baseline        dt_bench_baseline on known sources (one LRU lookup, one atomic add)
// Checked after every run: all frames took the path named, and buckets were created
// only where expected.
void prefix_flood_part() {
  constexpr uint32_t kSources = 131'072, kRepeat = kSources * 4, kSmallMap = 65'536;
  const dt_policy per_source = policy_or_die(1e6, DT_BURST_MAX);
  Throttle budgets(kBucketCapacity, per_source), plain(kSmallMap, per_source);
  dt_policy with_levels = per_source;
  with_levels.flags |= DT_POL_PREFIX;
  dt_prefix_policy pp{};
  pp.n_v4 = 2;
  pp.v4[0] = policy_or_die(DT_RATE_MIN, 1);
  pp.v4[0].v4_key_bits = 16;
  pp.v4[1] = policy_or_die(DT_RATE_MIN, 1);
  pp.v4[1].v4_key_bits = 24;
  dt::RuleMaps maps = budgets.rule_maps();
  maps.prefix_fd = budgets.prefix_policy_fd();
  if (int rc = dt::publish_rules(maps, {with_levels}, {}, {}, {pp}); rc != 0) die("publish_rules: %s", strerror(-rc));
  Rotator rot;
  rot.set_sources(false, 0xc6120000u /* 198.18.0.0 */, kSources);
  const std::vector<uint8_t> frame = make_frame(false);
  uint32_t retval = 0;
  for (int fd : {budgets.xdp_fd(), plain.xdp_fd(), rot.baseline_fd()}) rot.run(fd, frame, kSources, &retval);
  enum { kBudgets, kPlain, kBase, kNone, kN };
  const char *names[kN] = {"prefix budgets", "no budgets", "baseline", "empty"};
  const int fds[kN] = {budgets.xdp_fd(), plain.xdp_fd(), rot.baseline_fd(), rot.empty_fd()};
  std::vector<double> ns[kN];
  for (int round = 0; round < kRounds; round++)
    for (int i = 0; i < kN; i++) {
      const int t = round % 2 ? kN - 1 - i : i;
      const Throttle *th = t == kBudgets ? &budgets : t == kPlain ? &plain : nullptr;
      const dt_stats before = th ? th->stats() : dt_stats{};
      ns[t].push_back(rot.run(fds[t], frame, kRepeat, &retval));
      if (!th) continue;
      const dt_stats after = th->stats();
      const uint64_t dropped = after.dropped - before.dropped, passed = after.passed - before.passed,
                     created = after.new_sources - before.new_sources;
      if (t == kBudgets && (dropped != kRepeat || created != 0))
        die("flood with prefix budgets: %llu of %u frames dropped, %llu buckets created (expected all, none)",
            static_cast<unsigned long long>(dropped), kRepeat, static_cast<unsigned long long>(created));
      if (t == kPlain && (passed != kRepeat || created * 100 < kRepeat * 99ull))  // LRU: a few survive a lap
        die("flood without budgets: %llu of %u frames passed, %llu buckets created (expected all, 99%%+)",
            static_cast<unsigned long long>(passed), kRepeat, static_cast<unsigned long long>(created));
    }
  double med[kN];
  for (int t = 0; t < kN; t++) med[t] = median(ns[t]);
  const double base_net = med[kBase] - med[kNone];
  printf("\nPart 1c: a random-source flood with prefix budgets, ns per frame (IPv4, %u sources of\n"
         "  198.18.0.0/15 in turn: every frame from a source without a bucket; median of %d rounds)\n\n",
         kSources, kRounds);
  printf("  %-58s %9s | %-13s\n", "target", "ns/frame", "vs baseline");
  printf("  %-58s %9s | %-13s\n", "", "", " raw    net");
  const char *what[kN] = {"prefix budgets (/16 and /24 spent): dropped, no bucket made",
                          "no prefix budgets: each frame makes a bucket and passes", "baseline: LRU lookup + atomic add",
                          "empty (the wrapper's own cost)"};
  for (int t = 0; t < kN; t++) {
    printf("  %-58s %9.1f |", what[t], med[t]);
    if (t != kNone) printf(" %4.2fx %5.2fx", med[t] / med[kBase], (med[t] - med[kNone]) / base_net);
    printf("\n");
  }
  printf("  spread (min - max ns):");
  for (int t = 0; t < kN; t++) {
    auto [lo, hi] = std::minmax_element(ns[t].begin(), ns[t].end());
    printf("  %s %.1f-%.1f", names[t], *lo, *hi);
  }
  printf("\n");
}

// --- Part 2: per agent period -----------------------------------------------------------

// One hit from each of the sources 2001:2::1, 2001:2::2, ... (the debits a period
// of peer reports brings), for rule 0.
std::vector<dt_debit> make_debits(uint32_t n) {
  std::vector<dt_debit> v(n);
  for (uint32_t i = 0; i < n; i++) {
    dt_key &k = v[i].key;
    k.addr[0] = 0x20, k.addr[1] = 0x01, k.addr[3] = 0x02;  // 2001:2::/48
    const uint32_t low = htonl(i + 1);
    memcpy(&k.addr[12], &low, 4);
    v[i].hits = 1;
    v[i].key.rule = DT_RULE_DEFAULT;
  }
  return v;
}

// Thread CPU ms of apply_debits; dies unless every entry was applied.
double time_apply(const Throttle &t, const std::vector<dt_debit> &debits) {
  const uint64_t t0 = thread_cpu_ns();
  const dt::DebitResult r = dt::apply_debits(t.batch_fd(), t.debit_fd(), debits);
  const uint64_t t1 = thread_cpu_ns();
  if (r.error || r.entries_failed || r.entries_applied != debits.size())
    die("apply_debits of %zu entries: %llu applied, %llu failed, error %d", debits.size(),
        static_cast<unsigned long long>(r.entries_applied),
        static_cast<unsigned long long>(r.entries_failed), r.error);
  return static_cast<double>(t1 - t0) / 1e6;
}

// Thread CPU ms of a full walk that reads every bucket; dies unless it saw
// `expect` buckets each debited `debited` hits.
double time_walk(const Throttle &t, uint32_t expect, uint64_t debited) {
  uint64_t sum = 0;
  const uint64_t t0 = thread_cpu_ns();
  const long n = dt::for_each_bucket(t.buckets_fd(), [&](const dt_key &, const dt_bucket &b) { sum += b.debited; });
  const uint64_t t1 = thread_cpu_ns();
  if (n != static_cast<long>(expect) || sum != expect * debited)
    die("for_each_bucket saw %ld buckets with %llu debited hits, expected %u and %llu", n,
        static_cast<unsigned long long>(sum), expect, static_cast<unsigned long long>(expect * debited));
  return static_cast<double>(t1 - t0) / 1e6;
}

void read_stats_cost() {
  constexpr int kCalls = 20000;
  Throttle t(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX));
  const uint64_t t0 = thread_cpu_ns();
  for (int i = 0; i < kCalls; i++) (void)t.stats();
  const uint64_t t1 = thread_cpu_ns();
  printf("  (a) read_stats (sum over %d CPUs): %.2f us per call (mean of %d)\n", libbpf_num_possible_cpus(),
         static_cast<double>(t1 - t0) / kCalls / 1e3, kCalls);
}

// (d) Collector::end_period after each of n sources sent one admitted frame in the
// period (cluster mode on). Every period sees the same sources again, as in steady
// state; the first period is the warm-up. Thread CPU time: the 2 ms epoch grace
// sleep inside end_period is not counted.
void collect_cost(uint32_t n, int periods) {
  Throttle t(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX));
  dt::Collector collector(t.config_fd(), t.ring_fd(), t.stage_fd(), t.collect_batch_fd(), t.collect_fd());
  if (int rc = collector.enable(false); rc != 0) die("Collector::enable: %s", strerror(-rc));
  Rotator rot;
  rot.set_sources(true, 1, n);
  const std::vector<uint8_t> frame = make_frame(true);
  std::vector<double> ms;
  uint64_t reported = 0, lost = 0;
  for (int p = 0; p <= periods; p++) {
    const dt_stats before = t.stats();
    uint32_t retval = 0;
    rot.run(t.xdp_fd(), frame, n, &retval);
    if (retval != XDP_PASS) die("collect: the last frame returned %u, expected XDP_PASS", retval);
    lost = t.stats().report_overflow - before.report_overflow;
    int err = 0;
    const uint64_t t0 = thread_cpu_ns();
    const std::vector<dt::ReportEntry> out = collector.end_period(&err);
    const uint64_t t1 = thread_cpu_ns();
    if (err != 0) die("Collector::end_period: %s", strerror(-err));
    reported = out.size();
    if (reported != n - lost)
      die("collect: %llu sources reported, expected %llu (%u active, %llu lost to the ring)",
          static_cast<unsigned long long>(reported), static_cast<unsigned long long>(n - lost), n,
          static_cast<unsigned long long>(lost));
    if (p > 0) ms.push_back(static_cast<double>(t1 - t0) / 1e6);
  }
  // Per announced source: those the full ring turned away were not drained.
  const double m = median(ms);
  printf("  %-9u | %8.1f ms %6.0f ns/source | %9llu reported, %9llu announcements lost to a full ring\n",
         n, m, m * 1e6 / static_cast<double>(n - lost), static_cast<unsigned long long>(reported),
         static_cast<unsigned long long>(lost));
}

// (e) Adaptive limits: what the agent pays in a period in which a factor changes
// (republishing the policies) and for measuring the busiest key (every served entry
// goes through AdaptiveSet::add_packet_hits).
void adaptive_cost(int rounds) {
  Throttle t(kBucketCapacity, policy_or_die(1000, 100));
  const dt::RuleMaps maps = t.rule_maps();
  std::vector<dt_policy> pols(DT_MAX_RULES - 1, policy_or_die(1000, 100));
  std::vector<std::pair<dt_lpm_key, dt_rule_set>> lpm;
  for (uint32_t i = 0; i < DT_MAX_PREFIXES; i++) {  // the largest rule set: 4096 IPv4 /24s
    dt_lpm_key k{};
    k.prefixlen = 120;
    k.addr[10] = k.addr[11] = 0xff;
    k.addr[12] = 198;
    k.addr[13] = static_cast<uint8_t>(18 + (i >> 8));
    k.addr[14] = static_cast<uint8_t>(i);
    dt_rule_set set{};
    set.count = 1;
    set.m[0].rule = static_cast<uint16_t>(1 + i % (DT_MAX_RULES - 2));
    lpm.emplace_back(k, set);
  }
  const std::vector<std::string> names(pols.size(), "rule");
  std::vector<double> full, only;
  for (int r = 0; r < rounds; r++) {
    uint64_t t0 = thread_cpu_ns();
    if (int rc = dt::publish_rules(maps, pols, lpm, names); rc != 0) die("publish_rules: %s", strerror(-rc));
    full.push_back((thread_cpu_ns() - t0) / 1e6);
    t0 = thread_cpu_ns();
    if (int rc = dt::publish_policies_only(maps, pols); rc != 0) die("publish_policies_only: %s", strerror(-rc));
    only.push_back((thread_cpu_ns() - t0) / 1e6);
  }
  printf("\n  (e) adaptive limits, per period in which a factor changes (255 rules, 4096 prefixes;\n"
         "      median of %d): republish policies and trie %.2f ms, policies alone %.2f ms (what\n"
         "      the agent does once both trie banks hold the rule set)\n",
         rounds, median(full), median(only));
  for (uint32_t n : {10'000u, 100'000u}) {
    dt::AdaptiveSet set;
    dt::AdaptiveRuleSpec spec;
    spec.name = "api";
    spec.index = 0;
    spec.rate = 1000;
    set.configure({spec}, 1'000'000'000ull);
    std::vector<dt::ReportEntry> served;
    for (const dt_debit &d : make_debits(n)) served.push_back({d.key, 1});
    std::vector<double> per;
    for (int r = 0; r < rounds; r++) {
      const uint64_t t0 = thread_cpu_ns();
      set.add_packet_hits(served);
      set.on_period(1'000'000'000ull * (r + 1), 200'000'000ull);
      per.push_back(static_cast<double>(thread_cpu_ns() - t0) / n);
    }
    printf("      busiest-key measurement, %u active sources of an adaptive rule: %.0f ns per source\n", n,
           median(per));
  }
}

void per_period_part() {
  constexpr int kSteady = 3;
  printf("\nPart 2: agent cost per period (thread CPU time, syscalls included)\n");
  read_stats_cost();
  printf("  (b) apply_debits, 1 hit per source: \"first\" creates every bucket, \"steady\" is the\n"
         "      median of %d further periods over the same sources (the usual case)\n"
         "  (c) for_each_bucket: one full walk reading every bucket: what a sweep would pay\n"
         "      every period for every resident bucket, active or not\n\n",
         kSteady);
  printf("  %-10s %-9s | %-26s | %-26s | %-24s\n", "capacity", "sources", "(b) apply_debits first",
         "(b) apply_debits steady", "(c) full walk");
  for (uint32_t capacity : {kBucketCapacity, 4u * kBucketCapacity})
    for (uint32_t n : {100'000u, 1'000'000u}) {
      Throttle t(capacity, policy_or_die(1e6, DT_BURST_MAX));
      const std::vector<dt_debit> debits = make_debits(n);
      const double first = time_apply(t, debits);
      std::vector<double> steady, walk;
      for (int i = 0; i < kSteady; i++) steady.push_back(time_apply(t, debits));
      for (int i = 0; i < kSteady; i++) walk.push_back(time_walk(t, n, 1 + kSteady));
      const double st = median(steady), wk = median(walk);
      printf("  %-10u %-9u | %8.1f ms %6.0f ns/entry | %8.1f ms %6.0f ns/entry | %7.1f ms %5.0f ns/bucket\n",
             capacity, n, first, first * 1e6 / n, st, st * 1e6 / n, wk, wk * 1e6 / n);
    }
  printf("\n  (d) Collector::end_period (drain the active ring, dt_collect over the announced\n"
         "      sources), each source admitted once per period; median of %d periods\n",
         kSteady);
  printf("  %-9s | %-26s | %s\n", "sources", "(d) end_period (per drained)", "outcome (last period)");
  for (uint32_t n : {100'000u, 1'000'000u}) collect_cost(n, kSteady);
  adaptive_cost(5);
}

// Part 3: the peer report codec. Bytes per entry, and how many reports of 100,000
// distinct sources per period one core can encode and decode (applying them is
// apply_debits above).
void report_codec_part() {
  using clock = std::chrono::steady_clock;
  printf("\nPart 3: peer reports (encode + decode, one thread)\n");
  printf("  %-28s | %9s %9s %14s | %12s %12s\n", "report", "messages", "bytes", "bytes/entry", "encode/s",
         "decode/s");
  for (bool v6 : {false, true})
    for (uint64_t hits : {1ull, 100ull, 1000ull}) {
      dt::ReportBody body;
      body.rules = {"default"};
      for (uint32_t i = 0; i < 100'000; i++) {
        dt::ReportEntry e{};
        if (v6) {  // 2001:2::N
          e.key.addr[0] = 0x20, e.key.addr[1] = 0x01, e.key.addr[3] = 0x02;
          const uint32_t low = htonl(i + 1);
          memcpy(&e.key.addr[12], &low, 4);
        } else {  // 198.18.0.0 + N, IPv4-mapped
          e.key.addr[10] = e.key.addr[11] = 0xff, e.key.addr[12] = 198;
          e.key.addr[13] = static_cast<uint8_t>(18 + (i >> 16));
          e.key.addr[14] = static_cast<uint8_t>(i >> 8), e.key.addr[15] = static_cast<uint8_t>(i);
        }
        e.hits = hits;
        body.entries.push_back(e);
      }
      dt::ReportHeader h;
      h.node_id = "edge-1";
      const auto empty = dt::encode_report(h, 1, dt::ReportBody{});
      std::vector<std::string> msgs;
      const int rounds = 20;
      auto t0 = clock::now();
      for (int r = 0; r < rounds; r++) msgs = dt::encode_report(h, 1, body);
      const double enc = std::chrono::duration<double>(clock::now() - t0).count() / rounds;
      size_t bytes = 0, decoded = 0;
      for (const auto &m : msgs) bytes += m.size();
      t0 = clock::now();
      for (int r = 0; r < rounds; r++)
        for (const auto &m : msgs) {
          dt::ReportHeader hh;
          dt::ReportBody bb;
          if (dt::decode_report(m.data(), m.size(), &hh, &bb) != dt::DecodeError::None) die("decode failed");
          decoded += bb.entries.size();
        }
      const double dec = std::chrono::duration<double>(clock::now() - t0).count() / rounds;
      if (decoded != body.entries.size() * rounds) die("decoded %zu entries, expected %zu", decoded / rounds,
                                                        body.entries.size());
      char label[64];
      snprintf(label, sizeof label, "100,000 IPv%d, %llu hits each", v6 ? 6 : 4, static_cast<unsigned long long>(hits));
      const double per_entry = static_cast<double>(bytes - msgs.size() * empty[0].size()) / body.entries.size();
      printf("  %-28s | %9zu %9zu %14.2f | %12.0f %12.0f\n", label, msgs.size(), bytes, per_entry, 1.0 / enc,
             1.0 / dec);
    }
  printf("  (bytes/entry leaves out each message's fixed header; /s = whole 100,000-source reports per second)\n");
}


// --- Part 4: under attack ---------------------------------------------------------------
//
// Each row measures a path of ours ("measured") and a reference side by side, in
// interleaved rounds (AB BA ...), and prints the medians, their ratio and the
// target ratio. To add a row, append one to the list in under_attack_part().

struct AttackRow {
  std::string what;           // what the row compares
  std::string a_name, b_name; // the measured path and the reference
  double target;              // a / b at most
  int rounds;
  std::function<double()> a, b;  // one measurement each: ns per packet
  std::function<std::string()> note;  // optional: printed under the row
};

void run_attack_row(const AttackRow &row) {
  std::vector<double> a, b;
  for (int r = 0; r < row.rounds; r++) {
    if (r % 2 == 0) a.push_back(row.a()), b.push_back(row.b());
    else b.push_back(row.b()), a.push_back(row.a());
  }
  const double ma = median(a), mb = median(b), ratio = ma / mb;
  printf("  %-56s | %-22s %8.1f | %-22s %8.1f | %5.2fx | <= %.2fx %s\n", row.what.c_str(), row.a_name.c_str(), ma,
         row.b_name.c_str(), mb, ratio, row.target, ratio <= row.target ? "ok" : "OVER");
  auto [alo, ahi] = std::minmax_element(a.begin(), a.end());
  auto [blo, bhi] = std::minmax_element(b.begin(), b.end());
  printf("  %-56s   spread %.1f-%.1f and %.1f-%.1f ns%s%s\n", "", *alo, *ahi, *blo, *bhi,
         row.note ? "; " : "", row.note ? row.note().c_str() : "");
}

// CPUs this process may run on.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) die("sched_getaffinity: %s", strerror(errno));
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// Runs `prog_fd` `repeat` times on `frame` from one thread pinned on each of `cpus`,
// all released at once (BPF_PROG_TEST_RUN runs every repeat on the caller's CPU).
// Returns the median over the threads of thread CPU ns per frame; dies unless
// every thread's last verdict was `want`.
double run_on_cpus(int prog_fd, const std::vector<uint8_t> &frame, const std::vector<int> &cpus, uint32_t repeat,
                   uint32_t want) {
  std::vector<double> ns(cpus.size());
  std::vector<int> err(cpus.size());
  std::vector<uint32_t> verdict(cpus.size());
  std::vector<char> fifo(cpus.size());
  std::atomic<size_t> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cpus.size(); i++)
    threads.emplace_back([&, i] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[i], &set);
      if (sched_setaffinity(0, sizeof set, &set) != 0) err[i] = errno;
      // Real-time for the run, so that on a busy machine the threads do run at once
      // (a few hundred ms; the kernel's RT throttling bounds it anyway).
      sched_param sp{};
      sp.sched_priority = 1;
      fifo[i] = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
      ready++;
      while (!go.load()) std::this_thread::yield();
      if (err[i]) return;
      LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(),
                  .data_size_in = static_cast<uint32_t>(frame.size()), .repeat = static_cast<int>(repeat));
      const uint64_t t0 = thread_cpu_ns();
      if (bpf_prog_test_run_opts(prog_fd, &opts) != 0) err[i] = errno;
      ns[i] = static_cast<double>(thread_cpu_ns() - t0) / repeat;
      verdict[i] = opts.retval;
    });
  while (ready.load() < cpus.size()) std::this_thread::yield();
  go = true;
  for (auto &t : threads) t.join();
  for (size_t i = 0; i < cpus.size(); i++) {
    if (err[i]) die("CPU %d: pinning or BPF_PROG_TEST_RUN failed: %s", cpus[i], strerror(err[i]));
    if (verdict[i] != want) die("CPU %d: the last frame returned %u, expected %u", cpus[i], verdict[i], want);
    if (!fifo[i]) die("CPU %d: cannot run the thread SCHED_FIFO (root needed): %s", cpus[i], strerror(EPERM));
  }
  return median(ns);
}

// dt_xdp's drop path for one source (rate 1e-6/s, burst 1: the first packet takes
// the only token, every later one is dropped), checked by its counters.
class DropPath {
 public:
  explicit DropPath(bool coarse_clock = false)
      : t_(1024, policy_or_die(DT_RATE_MIN, 1), coarse_clock), frame_(make_frame(false)) {
    if (run_on_cpus(t_.xdp_fd(), frame_, {allowed_cpus()[0]}, 1, XDP_PASS) < 0) die("prefill");
  }
  double run(const std::vector<int> &cpus, uint32_t repeat) {
    const dt_stats before = t_.stats();
    const double ns = run_on_cpus(t_.xdp_fd(), frame_, cpus, repeat, XDP_DROP);
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
      : rot_(rot), n_(n), t_(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX)),
        collector_(t_.config_fd(), t_.ring_fd(), t_.stage_fd(), t_.collect_batch_fd(), t_.collect_fd()), frame_(make_frame(true)) {
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
    const double ns = rot_.run(t_.xdp_fd(), frame_, n_, &retval);
    stop = true;
    drainer.join();
    const dt_stats after = t_.stats();
    if (retval != XDP_PASS || after.passed - before.passed != n_)
      die("cluster mode: %llu of %u frames admitted", static_cast<unsigned long long>(after.passed - before.passed), n_);
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

void under_attack_part() {
  const std::vector<int> cpus = allowed_cpus();
  const std::vector<int> one = {cpus[0]};
  constexpr uint32_t kDropRepeat = 2'000'000;
  constexpr uint32_t kClusterSources = 1'000'000;
  printf("\nPart 4: under attack: ns per packet, side by side (BPF_PROG_TEST_RUN, thread CPU time;\n"
         "  median of interleaved rounds; a row of several CPUs: the median of its threads, one\n"
         "  pinned per CPU, SCHED_FIFO, all running at once)\n\n");
  printf("  %-56s | %-31s | %-31s | %6s | %s\n", "row", "measured (ns)", "reference (ns)", "ratio", "target");

  Rotator rot;
  std::vector<AttackRow> rows;
  {  // the drop rows' programs, freed before the cluster row's million buckets are built
    DropPath drop, coarse(true);
    std::vector<uint8_t> v4 = make_frame(false);
    if (run_on_cpus(rot.readonly_fd(), v4, one, 1, XDP_PASS) < 0) die("prefill");  // creates its bucket
    char all_name[32];
    snprintf(all_name, sizeof all_name, "drop, %zu CPUs at once", cpus.size());
    rows.push_back({"drop path, one source: every CPU vs one CPU", all_name, "drop, 1 CPU", 1.15, kRounds,
                    [&] { return drop.run(cpus, kDropRepeat); }, [&] { return drop.run(one, kDropRepeat); }, nullptr});
    rows.push_back({"drop path, one source, one CPU vs read-only program", "drop, 1 CPU", "lookup + per-CPU count",
                    1.35, kRounds, [&] { return drop.run(one, kDropRepeat); },
                    [&] { return run_on_cpus(rot.readonly_fd(), v4, one, kDropRepeat, XDP_DROP); }, nullptr});
    rows.push_back({"the same, --clock coarse", "drop coarse, 1 CPU", "lookup + per-CPU count", 1.35, kRounds,
                    [&] { return coarse.run(one, kDropRepeat); },
                    [&] { return run_on_cpus(rot.readonly_fd(), v4, one, kDropRepeat, XDP_DROP); }, nullptr});
    for (const AttackRow &r : rows) run_attack_row(r);
    rows.clear();
  }

  // The cluster row needs its million buckets and the baseline's: built only now.
  ClusterPath cluster(rot, kClusterSources);
  const std::vector<uint8_t> v6 = make_frame(true);
  rot.set_sources(true, 1, kClusterSources);
  uint32_t retval = 0;
  rot.run(rot.baseline_fd(), v6, kClusterSources, &retval);  // prefill the baseline's map
  rows.push_back({"cluster mode, 1,000,000 sources, each new in the period", "ours, ring drained", "LRU baseline",
                  1.5, 5, [&] { return cluster.run(); },
                  [&] {
                    rot.set_sources(true, 1, kClusterSources);
                    uint32_t rv = 0;
                    return rot.run(rot.baseline_fd(), v6, kClusterSources, &rv);
                  },
                  [&] { return cluster.note(); }});
  for (const AttackRow &r : rows) run_attack_row(r);
}

}  // namespace

// The parts of `bench`, in the order `bench` runs them; `bench NAME` runs one.
struct BenchPart {
  const char *name;
  void (*run)();
};
const BenchPart kParts[] = {
    {"packet", per_packet_part},   {"hook", hook_part},          {"flood", prefix_flood_part},
    {"period", per_period_part},   {"report", report_codec_part}, {"attack", under_attack_part},
};

int main(int argc, char **argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  const bool known = std::any_of(std::begin(kParts), std::end(kParts), [&](const BenchPart &p) { return only == p.name; });
  if (argc > 2 || (only != "" && !known)) {
    std::string names;
    for (const BenchPart &p : kParts) names += std::string(names.empty() ? "" : "|") + p.name;
    fprintf(stderr, "usage: %s [%s]\n", argv[0], names.c_str());
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows, and stays ordered with errors
  print_machine();
  for (const BenchPart &p : kParts)
    if (only == "" || only == p.name) p.run();
  return 0;
}
