// capture_control.h - a capture's hold on the packet path's sampler (dthrottle/capture.h):
// the pinned capture maps of one throttle, the lease that switches sampling on and keeps
// it on while renewed, and the sampler's counters.
#pragma once

#include <cstdint>
#include <string>

#include "bans/ban_types.h"
#include "common/no_copy.h"
#include "dthrottle/capture.h"

namespace dt {

// What the kernel samples: the verdicts, the rule and source filters, how much and how often.
struct CaptureFilter {
  uint8_t verdicts = DT_CAP_DROPPED | DT_CAP_WOULD_DROP;  // DT_CAP_* mask
  bool has_rule = false;
  uint16_t rule = 0;  // a rule id, or DT_CAP_RULE_*
  bool has_source = false;
  BanPrefix source;        // --source: an address or prefix
  uint16_t snaplen = 128;  // 1 .. DT_CAPTURE_MAX_SNAPLEN
  uint32_t per_cpu_rate = DT_CAPTURE_DEFAULT_RATE;
};

// The control element a filter and a lease make (the kernel's view of them).
dt_capture_ctl capture_ctl_for(const CaptureFilter &f, uint32_t lease, uint64_t expires_ns);

// The sampler's counters, summed over CPUs.
struct CaptureCounts {
  uint64_t captured = 0, sampled_out = 0, ring_full = 0;
};
// Reads them from the per-CPU map capture_cpu: 0 or -errno (-EBADF for cpu_fd < 0).
int read_capture_counts(int cpu_fd, CaptureCounts *out);

// One capture's maps and lease. One capture at a time per throttle: arm() refuses while
// another capture's lease holds.
class CaptureControl : NoCopy {
 public:
  CaptureControl() = default;
  ~CaptureControl();  // disarms (if armed) and closes the maps

  // Opens the capture maps pinned in pin_dir. False with a sentence in *err (no agent's
  // pins there, or pins of an agent without capture).
  bool open(const std::string &pin_dir, std::string *err);
  // Switches sampling on with `f` under a new lease (expiring DT_CAPTURE_LEASE_NS from now).
  // False with a sentence in *err: another capture holds a lease, or the maps refused it.
  bool arm(const CaptureFilter &f, std::string *err);
  // Extends the lease (call every second). False with a sentence in *err when another
  // capture has taken the sampler over meanwhile (ours lapsed).
  bool renew(std::string *err);
  // Switches sampling off, if the lease is still ours.
  void disarm();

  int ring_fd() const { return ring_fd_; }
  int cpu_fd() const { return cpu_fd_; }
  int names_fd() const { return names_fd_; }
  uint64_t armed_at_ns() const { return armed_at_ns_; }

 private:
  bool write_ctl(const dt_capture_ctl &c, std::string *err);
  bool read_ctl(dt_capture_ctl *c, std::string *err);

  int ctl_fd_ = -1, ring_fd_ = -1, cpu_fd_ = -1, names_fd_ = -1;
  CaptureFilter filter_;
  uint32_t lease_ = 0;        // ours while armed, else 0
  uint64_t armed_at_ns_ = 0;  // CLOCK_MONOTONIC: records before it are an earlier capture's
};

}  // namespace dt
