// programs.h - the programs under test: a dthrottle object loaded unpinned (Throttle) and
// the bench-only wrapper that gives every repetition of a test run the next source (Rotator).
// Only programs.cpp (and multi.cpp, for the sibling's object) include the skeletons: only they
// are rebuilt when a BPF program changes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/policy.h"
#include "dthrottle/common.h"

struct dthrottle_bpf;
struct bench_bpf;
struct bpf_object;

namespace dt::bench {

// Destroys a loaded skeleton: the classes below own theirs (and so cannot be copied).
struct SkeletonDestroyer {
  void operator()(dthrottle_bpf *s) const;
  void operator()(bench_bpf *s) const;
  void operator()(bpf_object *o) const;
};

// One dthrottle object (dt_xdp, dt_debit, dt_collect and their maps), loaded from the skeleton
// with nothing pinned, its bucket map sized `capacity`, rule 0 set to `pol`.
class Throttle {
 public:
  Throttle(uint32_t capacity, const dt_policy &pol, bool coarse_clock = false);
  // A variant of the object built from the same source (build/ablate/: `bench ablate`), loaded
  // the same way; only fd.xdp, fd.buckets, fd.stats and fd.config are filled.
  Throttle(uint32_t capacity, const dt_policy &pol, const std::string &object_path);

  // The programs' and maps' fds the parts use, filled once the object is loaded.
  struct Fds {
    int xdp = -1, tc = -1, debit = -1, collect = -1;                         // programs
    int buckets = -1, stats = -1, debit_batch = -1, config = -1, ring = -1;  // maps
    int stage = -1, collect_batch = -1, prefix_policy = -1;
    int lists_v4 = -1, lists_v6 = -1, list_stats = -1;      // allow/deny lists
    int capture_ctl = -1, capture_cpu = -1;                 // agent capture
    int verified = -1, verified_ring = -1, syncookie = -1;  // SYN cookies
    int features = -1;                                      // which lists and bans are in force
  } fd;
  dt::RuleMaps rule_maps() const;

  dt_stats stats() const;

  // The bucket of `key` (false: none).
  bool bucket(const dt_key &key, dt_bucket *out) const;

  // A second dthrottle object, opened but not loaded, whose dt_xdp (its only program to load)
  // shares this one's maps and settings: what --attach xdp-multi hands libxdp (`bench multi`).
  std::unique_ptr<dthrottle_bpf, SkeletonDestroyer> open_xdp_sibling() const;

 private:
  std::unique_ptr<dthrottle_bpf, SkeletonDestroyer> skel_;
  std::unique_ptr<bpf_object, SkeletonDestroyer> obj_;  // a variant's
};

// dt_bench_replay over a bench object of its own: every repetition starts from the same
// frame (whatever the target made of the last), with `throttle`'s verified source `key`
// expired, so a handshake ACK is checked anew each time.
class Replayer {
 public:
  explicit Replayer(const Throttle &throttle);

  int empty_fd() const;  // dt_bench_empty, for the wrapper's own cost

  // Runs `repeat` repetitions of `frame` through the wrapper into `target`. Returns thread
  // CPU ns per frame; *retval is the last repetition's verdict.
  double run(int target, const std::vector<uint8_t> &frame, const dt_key &key, uint32_t repeat, uint32_t *retval);

 private:
  std::unique_ptr<bench_bpf, SkeletonDestroyer> skel_;
};

// The wrapper program and its bench-only targets.
class Rotator {
 public:
  Rotator();

  // The targets' fds: the LRU baseline, the one that also reads the clock, the read-only
  // drop path, the empty program, the counted bucket in debt (two locked instructions) and
  // the counted drop (the read-only drop path + a clock bound + the source's per-CPU slot).
  struct Fds {
    int baseline = -1, clock = -1, readonly = -1, empty = -1, counted = -1, counted_drop = -1;
  } fd;

  // Sources base, base+1, ... (the IPv4 address, or the IPv6 address's last word).
  void set_sources(bool ipv6, uint32_t base_host_order, uint32_t n);

  // Runs `repeat` frames through the wrapper into `target`, starting at the first
  // source. Returns thread CPU ns per frame; *retval is the last frame's verdict.
  double run(int target, const std::vector<uint8_t> &frame, uint32_t repeat, uint32_t *retval);

  // Entries of the baselines' maps (to check nothing was evicted).
  long baseline_entries() const;
  long clock_entries() const;

 private:
  std::unique_ptr<bench_bpf, SkeletonDestroyer> skel_;
};

}  // namespace dt::bench
