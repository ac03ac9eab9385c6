// clock.h - the clocks the agent reads.
#pragma once

#include <cstdint>

namespace dt {

// CLOCK_MONOTONIC in ns: the clock bpf_ktime_get_ns() reads.
uint64_t mono_now_ns();

// How far CLOCK_MONOTONIC_COARSE (bpf_ktime_get_coarse_ns) may lag CLOCK_MONOTONIC:
// twice its resolution (one tick), for margin; 0 if it cannot be read or is
// implausible (over 100 ms), which turns the kernel's coarse-clock shortcut off.
uint32_t coarse_clock_lag_ns();

// The wall clock (CLOCK_REALTIME) in ms since the Unix epoch: when a report was sent or a
// ban was set, as other hosts read it.
uint64_t unix_now_ms();

// How long ago by this host's wall clock (ms; negative if ahead of it) a peer stamped
// sent_unix_ms (unix_now_ms() on its side).
long long sent_ago_ms(uint64_t sent_unix_ms);

}  // namespace dt
