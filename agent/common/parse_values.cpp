// parse_values.cpp - strict parsers for command-line values.
#include "common/parse_values.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace dt {
namespace {

// Parses a finite, non-negative decimal number that fills [s, s+len) exactly.
bool parse_number(const std::string &s, double *out) {
  if (s.empty() || s[0] == '-' || s[0] == '+' || isspace(static_cast<unsigned char>(s[0])))
    return false;
  for (char c : s)  // no hex floats, no "inf"/"nan", no exponents with letters
    if (!(isdigit(static_cast<unsigned char>(c)) || c == '.')) return false;
  errno = 0;
  char *end = nullptr;
  double v = strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

bool parse_rate(const std::string &s, double *per_second, std::string *err) {
  std::string num = s;
  double unit = 1.0;
  static const struct { const char *suffix; double seconds; } kUnits[] = {
      {"/s", 1.0}, {"/m", 60.0}, {"/min", 60.0}, {"/h", 3600.0}};
  for (const auto &u : kUnits) {
    size_t n = strlen(u.suffix);
    if (num.size() > n && num.compare(num.size() - n, n, u.suffix) == 0) {
      num.resize(num.size() - n);
      unit = u.seconds;
      break;
    }
  }
  double v;
  if (!parse_number(num, &v)) {
    *err = "invalid rate '" + s +
           "': expected packets per second such as 100, 0.1666 or 10/m";
    return false;
  }
  v /= unit;
  if (v <= 0.0) {
    *err = "invalid rate '" + s + "': must be greater than 0";
    return false;
  }
  *per_second = v;
  return true;
}

bool parse_duration(const std::string &s, uint64_t *ns, std::string *err) {
  static const struct { const char *suffix; double ns; } kUnits[] = {
      {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
  std::string num = s;
  double unit = 1e9;
  for (const auto &u : kUnits) {
    size_t n = strlen(u.suffix);
    if (num.size() > n && num.compare(num.size() - n, n, u.suffix) == 0 &&
        (isdigit(static_cast<unsigned char>(num[num.size() - n - 1])) ||
         num[num.size() - n - 1] == '.')) {
      num.resize(num.size() - n);
      unit = u.ns;
      break;
    }
  }
  double v;
  if (!parse_number(num, &v) || v * unit < 1.0 || v * unit > 1e18) {
    *err = "invalid duration '" + s + "': expected a positive time such as 200ms, 1s or 1.5s";
    return false;
  }
  *ns = static_cast<uint64_t>(std::llround(v * unit));
  return true;
}

bool parse_count(const std::string &s, uint64_t min, uint64_t max, uint64_t *out,
                 std::string *err) {
  bool ok = !s.empty() && s.size() <= 20;
  for (char c : s) ok = ok && isdigit(static_cast<unsigned char>(c));
  unsigned long long v = 0;
  if (ok) {
    errno = 0;
    v = strtoull(s.c_str(), nullptr, 10);
    ok = errno == 0;
  }
  if (!ok || v < min || v > max) {
    *err = "invalid value '" + s + "': expected a whole number from " + std::to_string(min) +
           " to " + std::to_string(max);
    return false;
  }
  *out = v;
  return true;
}

}  // namespace dt
