// ablate.cpp - Part 1g (`bench ablate`): what each part of the admitted path costs. The
// production dt_xdp and variants of it, each built from the same source with one part left
// out (bpf/ablate.h; the Makefile builds them into build/ablate/, next to this binary), run
// side by side in interleaved rounds through the bench wrapper, as Part 1 does: one IPv4
// source whose bucket is in debt, the same with one IPv6 source, and 65,536 IPv4 sources in
// rotation whose buckets are full; and the one IPv4 source in debt sent from every CPU at
// once (run directly, one pinned thread per CPU: what the bucket's shared line costs).
// A part's cost is the whole's median less the variant's. The variants are for measuring
// only: some leave out what correctness needs. Beside them, in the same rounds, three
// references that are not dthrottle: the LRU baseline (lookup + one atomic add), a counted
// bucket in debt (lookup, a compare-and-swap of its time and an atomic add to its count: the
// least an admission into a bucket in debt does) and the precise clock's baseline.
#include <linux/bpf.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/cpus.h"
#include "bench/measure.h"
#include "bench/parts.h"
#include "bench/programs.h"

namespace dt::bench {

namespace {

struct Part {
  const char *name;  // the variant's object: build/ablate/NAME.bpf.o ("" for the whole)
  const char *what;
};

const Part kParts[] = {
    {"", "the whole admitted path (dt_xdp as shipped)"},
    {"CLOCK", "the precise clock read (bpf_ktime_get_ns)"},
    {"BOUND", "the refusal test at the clock bound (anchor, jiffies)"},
    {"CONFIG", "the config lookup"},
    {"POLICY", "the policy lookup"},
    {"COUNTERS", "the per-CPU counters (stats, rule_stats lookup)"},
    {"CALL", "dt_decide's call (inlined instead)"},
    {"KEY", "the bucket key's build (copy, mask, rule)"},
    {"TOUCH", "the last_seen test and write"},
    {"PASSED", "the bucket's passed count (atomic add)"},
    {"PCPU", "passed's atomic add, counted per CPU instead (floor)"},
    {"SCREEN", "the lists and bans, none loaded (dt_screen)"},
    {"CAPTURE", "the capture's test, none running"},
    {"OWNER", "the owner test (config.owner)"},
    {"FLOOR", "all of config .. owner at once (not counters, passed)"},
};
constexpr int kN = sizeof kParts / sizeof kParts[0];

// The directory of this binary (build/), where build/ablate/ is.
std::string exe_dir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) die("cannot read /proc/self/exe");
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

struct Load {
  const char *label;
  bool ipv6;
  uint32_t sources, repeat;
  bool every_cpu;  // one source, run directly from a pinned thread on each CPU (no wrapper)
};

// One measurement of `fd` under `load`: ns per frame, the verdict in *retval.
double run_load(const Load &load, int fd, const std::vector<uint8_t> &frame, Rotator &rot, uint32_t repeat,
                uint32_t *retval) {
  if (!load.every_cpu) return rot.run(fd, frame, repeat, retval);
  *retval = XDP_PASS;  // run_on_cpus dies on any other verdict
  return run_on_cpus(fd, frame, allowed_cpus(), repeat, XDP_PASS);
}

// The references measured beside the variants (Rotator's bench-only programs).
struct Reference {
  const char *what;
  int Rotator::Fds::*fd;
};

const Reference kRefs[] = {
    {"LRU baseline: lookup + one atomic add", &Rotator::Fds::baseline},
    {"counted bucket in debt: lookup + CAS + atomic add", &Rotator::Fds::counted},
    {"clock baseline: lookup + precise clock + CAS", &Rotator::Fds::clock},
};
constexpr int kR = sizeof kRefs / sizeof kRefs[0];

// Medians of every part's run (kParts order), of the references (kRefs order) and of the
// empty target (last), for `load`.
// *contended: plus the frames dropped after DT_CAS_RETRIES lost races (every-CPU load only).
std::vector<double> measure_load(const Load &load, std::vector<std::unique_ptr<Throttle>> &ts, Rotator &rot,
                                 uint64_t *contended) {
  const std::vector<uint8_t> frame = make_frame(load.ipv6);
  rot.set_sources(load.ipv6, load.ipv6 ? 1u /* 2001:2::1 */ : 0xc6120001u /* 198.18.0.1 */, load.sources);
  std::vector<int> fds;
  for (auto &t : ts) fds.push_back(t->fd.xdp);
  for (const Reference &r : kRefs) fds.push_back(rot.fd.*r.fd);
  fds.push_back(rot.fd.empty);
  std::vector<dt_stats> before;
  uint32_t retval = 0;
  for (size_t i = 0; i + 1 < fds.size(); i++) {
    rot.run(fds[i], frame, load.sources, &retval);  // creates the buckets
    if (i < ts.size()) before.push_back(ts[i]->stats());
  }
  std::vector<std::vector<double>> ns(fds.size());
  for (int round = 0; round < kRounds; round++)
    for (size_t k = 0; k < fds.size(); k++) {
      const size_t i = round % 2 ? fds.size() - 1 - k : k;
      ns[i].push_back(run_load(load, fds[i], frame, rot, load.repeat, &retval));
      if (retval != XDP_PASS) die("ablate %s: target %zu returned %u, not XDP_PASS", load.label, i, retval);
    }
  std::vector<double> med;
  for (size_t i = 0; i < fds.size(); i++) {
    if (i < ts.size()) {
      const dt_stats after = ts[i]->stats();
      const uint64_t passed = after.passed - before[i].passed,
                     want = uint64_t{kRounds} * load.repeat * (load.every_cpu ? allowed_cpus().size() : 1);
      // On every CPU at once a frame may lose DT_CAS_RETRIES races in a row: dropped, counted.
      const uint64_t lost = load.every_cpu ? after.contended - before[i].contended : 0;
      *contended += lost;
      // Every frame admitted by a bucket that was there (the variant without counters counts none).
      if (after.new_sources != before[i].new_sources || after.fail_open != before[i].fail_open ||
          (passed + lost != want && std::string(kParts[i].name) != "COUNTERS"))
        die("ablate %s, %s: %llu of %llu frames admitted (%llu contended), %llu buckets created, %llu failed open",
            load.label, kParts[i].name, static_cast<unsigned long long>(passed), static_cast<unsigned long long>(want),
            static_cast<unsigned long long>(lost),
            static_cast<unsigned long long>(after.new_sources - before[i].new_sources),
            static_cast<unsigned long long>(after.fail_open - before[i].fail_open));
    }
    med.push_back(median(ns[i]));
  }
  return med;
}

}  // namespace

void ablate_part() {
  const Load loads[] = {{"IPv4, 1 source, in debt", false, 1, 2'000'000, false},
                        {"IPv6, 1 source, in debt", true, 1, 2'000'000, false},
                        {"IPv4, 65,536 in rotation, full", false, 65'536, 65'536 * 16, false},
                        {"IPv4, 1 in debt, every CPU", false, 1, 2'000'000, true}};
  constexpr int kLoads = sizeof loads / sizeof loads[0];
  constexpr uint32_t kCapacity = 262'144;
  const dt_policy pol = policy_or_die(1e6, DT_BURST_MAX);  // what bpf/ablate.h's constant policy holds
  std::vector<std::unique_ptr<Throttle>> ts;
  const std::string dir = exe_dir() + "/ablate/";
  for (const Part &p : kParts)
    ts.push_back(*p.name ? std::make_unique<Throttle>(kCapacity, pol, dir + p.name + ".bpf.o")
                         : std::make_unique<Throttle>(kCapacity, pol));
  Rotator rot;
  std::vector<double> med[kLoads];
  uint64_t contended = 0;
  for (int l = 0; l < kLoads; l++) med[l] = measure_load(loads[l], ts, rot, &contended);
  printf(
      "\nPart 1g: the admitted path, each part left out in turn (ns per frame, median of %d interleaved\n"
      "  rounds through the wrapper; cost = the whole less the variant; net = less the empty target)\n\n",
      kRounds);
  printf("  %-54s |", "left out");
  for (const Load &l : loads) printf(" %-24s |", l.label);
  printf("\n  %-54s |", "");
  for (int l = 0; l < kLoads; l++) printf(" %8s %8s %6s |", "ns", "cost", "share");
  printf("\n");
  const int empty = kN + kR;
  for (int i = 0; i < kN; i++) {
    printf("  %-54s |", kParts[i].what);
    for (int l = 0; l < kLoads; l++) {
      const double whole = med[l][0], cost = whole - med[l][i];
      if (i == 0) printf(" %8.1f %8s %6s |", whole, "-", "-");
      else printf(" %8.1f %+8.1f %5.0f%% |", med[l][i], cost, 100.0 * cost / (whole - med[l][empty]));
    }
    printf("\n");
  }
  printf("  %-54s |", "(empty target: the wrapper; every CPU: run directly)");
  for (int l = 0; l < kLoads; l++) printf(" %8.1f %8s %6s |", med[l][empty], "", "");
  printf("\n\n  against the LRU baseline, net of the empty target (the same rounds):\n");
  const auto row = [&](const char *what, int i) {
    printf("  %-54s |", what);
    for (int l = 0; l < kLoads; l++)
      printf(" %8.1f %7.2fx %6s |", med[l][i], (med[l][i] - med[l][empty]) / (med[l][kN] - med[l][empty]), "");
    printf("\n");
  };
  row("the whole admitted path (dt_xdp as shipped)", 0);
  for (int i = 1; i < kN; i++)
    if (std::string(kParts[i].name) == "FLOOR") row(kParts[i].what, i);
  for (int r = 0; r < kR; r++) row(kRefs[r].what, kN + r);
  printf("\n  every CPU: %llu frames of all programs dropped after %d lost races in a row (contended)\n",
         static_cast<unsigned long long>(contended), DT_CAS_RETRIES);
}

}  // namespace dt::bench
