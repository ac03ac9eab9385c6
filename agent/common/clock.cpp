// clock.cpp - the clocks the agent reads.
#include "common/clock.h"

#include <ctime>

namespace dt {

uint64_t mono_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace dt
