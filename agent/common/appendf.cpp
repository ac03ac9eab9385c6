// appendf.cpp - printf onto the end of a std::string.
#include "common/appendf.h"

#include <cstdarg>
#include <cstdio>

namespace dt {

void appendf(std::string *out, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n <= 0) return;
  if (static_cast<size_t>(n) < sizeof buf) {
    out->append(buf, static_cast<size_t>(n));
    return;
  }
  // Longer than the buffer (a long pin directory or rule name): format again in place.
  const size_t at = out->size();
  out->resize(at + static_cast<size_t>(n) + 1);
  va_start(ap, fmt);
  vsnprintf(out->data() + at, static_cast<size_t>(n) + 1, fmt, ap);
  va_end(ap);
  out->resize(at + static_cast<size_t>(n));
}

}  // namespace dt
