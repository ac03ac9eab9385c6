// lists_install.cpp - the allow and deny lists put in force (lists_install.h).
#include "daemon/lists_install.h"

#include <chrono>

#include "common/log.h"

namespace dt {

std::string describe_lists(const LoadedRules &r) {
  std::string out;
  auto one = [&](const char *what, const std::string &file, const ListPrefixes &p) {
    if (file.empty()) return;
    out += std::string(out.empty() ? "" : ", ") + what + " list " + std::to_string(p.v4.size()) + " IPv4 + " +
           std::to_string(p.v6.size()) + " IPv6 prefixes (" + file + ")";
  };
  one("allow", r.set.allow_file, *r.allow);
  one("deny", r.set.deny_file, *r.deny);
  return out;
}

bool install_lists(const ListMapFds &m, const LoadedRules &next, const LoadedRules *prev, std::string *err) {
  const auto start = std::chrono::steady_clock::now();
  const bool same = prev && *prev->allow == *next.allow && *prev->deny == *next.deny;
  if (publish_lists(m, *next.allow, *next.deny, prev ? prev->allow.get() : nullptr, prev ? prev->deny.get() : nullptr,
                    err) != 0)
    return false;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string what = describe_lists(next);
  if (!what.empty() && !same) DT_INFO("lists in force: %s; loaded in %.2f s", what.c_str(), secs);
  if (what.empty() && prev && !describe_lists(*prev).empty()) DT_INFO("lists: none any more");
  return true;
}

}  // namespace dt
