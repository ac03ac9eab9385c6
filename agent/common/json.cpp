// json.cpp - numbers as printed, and compact output that never throws on bad UTF-8.
#include "common/json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dt {

Json printed_number(const char *format, double v) {
  if (!std::isfinite(v)) return nullptr;
  char text[512];  // "%.3f" of 1e308 needs 313
  snprintf(text, sizeof text, format, v);
  if (!strpbrk(text, ".eE")) {
    errno = 0;
    const long long whole = strtoll(text, nullptr, 10);
    if (errno == 0) return whole;
  }
  return strtod(text, nullptr);
}

std::string dump_json(const Json &j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace dt
