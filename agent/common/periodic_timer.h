// periodic_timer.h - a deadline that comes back every period, for a poll loop. The loop
// asks each timer whether it is due and sleeps until the earliest deadline.
#pragma once

#include <algorithm>
#include <cstdint>

namespace dt {

class PeriodicTimer {
 public:
  PeriodicTimer() = default;  // due at once, every time (until assigned a period)
  // First due at first_due_ns, then every period_ns.
  PeriodicTimer(uint64_t period_ns, uint64_t first_due_ns) : period_ns_(period_ns), due_ns_(first_due_ns) {}

  bool due(uint64_t now_ns) const { return now_ns >= due_ns_; }
  uint64_t deadline() const { return due_ns_; }
  uint64_t period() const { return period_ns_; }

  // The tick of the deadline was served at now_ns: the next one is a period after the
  // deadline (ticks keep their pace when the loop wakes a little late), or a period
  // after now if the loop was held up past it (no burst of catch-up ticks).
  void advance(uint64_t now_ns) {
    due_ns_ += period_ns_;
    if (due_ns_ <= now_ns) due_ns_ = now_ns + period_ns_;
  }

  // Milliseconds from now_ns to deadline_ns (rounded up, so the loop never wakes
  // before it; 0 if it has passed), for poll().
  static long timeout_ms(uint64_t now_ns, uint64_t deadline_ns) {
    return deadline_ns > now_ns ? static_cast<long>((deadline_ns - now_ns + 999'999) / 1'000'000) : 0;
  }

 private:
  uint64_t period_ns_ = 0;
  uint64_t due_ns_ = 0;
};

}  // namespace dt
