// log.h - one line per event on stderr: "<UTC time> <LEVEL> <message>".
#pragma once

#include <cstdarg>
#include <cstdint>

namespace dt {

enum class LogLevel { Debug = 0, Info, Warn, Error };

void set_log_level(LogLevel level);
LogLevel log_level();
// Parses "debug", "info", "warn", "error"; returns false on anything else.
bool parse_log_level(const char *s, LogLevel *out);

void logf(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define DT_DEBUG(...) ::dt::logf(::dt::LogLevel::Debug, __VA_ARGS__)
#define DT_INFO(...) ::dt::logf(::dt::LogLevel::Info, __VA_ARGS__)
#define DT_WARN(...) ::dt::logf(::dt::LogLevel::Warn, __VA_ARGS__)
#define DT_ERROR(...) ::dt::logf(::dt::LogLevel::Error, __VA_ARGS__)

// Routes libbpf's own messages into our log (warnings at Warn, the rest at Debug).
void route_libbpf_log();

}  // namespace dt

namespace dt {

// Lets through at most `burst` log lines per `interval_ns`; counts the rest, so a
// flood of bad input cannot fill a disk. allow() reports how many were suppressed
// since the last line it let through.
class LogLimiter {
 public:
  LogLimiter(uint64_t interval_ns, unsigned burst) : interval_ns_(interval_ns), burst_(burst) {}
  bool allow(uint64_t now_ns, uint64_t *suppressed) {
    if (now_ns - window_start_ >= interval_ns_) {
      window_start_ = now_ns;
      in_window_ = 0;
    }
    if (in_window_ >= burst_) {
      suppressed_++;
      return false;
    }
    in_window_++;
    *suppressed = suppressed_;
    suppressed_ = 0;
    return true;
  }

 private:
  uint64_t interval_ns_;
  unsigned burst_;
  uint64_t window_start_ = 0;
  unsigned in_window_ = 0;
  uint64_t suppressed_ = 0;
};

// One line through `limiter` at `level`, ending with " [N similar lines suppressed]" when
// it held lines back since the last one it let through.
void log_limited(LogLimiter &limiter, LogLevel level, uint64_t now_ns, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

}  // namespace dt
