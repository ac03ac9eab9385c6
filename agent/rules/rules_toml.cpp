// rules_toml.cpp - the TOML value readers of the rules file (rules_toml.h). Numbers,
// strings, rates and bursts, adaptive tables, known keys.
#include "rules/rules_toml.h"

#include "adaptive/adaptive.h"
#include "common/parse_values.h"
#include "dataplane/policy.h"

namespace dt {

bool get_number(const Value &v, double *out) {
  if (v.is_integer()) *out = static_cast<double>(v.as_integer());
  else if (v.is_floating()) *out = v.as_floating();
  else return false;
  return true;
}

bool known_keys(const RuleSet &rs, const Value &table, const std::set<std::string> &allowed, const char *what,
                std::string *err) {
  for (const auto &[k, v] : table.as_table()) {
    if (!allowed.count(k)) {
      std::string list;
      for (const auto &a : allowed) list += (list.empty() ? "" : ", ") + a;
      *err = file_line(rs, static_cast<int>(v.location().line())) + "unknown key '" + k + "' in " + what +
             " (known: " + list + ")";
      return false;
    }
  }
  return true;
}

// A rate or burst value as written, for messages: 100, "10Mbit/s".
std::string written(const Value &v) {
  if (v.is_string()) return "\"" + v.as_string().str + "\"";
  if (v.is_integer()) return std::to_string(v.as_integer());
  if (v.is_floating()) {
    char buf[32];
    snprintf(buf, sizeof buf, "%g", v.as_floating());
    return buf;
  }
  return "?";
}

namespace {

// A budget value, 'rate' or 'burst' (`key`): a string `parse` reads (*bytes: with a byte
// unit), or a number of packets `packets` takes; else an error naming `key`: it `must` be.
template <class T>
bool read_budget(const RuleSet &rs, const Value &v, const char *key, T *to, bool *bytes, std::string *err,
                 bool (*parse)(const std::string &, T *, bool *, std::string *), bool (*packets)(const Value &, T *),
                 const char *must) {
  const int line = static_cast<int>(v.location().line());
  std::string why;
  if (v.is_string() && !parse(v.as_string().str, to, bytes, &why))
    return *err = file_line(rs, line) + "'" + key + "': " + why, false;
  if (v.is_string()) return true;
  *bytes = false;
  if (!packets(v, to)) return *err = file_line(rs, line) + "'" + key + "' must be " + must, false;
  return true;
}

bool whole_packets(const Value &v, uint64_t *out) {
  if (!v.is_integer() || v.as_integer() < 1) return false;
  *out = static_cast<uint64_t>(v.as_integer());
  return true;
}

}  // namespace

// 'rate': a number (packets per second) or a string: "10/m", "100kB/s", "10Mbit/s".
bool read_rate(const RuleSet &rs, const Value &r, double *rate, bool *bytes, std::string *err) {
  return read_budget(rs, r, "rate", rate, bytes, err, parse_budget_rate, get_number,
                     "a number of packets per second, or a string such as \"10Mbit/s\"");
}

// 'burst': a whole number of packets, or a string with a byte unit: "15kB".
bool read_burst(const RuleSet &rs, const Value &b, uint64_t *burst, bool *bytes, std::string *err) {
  return read_budget(rs, b, "burst", burst, bytes, err, parse_budget_burst, whole_packets,
                     "a whole number of at least 1, or bytes such as \"15kB\"");
}

// A throttle's rate and burst. `bytes` null: a tag rule, which counts queries only.
bool rate_burst(const RuleSet &rs, const Value &t, int line, double *rate, uint64_t *burst, bool *bytes,
                std::string *err) {
  if (!t.contains("rate") || !t.contains("burst")) {
    *err = file_line(rs, line) + "a throttle needs both 'rate' (per second) and 'burst'";
    return false;
  }
  const Value &r = t.at("rate"), &b = t.at("burst");
  bool rate_bytes = false, burst_bytes = false;
  if (!read_rate(rs, r, rate, &rate_bytes, err) || !read_burst(rs, b, burst, &burst_bytes, err)) return false;
  if (!bytes && (rate_bytes || burst_bytes)) {
    *err = file_line(rs, line) +
           "tag rules count queries, not bytes: give 'rate' and 'burst' as numbers (rate = 100, burst = 50)";
    return false;
  }
  if (std::string m = budget_unit_mismatch(rate_bytes, burst_bytes, "rate = " + written(r), "burst = " + written(b));
      !m.empty())
    return *err = file_line(rs, line) + m, false;
  dt_policy p{};
  std::string why;
  if (!make_policy(*rate, *burst, &p, &why, rate_bytes)) {
    *err = file_line(rs, static_cast<int>(r.location().line())) + why;
    return false;
  }
  if (bytes) *bytes = rate_bytes;
  return true;
}

// `adaptive = true`, or a table of the controller's parameters (adaptive.h).
bool parse_adaptive(const RuleSet &rs, const Value &t, AdaptiveConfig *out, std::string *err) {
  if (!t.contains("adaptive")) return true;
  const Value &v = t.at("adaptive");
  const int line = static_cast<int>(v.location().line());
  if (v.is_boolean()) {
    out->enabled = v.as_boolean();
    return true;
  }
  if (!v.is_table()) {
    *err = file_line(rs, line) + "'adaptive' must be true, false or a table like { decrease = 0.5, recovery = 3 }";
    return false;
  }
  if (!known_keys(rs, v, {"decrease", "recovery", "floor", "scope", "listen_port"}, "'adaptive'", err)) return false;
  out->enabled = true;
  AdaptiveParams &p = out->params;
  for (auto [key, dst] : {std::pair{"decrease", &p.decrease}, {"recovery", &p.recovery}, {"floor", &p.floor}}) {
    if (v.contains(key) && !get_number(v.at(key), dst)) {
      *err = file_line(rs, static_cast<int>(v.at(key).location().line())) + "adaptive '" + key + "' must be a number";
      return false;
    }
  }
  if (v.contains("scope")) {
    const Value &s = v.at("scope");
    const std::string scope = s.is_string() ? s.as_string().str : "";
    if (scope != "cluster" && scope != "local") {
      *err = file_line(rs, static_cast<int>(s.location().line())) + "adaptive 'scope' must be \"cluster\" or \"local\"";
      return false;
    }
    p.cluster = scope == "cluster";
  }
  if (v.contains("listen_port")) {
    const Value &lp = v.at("listen_port");
    if (!lp.is_integer() || lp.as_integer() < 1 || lp.as_integer() > 65535) {
      *err = file_line(rs, static_cast<int>(lp.location().line())) +
             "adaptive 'listen_port' must be a TCP port, 1 to 65535";
      return false;
    }
    out->listen_port = static_cast<uint16_t>(lp.as_integer());
  }
  std::string why;
  if (!validate_adaptive_params(p, &why)) {
    *err = file_line(rs, line) + "adaptive: " + why;
    return false;
  }
  return true;
}

// The string value of key k in table t.
bool get_string(const RuleSet &rs, const Value &t, const char *k, std::string *out, std::string *err) {
  const Value &v = t.at(k);
  if (!v.is_string()) {
    *err = file_line(rs, static_cast<int>(v.location().line())) + "'" + k + "' must be a string";
    return false;
  }
  *out = v.as_string().str;
  return true;
}

bool get_bool(const RuleSet &rs, const Value &t, const char *k, bool *out, std::string *err, const std::string &before,
              const std::string &after) {
  if (!t.contains(k)) return true;
  const Value &v = t.at(k);
  if (!v.is_boolean())
    return *err = file_line(rs, static_cast<int>(v.location().line())) + before + "'" + k +
                  "' must be true or false (without quotes)" + after,
           false;
  *out = v.as_boolean();
  return true;
}

bool each_table(const RuleSet &rs, const Value &root, const char *key, std::string *err,
                const std::function<bool(const Value &table)> &one) {
  if (!root.contains(key)) return true;
  const Value &arr = root.at(key);
  if (!arr.is_array()) {
    *err = file_line(rs, static_cast<int>(arr.location().line())) + "'" + key + "' must be written as [[" + key +
           "]] tables";
    return false;
  }
  for (const Value &t : arr.as_array())
    if (!one(t)) return false;
  return true;
}

}  // namespace dt
