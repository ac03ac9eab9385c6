// ban_render.cpp - the bans as `agent bans` prints them.
#include "bans/ban_render.h"

#include <algorithm>
#include <cstdio>

namespace dt {
namespace {

void sort_by_expiry(std::vector<Ban> *bans) {
  std::sort(bans->begin(), bans->end(), [](const Ban &a, const Ban &b) {
    return a.expires_ns != b.expires_ns ? a.expires_ns < b.expires_ns : a.prefix < b.prefix;
  });
}

std::string remaining_text(const Ban &b, uint64_t now_ns) {
  return b.expires_ns > now_ns ? format_remaining(b.expires_ns - now_ns) : "expired";
}

}  // namespace

Json ban_json(const Ban &b, uint64_t now_ns) {
  const uint64_t left = b.expires_ns > now_ns ? b.expires_ns - now_ns : 0;
  return Json{{"prefix", ban_prefix_text(b.prefix)},
              {"remaining_s", printed_number("%.3f", left / 1e9)},
              {"expired", left == 0},
              {"reason", b.reason},
              {"origin", b.origin},
              {"who", b.who},
              {"remote", b.remote},
              {"set_unix_ms", b.set_unix_ms},
              {"dropped", b.dropped},
              {"would_drop", b.would_drop}};
}

std::string ban_explain_text(const Ban &b, uint64_t now_ns) {
  if (b.expires_ns <= now_ns) return ban_prefix_text(b.prefix) + ", expired (not swept yet): packets pass to the rules";
  std::string s = ban_prefix_text(b.prefix) + " for " + format_remaining(b.expires_ns - now_ns) +
                  " more: every packet dropped before the rules (" + std::to_string(b.dropped) + " so far";
  if (b.would_drop) s += ", " + std::to_string(b.would_drop) + " would-drop in dry run";
  s += "); origin " + b.origin + ", set by " + b.who;
  if (!b.reason.empty()) s += ": " + b.reason;
  return s;
}

Json bans_json_list(std::vector<Ban> bans, uint64_t now_ns) {
  sort_by_expiry(&bans);
  Json list = Json::array();
  for (const Ban &b : bans) list.push_back(ban_json(b, now_ns));
  return list;
}

std::string render_bans_json(std::vector<Ban> bans, uint64_t now_ns) {
  return dump_json(Json{{"bans", bans_json_list(std::move(bans), now_ns)}}) + "\n";
}

std::string render_bans_text(std::vector<Ban> bans, uint64_t now_ns) {
  if (bans.empty()) return "no bans\n";
  sort_by_expiry(&bans);
  std::string out;
  char line[512];
  snprintf(line, sizeof line, "%-32s %-9s %12s %12s  %-20s %-24s %s\n", "PREFIX", "LEFT", "DROPPED", "WOULD-DROP",
           "ORIGIN", "WHO", "REASON");
  out += line;
  for (const Ban &b : bans) {
    snprintf(line, sizeof line, "%-32s %-9s %12llu %12llu  %-20s %-24s %s\n", ban_prefix_text(b.prefix).c_str(),
             remaining_text(b, now_ns).c_str(), static_cast<unsigned long long>(b.dropped),
             static_cast<unsigned long long>(b.would_drop), b.origin.c_str(), b.who.c_str(), b.reason.c_str());
    out += line;
  }
  return out;
}

}  // namespace dt
