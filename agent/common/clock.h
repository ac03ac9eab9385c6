// clock.h - the clocks the agent reads.
#pragma once

#include <cstdint>

namespace dt {

// CLOCK_MONOTONIC in ns: the clock bpf_ktime_get_ns() reads.
uint64_t mono_now_ns();

}  // namespace dt
