// parse_values.cpp - strict parsers for command-line values.
#include "common/parse_values.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dthrottle/common.h"

namespace dt {
namespace {

// Parses a finite, non-negative decimal number that fills [s, s+len) exactly.
bool parse_number(const std::string &s, double *out) {
  if (s.empty() || s[0] == '-' || s[0] == '+' || isspace(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)  // no hex floats, no "inf"/"nan", no exponents with letters
    if (!(isdigit(static_cast<unsigned char>(c)) || c == '.')) return false;
  errno = 0;
  char *end = nullptr;
  double v = strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

struct ByteUnit {
  const char *name;
  double bytes;
};
constexpr ByteUnit kUnitTable[] = {{"B", 1},        {"kB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
                                   {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"bit", 0.125},
                                   {"kbit", 125.0}, {"Mbit", 125000.0}, {"Gbit", 125000000.0}};

// Splits "10kB" into "10" and "kB" (the unit starts at the first letter).
void split_unit(const std::string &s, std::string *num, std::string *unit) {
  size_t i = 0;
  while (i < s.size() && (isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) i++;
  *num = s.substr(0, i);
  *unit = s.substr(i);
}

// Bytes per unit, 0 if `unit` is none of kUnitTable.
double unit_bytes(const std::string &unit) {
  for (const auto &u : kUnitTable)
    if (unit == u.name) return u.bytes;
  return 0;
}

std::string unknown_unit(const std::string &s, const std::string &unit, const char *example) {
  return "unknown unit '" + unit + "' in '" + s + "': use " + kByteUnits + ", e.g. " + example;
}

}  // namespace

const char kByteUnits[] = "B, kB, MB, GB (1000), KiB, MiB, GiB (1024) or bit, kbit, Mbit, Gbit (bits)";

bool parse_rate(const std::string &s, double *per_second, std::string *err) {
  bool bytes = false;
  if (!parse_budget_rate(s, per_second, &bytes, err)) return false;
  if (bytes) {
    *err = "rate '" + s +
           "' is in bytes, but this limit counts packets (or queries): give a number per second such as 100";
    return false;
  }
  return true;
}

bool parse_budget_rate(const std::string &s, double *per_second, bool *bytes, std::string *err) {
  std::string num = s;
  double unit = 1.0;
  static const struct {
    const char *suffix;
    double seconds;
  } kUnits[] = {{"/s", 1.0}, {"/m", 60.0}, {"/min", 60.0}, {"/h", 3600.0}};
  for (const auto &u : kUnits) {
    size_t n = strlen(u.suffix);
    if (num.size() > n && num.compare(num.size() - n, n, u.suffix) == 0) {
      num.resize(num.size() - n);
      unit = u.seconds;
      break;
    }
  }
  std::string digits, name;
  split_unit(num, &digits, &name);
  const double per_unit = name.empty() ? 1.0 : unit_bytes(name);
  double v;
  if (!name.empty() && per_unit == 0 && !digits.empty()) {
    *err = unknown_unit(s, name, "100kB/s or 10Mbit/s");
    return false;
  }
  if (!parse_number(digits, &v)) {
    *err =
        "invalid rate '" + s +
        "': expected packets per second such as 100, 0.1666 or 10/m, or bytes per second such as 100kB/s or 10Mbit/s";
    return false;
  }
  v = v * per_unit / unit;
  if (v <= 0.0) {
    *err = "invalid rate '" + s + "': must be greater than 0";
    return false;
  }
  *per_second = v;
  *bytes = !name.empty();
  return true;
}

bool parse_budget_burst(const std::string &s, uint64_t *tokens, bool *bytes, std::string *err) {
  std::string digits, name;
  split_unit(s, &digits, &name);
  if (name.empty()) {
    *bytes = false;
    return parse_count(s, 1, DT_BURST_MAX, tokens, err);
  }
  if (name.find('/') != std::string::npos) {
    *err = "invalid burst '" + s + "': a burst is an amount, not a rate: drop the '/...', e.g. 10kB";
    return false;
  }
  const double per_unit = unit_bytes(name);
  double v;
  if (per_unit == 0 && !digits.empty()) {
    *err = unknown_unit(s, name, "10kB or 64KiB");
    return false;
  }
  if (!parse_number(digits, &v) || v * per_unit < 1 || v * per_unit > static_cast<double>(DT_BURST_MAX)) {
    *err = "invalid burst '" + s + "': expected packets (1 to 1000000000) or bytes such as 15kB (1 B to 1 GB)";
    return false;
  }
  const double b = v * per_unit;
  if (std::fabs(b - std::round(b)) > 1e-6 * b) {
    *err = "invalid burst '" + s + "': is " + std::to_string(b) + " bytes, not a whole number of bytes";
    return false;
  }
  *tokens = static_cast<uint64_t>(std::llround(b));
  *bytes = true;
  return true;
}

std::string budget_unit_mismatch(bool rate_bytes, bool burst_bytes, const std::string &rate_src,
                                 const std::string &burst_src) {
  if (rate_bytes == burst_bytes) return "";
  if (burst_bytes)
    return rate_src + " is in packets but " + burst_src +
           " is in bytes: give both in bytes (e.g. a rate of 100kB/s), or both in packets";
  return rate_src + " is in bytes but " + burst_src +
         " is in packets: give both in bytes (e.g. a burst of 15kB), or both in packets";
}

std::string format_bytes(double bytes) {
  static const char *kPrefix[] = {"", "k", "M", "G", "T"};
  int i = 0;
  while (i < 4 && std::fabs(bytes) >= 1000) {
    bytes /= 1000;
    i++;
  }
  char buf[48];
  snprintf(buf, sizeof buf, "%.4g %sB", bytes, kPrefix[i]);
  return buf;
}

bool parse_duration(const std::string &s, uint64_t *ns, std::string *err) {
  static const struct {
    const char *suffix;
    double ns;
  } kUnits[] = {{"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
  std::string num = s;
  double unit = 1e9;
  for (const auto &u : kUnits) {
    size_t n = strlen(u.suffix);
    if (num.size() > n && num.compare(num.size() - n, n, u.suffix) == 0 &&
        (isdigit(static_cast<unsigned char>(num[num.size() - n - 1])) || num[num.size() - n - 1] == '.')) {
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

bool parse_count(const std::string &s, uint64_t min, uint64_t max, uint64_t *out, std::string *err) {
  bool ok = !s.empty() && s.size() <= 20;
  for (char c : s) ok = ok && isdigit(static_cast<unsigned char>(c));
  unsigned long long v = 0;
  if (ok) {
    errno = 0;
    v = strtoull(s.c_str(), nullptr, 10);
    ok = errno == 0;
  }
  if (!ok || v < min || v > max) {
    *err =
        "invalid value '" + s + "': expected a whole number from " + std::to_string(min) + " to " + std::to_string(max);
    return false;
  }
  *out = v;
  return true;
}

}  // namespace dt
