// hook.cpp - Part 1b (`bench hook`): dt_xdp and dt_tc (--attach tc) run directly, side by side,
// on one source.
#include <linux/bpf.h>

#include <cstdio>
#include <vector>

#include "bench/measure.h"
#include "bench/parts.h"
#include "bench/programs.h"

namespace dt::bench {

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
  } rows[] = {{"xdp PASS", pass.fd.xdp, XDP_PASS, {}},
              {"tc PASS", pass.fd.tc, static_cast<uint32_t>(-1), {}},
              {"xdp DROP", drop.fd.xdp, XDP_DROP, {}},
              {"tc DROP", drop.fd.tc, 2 /* TC_ACT_SHOT */, {}}};
  uint32_t retval = 0;
  for (Row &r : rows) run_direct(r.fd, frame, 1000, &retval);  // buckets created, drop's emptied
  for (int round = 0; round < kRounds; round++)
    for (int i = 0; i < 4; i++) {
      Row &r = rows[round % 2 ? 3 - i : i];
      r.ns.push_back(run_direct(r.fd, frame, kRepeat, &retval));
      if (retval != r.want)
        die("%s: the last frame returned %d, expected %d", r.name, static_cast<int>(retval), static_cast<int>(r.want));
    }
  printf("\nPart 1b: the hook, one IPv4 source (BPF_PROG_TEST_RUN of dt_xdp and dt_tc, ns per frame, median of %d)\n",
         kRounds);
  for (int i = 0; i < 4; i += 2)
    printf("  %-9s %6.1f   %-9s %6.1f   tc/xdp %.2fx\n", rows[i].name, median(rows[i].ns), rows[i + 1].name,
           median(rows[i + 1].ns), median(rows[i + 1].ns) / median(rows[i].ns));
  printf("  (at tc the kernel has already built an skb for the frame: dropping there saves less than at XDP)\n");
}

}  // namespace dt::bench
