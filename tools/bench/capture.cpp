// capture.cpp - Part 1f (`bench capture`): what agent capture's sampler costs the drop path
// (bpf/capture.bpf.h, docs/capture.md): dt_xdp dropping one source's frames with no capture
// (the lease is 0: one flag test), with a capture of drops running (every frame passes the
// filters; all but K per second are sampled out: a flood), and with a capture whose --rule
// matches nothing. Rounds alternate the three.
#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench/measure.h"
#include "bench/parts.h"
#include "bench/programs.h"
#include "capture/capture_control.h"
#include "common/clock.h"
#include "dataplane/map_reader.h"

namespace dt::bench {
namespace {

// Writes the capture control: off (lease 0), or `f` under a lease of an hour.
void set_capture(int ctl_fd, const CaptureFilter *f) {
  const dt_capture_ctl c = f ? capture_ctl_for(*f, 1, mono_now_ns() + 3'600'000'000'000ull) : dt_capture_ctl{};
  uint32_t zero = 0;
  if (bpf_map_update_elem(ctl_fd, &zero, &c, BPF_ANY) != 0) die("cannot write capture_ctl: %s", strerror(errno));
}

}  // namespace

void capture_part() {
  constexpr uint32_t kRepeat = 3'000'000;
  Throttle drop(kBucketCapacity, policy_or_die(DT_RATE_MIN, 1));
  const std::vector<uint8_t> frame = make_frame(false);
  CaptureFilter drops;  // the default capture: dropped and would-drop, 100 per second per CPU
  CaptureFilter other_rule = drops;
  other_rule.has_rule = true;
  other_rule.rule = 7;
  struct Row {
    const char *name;
    const CaptureFilter *filter;
    std::vector<double> ns;
  } rows[] = {
      {"no capture", nullptr, {}}, {"capture of drops", &drops, {}}, {"capture, --rule misses", &other_rule, {}}};
  uint32_t retval = 0;
  run_direct(drop.fd.xdp, frame, 1000, &retval);  // the bucket created and emptied
  for (int round = 0; round < kRounds; round++)
    for (int i = 0; i < 3; i++) {
      Row &r = rows[(round + i) % 3];
      set_capture(drop.fd.capture_ctl, r.filter);
      r.ns.push_back(run_direct(drop.fd.xdp, frame, kRepeat, &retval));
      if (retval != XDP_DROP) die("%s: the last frame returned %u, expected XDP_DROP", r.name, retval);
    }
  set_capture(drop.fd.capture_ctl, nullptr);
  dt_capture_cpu counts{};
  sum_per_cpu(drop.fd.capture_cpu, 0, &counts);
  if (!counts.captured || !counts.sampled_out) die("the capture rows sampled nothing: the sampler did not run");
  const double base = median(rows[0].ns);
  printf("\nPart 1f: agent capture, one IPv4 source's drop path (dt_xdp, ns per frame, median of %d)\n", kRounds);
  for (const Row &r : rows) printf("  %-24s %6.1f   %.2fx\n", r.name, median(r.ns), median(r.ns) / base);
  printf("  (capture of drops: every frame passes the filters and the clock is read; %llu sampled, %llu sampled out)\n",
         static_cast<unsigned long long>(counts.captured), static_cast<unsigned long long>(counts.sampled_out));
}

}  // namespace dt::bench
