// option_values.cpp - handlers for the options' common kinds of value (option_values.h).
#include "cli/option_values.h"

#include "common/endpoint.h"
#include "dataplane/dataplane.h"

namespace dt {

OptionHandler store(std::string *to) {
  return [to](const std::string &v, std::string *) { return *to = v, true; };
}

OptionHandler turn_on(bool *flag) {
  return [flag](const std::string &, std::string *) { return *flag = true, true; };
}

OptionHandler duration_into(uint64_t *ns, uint64_t min_ns, uint64_t max_ns, const char *bounds) {
  return [=](const std::string &v, std::string *why) {
    if (!parse_duration(v, ns, why)) return false;
    if (max_ns && (*ns < min_ns || *ns > max_ns)) return *why = "'" + v + "' must be " + bounds, false;
    return true;
  };
}

OptionHandler duration_or_off_into(uint64_t *ns, uint64_t min_ns, uint64_t max_ns, const char *bounds) {
  return [=](const std::string &v, std::string *why) {
    if (v == "off") return *ns = UINT64_MAX, true;
    return duration_into(ns, min_ns, max_ns, bounds)(v, why);
  };
}

OptionHandler either_into(bool *flag, const char *no, const char *yes) {
  return [=](const std::string &v, std::string *why) {
    if (v != no && v != yes) return *why = "'" + v + "' is not one of " + no + ", " + yes, false;
    return *flag = v == yes, true;
  };
}

OptionHandler log_level_into(LogLevel *to) {
  return [to](const std::string &v, std::string *why) {
    return parse_log_level(v.c_str(), to) || (*why = "'" + v + "' is not one of debug, info, warn, error", false);
  };
}

bool add_endpoints(const std::string &list, bool hubs, std::vector<std::string> *out, std::string *err) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string one = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::string ep, backend;
    if (!normalize_endpoint(one, false, &ep, err)) return false;
    if (hubs && !hub_backend_endpoint(one, &backend, err)) return false;
    out->push_back(ep);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

OptionHandler endpoints_into(std::vector<std::string> *to, bool hubs) {
  return [=](const std::string &v, std::string *why) { return add_endpoints(v, hubs, to, why); };
}

OptionHandler absolute_path_into(std::string *to) {
  return [to](const std::string &v, std::string *why) {
    if (v.empty() || v[0] != '/') return *why = "'" + v + "' must be an absolute path", false;
    *to = v;
    while (to->size() > 1 && to->back() == '/') to->pop_back();
    return true;
  };
}

std::vector<OptionSpec> with_pin_target(std::string *iface, std::string *pin_dir, std::vector<OptionSpec> more,
                                        const char *iface_help, const char *pin_dir_help) {
  std::vector<OptionSpec> all = {{"iface", 'i', "IFACE", iface_help, store(iface)},
                                 {"pin-dir", 0, "DIR", pin_dir_help, store(pin_dir)}};
  for (auto &o : more) all.push_back(std::move(o));
  return all;
}

ParseOutcome resolve_pin_dir(const std::string &iface, std::string *pin_dir, const char *what, std::string *err) {
  if (pin_dir->empty() && iface.empty()) {
    *err = std::string("say which throttle to ") + what + ": --iface IFACE or --pin-dir DIR";
    return ParseOutcome::Error;
  }
  if (pin_dir->empty()) *pin_dir = default_pin_dir(iface);
  return ParseOutcome::Ok;
}

}  // namespace dt
