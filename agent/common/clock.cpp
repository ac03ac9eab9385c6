// clock.cpp - the clocks the agent reads.
#include "common/clock.h"

#include <chrono>
#include <ctime>

namespace dt {

uint64_t mono_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint32_t coarse_clock_lag_ns() {
  timespec res{};
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0 || res.tv_sec != 0) return 0;
  const uint64_t lag = 2 * static_cast<uint64_t>(res.tv_nsec);
  return lag > 100'000'000ull ? 0 : static_cast<uint32_t>(lag);
}

uint64_t unix_now_ms() {
  using namespace std::chrono;
  return static_cast<uint64_t>(duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
}

long long sent_ago_ms(uint64_t sent_unix_ms) {
  return static_cast<long long>(unix_now_ms()) - static_cast<long long>(sent_unix_ms);
}

}  // namespace dt
