// log.h - one line per event on stderr: "<UTC time> <LEVEL> <message>".
#pragma once

#include <cstdarg>

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
