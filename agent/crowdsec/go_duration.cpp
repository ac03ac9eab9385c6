// go_duration.cpp - Go's time.Duration text, parsed with every step bounded.
#include "crowdsec/go_duration.h"

#include <cstddef>

namespace dt {
namespace {

// The unit at the start of `s` in ns, and its length in bytes; 0 if none.
int64_t unit_ns(std::string_view s, size_t *len) {
  static const struct {
    std::string_view name;
    int64_t ns;
  } kUnits[] = {
      {"ns", 1},         {"us", 1'000},        {"\xc2\xb5s", 1'000},  {"\xce\xbcs", 1'000},
      {"ms", 1'000'000}, {"s", 1'000'000'000}, {"m", 60'000'000'000}, {"h", 3'600'000'000'000},
  };
  for (const auto &u : kUnits) {  // "ms" before "m" and "s": longest first where they share
    if (s.substr(0, u.name.size()) == u.name) {
      *len = u.name.size();
      return u.ns;
    }
  }
  return 0;
}

// One number-unit pair at the start of `s`, added to *total (bounded by max_abs);
// *used: its length. Digits past what an int64 holds only matter in the fraction,
// where the extra ones are dropped.
bool parse_term(std::string_view s, int64_t max_abs, size_t *used, int64_t *total) {
  size_t i = 0;
  int64_t whole = 0;
  bool digits = false;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; i++, digits = true) {
    if (whole > max_abs / 10) return false;
    whole = whole * 10 + (s[i] - '0');
  }
  int64_t frac = 0, scale = 1;
  if (i < s.size() && s[i] == '.') {
    for (i++; i < s.size() && s[i] >= '0' && s[i] <= '9'; i++, digits = true) {
      if (scale < 1'000'000'000'000'000) frac = frac * 10 + (s[i] - '0'), scale *= 10;
    }
  }
  size_t unit_len = 0;
  const int64_t unit = digits ? unit_ns(s.substr(i), &unit_len) : 0;
  if (unit == 0) return false;
  if (whole > (max_abs - *total) / unit) return false;
  // frac / scale of a unit: scale is at most 1e18, unit at most 3.6e12; split to stay in range.
  const long double part = static_cast<long double>(frac) * unit / scale;
  const int64_t value = whole * unit + static_cast<int64_t>(part);
  if (value > max_abs - *total) return false;
  *total += value;
  *used = i + unit_len;
  return true;
}

}  // namespace

bool parse_go_duration(std::string_view text, int64_t max_abs_ns, int64_t *ns) {
  if (max_abs_ns < 0) return false;
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text == "0") return *ns = 0, true;
  if (text.empty()) return false;
  int64_t total = 0;
  while (!text.empty()) {
    size_t used = 0;
    if (!parse_term(text, max_abs_ns, &used, &total)) return false;
    text.remove_prefix(used);
  }
  *ns = negative ? -total : total;
  return true;
}

}  // namespace dt
