// programs.h - the programs under test: a dthrottle object loaded unpinned (Throttle) and
// the bench-only wrapper that gives every repetition of a test run the next source (Rotator).
// Only programs.cpp includes the skeletons, so only it is rebuilt when a BPF program changes.
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/policy.h"
#include "dthrottle/common.h"

struct dthrottle_bpf;
struct bench_bpf;

namespace dt::bench {

// One dthrottle object (dt_xdp, dt_debit, dt_collect and their maps), loaded from the skeleton
// with nothing pinned, its bucket map sized `capacity`, rule 0 set to `pol`.
class Throttle {
 public:
  Throttle(uint32_t capacity, const dt_policy &pol, bool coarse_clock = false);
  ~Throttle();
  Throttle(const Throttle &) = delete;
  Throttle &operator=(const Throttle &) = delete;

  int xdp_fd() const;
  int tc_fd() const;
  int debit_fd() const;
  int buckets_fd() const;
  int stats_fd() const;
  int batch_fd() const;
  int config_fd() const;
  int ring_fd() const;
  int stage_fd() const;
  int collect_batch_fd() const;
  int collect_fd() const;
  int prefix_policy_fd() const;
  dt::RuleMaps rule_maps() const;

  dt_stats stats() const;

 private:
  dthrottle_bpf *skel_ = nullptr;
};

// The wrapper program and its bench-only targets.
class Rotator {
 public:
  Rotator();
  ~Rotator();
  Rotator(const Rotator &) = delete;
  Rotator &operator=(const Rotator &) = delete;

  int baseline_fd() const;
  int readonly_fd() const;
  int empty_fd() const;

  // Sources base, base+1, ... (the IPv4 address, or the IPv6 address's last word).
  void set_sources(bool ipv6, uint32_t base_host_order, uint32_t n);

  // Runs `repeat` frames through the wrapper into `target`, starting at the first
  // source. Returns thread CPU ns per frame; *retval is the last frame's verdict.
  double run(int target, const std::vector<uint8_t> &frame, uint32_t repeat, uint32_t *retval);

  // Entries of the baseline map (to check nothing was evicted).
  long baseline_entries() const;

 private:
  bench_bpf *skel_ = nullptr;
};

}  // namespace dt::bench
