// log.cpp - timestamps, levels, and libbpf's messages folded into ours.
#include "common/log.h"

#include <bpf/libbpf.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>

namespace dt {
namespace {
LogLevel g_level = LogLevel::Info;
std::mutex g_mu;

const char *level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Debug: return "DEBUG";
    case LogLevel::Info: return "INFO";
    case LogLevel::Warn: return "WARN";
    case LogLevel::Error: return "ERROR";
  }
  return "?";
}

void vlog(LogLevel level, const char *fmt, va_list ap) {
  if (level < g_level) return;
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  size_t n = strlen(msg);
  while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  gmtime_r(&ts.tv_sec, &t);
  char when[32];
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &t);
  std::lock_guard<std::mutex> lock(g_mu);
  fprintf(stderr, "%s.%03ldZ %-5s %s\n", when, ts.tv_nsec / 1000000, level_name(level), msg);
}

int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
  vlog(level == LIBBPF_WARN ? LogLevel::Warn : LogLevel::Debug, fmt, ap);
  return 0;
}
}  // namespace

void set_log_level(LogLevel level) { g_level = level; }
LogLevel log_level() { return g_level; }

bool parse_log_level(const char *s, LogLevel *out) {
  static const struct {
    const char *name;
    LogLevel level;
  } kLevels[] = {
      {"debug", LogLevel::Debug}, {"info", LogLevel::Info}, {"warn", LogLevel::Warn}, {"error", LogLevel::Error}};
  for (const auto &l : kLevels) {
    if (strcmp(s, l.name) == 0) {
      *out = l.level;
      return true;
    }
  }
  return false;
}

void logf(LogLevel level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(level, fmt, ap);
  va_end(ap);
}

void route_libbpf_log() { libbpf_set_print(libbpf_print); }

void log_limited(LogLimiter &limiter, LogLevel level, uint64_t now_ns, const char *fmt, ...) {
  uint64_t suppressed = 0;
  if (!limiter.allow(now_ns, &suppressed)) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (suppressed) logf(level, "%s [%llu similar lines suppressed]", line, static_cast<unsigned long long>(suppressed));
  else logf(level, "%s", line);
}

}  // namespace dt
