// option_values.h - handlers for the common kinds of option value (options.h). A string,
// a switch, a count or a duration within bounds, a log level, endpoints, a pin directory.
// Each checks the value with the agent's own parsers (common/parse_values.h, endpoint.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/options.h"
#include "common/log.h"
#include "common/parse_values.h"

namespace dt {

// Any value, kept as given.
OptionHandler store(std::string *to);
// A switch: on when given.
OptionHandler turn_on(bool *flag);
// A whole number in [min, max], into any integer type that holds max.
template <class Int>
OptionHandler count_into(Int *to, uint64_t min, uint64_t max) {
  return [=](const std::string &v, std::string *why) {
    uint64_t n = 0;
    return parse_count(v, min, max, &n, why) && (*to = static_cast<Int>(n), true);
  };
}
// A parser of option values: true and *out set, or false and *why saying what is wrong.
template <class T>
using ValueParser = bool (*)(const std::string &value, T *out, std::string *why);
// A value `parse` accepts, kept as given (what it parsed to is not kept).
template <class T>
OptionHandler checked_into(std::string *to, ValueParser<T> parse) {
  return [=](const std::string &v, std::string *why) {
    T parsed{};
    return parse(v, &parsed, why) && (*to = v, true);
  };
}
// The same, appended (a repeatable option).
template <class T>
OptionHandler checked_append(std::vector<std::string> *to, ValueParser<T> parse) {
  return [=](const std::string &v, std::string *why) {
    T parsed{};
    return parse(v, &parsed, why) && (to->push_back(v), true);
  };
}
// What `parse` makes of each value, appended (a repeatable option).
template <class T>
OptionHandler parsed_append(std::vector<T> *to, ValueParser<T> parse) {
  return [=](const std::string &v, std::string *why) {
    T parsed{};
    return parse(v, &parsed, why) && (to->push_back(parsed), true);
  };
}
// A duration ("200ms", "1s"); when max_ns: from min_ns to max_ns, else "'V' must be " + bounds.
OptionHandler duration_into(uint64_t *ns, uint64_t min_ns = 0, uint64_t max_ns = 0, const char *bounds = "");
// duration_into, or "off": UINT64_MAX (never).
OptionHandler duration_or_off_into(uint64_t *ns, uint64_t min_ns, uint64_t max_ns, const char *bounds);
// One of two words, `no` or `yes`: *flag says whether it was `yes`.
OptionHandler either_into(bool *flag, const char *no, const char *yes);
// One of the words `parse` knows (`choices` lists them for the error), what it means into *to.
template <class E>
OptionHandler one_of_into(E *to, bool (*parse)(const std::string &, E *), const char *choices) {
  return [=](const std::string &v, std::string *why) {
    return parse(v, to) || (*why = "'" + v + "' is not one of " + choices, false);
  };
}
// debug, info, warn or error.
OptionHandler log_level_into(LogLevel *to);
// HOST:PORT[,HOST:PORT...], each normalised (tcp://) and appended; a hub's port must leave
// room for its subscribers' port (+ 1).
OptionHandler endpoints_into(std::vector<std::string> *to, bool hubs);
bool add_endpoints(const std::string &list, bool hubs, std::vector<std::string> *out, std::string *err);
// An absolute path, trailing slashes dropped (--pin-dir).
OptionHandler absolute_path_into(std::string *to);

// -i/--iface IFACE and --pin-dir DIR (which agent's pins a command works on), then `more`.
std::vector<OptionSpec> with_pin_target(std::string *iface, std::string *pin_dir, std::vector<OptionSpec> more,
                                        const char *iface_help = "read /sys/fs/bpf/dthrottle/IFACE",
                                        const char *pin_dir_help = "read the maps pinned in DIR");
// --iface or --pin-dir names an agent's pins (*pin_dir from iface when not given);
// `what` says what the command does with them, for the error when neither is given.
ParseOutcome resolve_pin_dir(const std::string &iface, std::string *pin_dir, const char *what, std::string *err);
// resolve_pin_dir as the check after the last option of a command whose options *o has
// `iface` and `pin_dir` (and no operand).
template <class Options>
FinishParse pin_target_check(Options *o, const char *what) {
  return [o, what](const std::vector<std::string> &, std::string *err) {
    return resolve_pin_dir(o->iface, &o->pin_dir, what, err);
  };
}

}  // namespace dt
