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

}  // namespace dt
