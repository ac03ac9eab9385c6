// capture_control.cpp - the lease on the sampler: written whole by this process only (the
// kernel only clears a lapsed lease, with a compare-and-swap), in two steps when arming so
// that no packet sees the new lease with the old expiry.
#include "capture/capture_control.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/clock.h"
#include "common/program_name.h"
#include "dataplane/map_reader.h"
#include "dthrottle/common.h"

namespace dt {
namespace {

// A lease number no other capture is likely to hold (never 0: 0 is off).
uint32_t new_lease() {
  uint32_t v = 0;
  if (getrandom(&v, sizeof v, 0) != sizeof v) v = static_cast<uint32_t>(getpid() ^ mono_now_ns());
  return v ? v : 1;
}

int open_pin(const std::string &pin_dir, const char *name) { return bpf_obj_get((pin_dir + "/" + name).c_str()); }

}  // namespace

dt_capture_ctl capture_ctl_for(const CaptureFilter &f, uint32_t lease, uint64_t expires_ns) {
  dt_capture_ctl c{};
  c.lease = lease;
  c.per_cpu_rate = f.per_cpu_rate;
  c.expires_ns = expires_ns;
  c.verdicts = f.verdicts;
  c.snaplen = f.snaplen;
  if (f.has_rule) {
    c.filters |= DT_CAP_FILTER_RULE;
    c.rule = f.rule;
  }
  if (f.has_source) {
    c.filters |= DT_CAP_FILTER_SOURCE;
    // The mapped form holds an IPv4 prefix in its last 32 bits, after 96 fixed ones.
    const unsigned bits = f.source.len + (f.source.is_v6 ? 0u : 96u);
    for (unsigned i = 0; i < 16; i++) {
      const unsigned in_byte = bits > i * 8 ? std::min(bits - i * 8, 8u) : 0u;
      c.src_mask[i] = static_cast<uint8_t>(0xff00u >> in_byte);
      c.src[i] = f.source.addr[i] & c.src_mask[i];
    }
  }
  return c;
}

int read_capture_counts(int cpu_fd, CaptureCounts *out) {
  dt_capture_cpu sum{};
  const int rc = sum_per_cpu(cpu_fd, 0, &sum);
  *out = {sum.captured, sum.sampled_out, sum.ring_full};
  return rc;
}

CaptureControl::~CaptureControl() {
  disarm();
  for (int fd : {ctl_fd_, ring_fd_, cpu_fd_, names_fd_})
    if (fd >= 0) ::close(fd);
}

bool CaptureControl::open(const std::string &pin_dir, std::string *err) {
  ctl_fd_ = open_pin(pin_dir, DT_MAP_CAPTURE_CTL);
  if (ctl_fd_ < 0) {
    const int e = errno;
    const int stats_fd = open_pin(pin_dir, DT_MAP_STATS);
    if (stats_fd < 0)
      return *err = "no throttle's maps are pinned in " + pin_dir +
                    ": is an agent running with these pins (its --iface, or its --pin-dir)?",
             false;
    ::close(stats_fd);
    *err = "the throttle pinned in " + pin_dir + " has no capture maps (" + strerror(e) +
           "): it was started by an older agent; restart it with this version";
    return false;
  }
  ring_fd_ = open_pin(pin_dir, DT_MAP_CAPTURE_RING);
  cpu_fd_ = open_pin(pin_dir, DT_MAP_CAPTURE_CPU);
  names_fd_ = open_pin(pin_dir, DT_MAP_RULE_NAMES);
  if (ring_fd_ < 0 || cpu_fd_ < 0)
    return *err = "cannot open the capture maps in " + pin_dir + ": " + strerror(errno), false;
  return true;
}

bool CaptureControl::read_ctl(dt_capture_ctl *c, std::string *err) {
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(ctl_fd_, &zero, c) != 0)
    return *err = std::string("cannot read the capture control: ") + strerror(errno), false;
  return true;
}

bool CaptureControl::write_ctl(const dt_capture_ctl &c, std::string *err) {
  uint32_t zero = 0;
  if (bpf_map_update_elem(ctl_fd_, &zero, &c, BPF_ANY) != 0)
    return *err = std::string("cannot write the capture control: ") + strerror(errno), false;
  return true;
}

bool CaptureControl::arm(const CaptureFilter &f, std::string *err) {
  dt_capture_ctl now{};
  if (!read_ctl(&now, err)) return false;
  const uint64_t t = mono_now_ns();
  if (now.lease != 0 && now.expires_ns > t) {
    *err = "another capture is running on this throttle (its lease ends within " +
           std::to_string((now.expires_ns - t + 999'999'999) / 1'000'000'000) +
           " s unless renewed): one capture at a time; wait for it to end, or stop it";
    return false;
  }
  filter_ = f;
  const uint32_t lease = new_lease();
  armed_at_ns_ = t;
  // First everything but the lease, then the lease: a packet never sees it with an old expiry.
  if (!write_ctl(capture_ctl_for(f, 0, t + DT_CAPTURE_LEASE_NS), err) ||
      !write_ctl(capture_ctl_for(f, lease, t + DT_CAPTURE_LEASE_NS), err))
    return false;
  lease_ = lease;
  dt_capture_ctl check{};
  if (!read_ctl(&check, err)) return false;
  if (check.lease != lease) {
    lease_ = 0;
    return *err = "another capture started at the same moment and took the sampler: one capture at a time", false;
  }
  return true;
}

bool CaptureControl::renew(std::string *err) {
  if (!lease_) return *err = "the capture is not armed", false;
  dt_capture_ctl now{};
  if (!read_ctl(&now, err)) return false;
  if (now.lease != 0 && now.lease != lease_) {
    lease_ = 0;
    return *err = "another capture took the sampler over (this one's lease had lapsed)", false;
  }
  return write_ctl(capture_ctl_for(filter_, lease_, mono_now_ns() + DT_CAPTURE_LEASE_NS), err);
}

void CaptureControl::disarm() {
  if (!lease_ || ctl_fd_ < 0) return;
  std::string ignored;
  dt_capture_ctl now{};
  if (read_ctl(&now, &ignored) && (now.lease == lease_ || now.lease == 0))
    write_ctl(capture_ctl_for(filter_, 0, 0), &ignored);
  lease_ = 0;
}

}  // namespace dt
