// ban_render.h - the bans as `agent bans` prints them: a table, or JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bans/ban_types.h"
#include "common/json.h"

namespace dt {

// One ban as JSON: prefix, remaining_s (0 once expired), expired, reason, origin, who,
// remote, set_unix_ms, dropped, would_drop.
Json ban_json(const Ban &b, uint64_t now_ns);
// "198.18.0.0/24 for 9m 58s more: every packet dropped before the rules (35 so far); origin
// h1, set by uid 0 (agent ban): REASON" (agent explain).
std::string ban_explain_text(const Ban &b, uint64_t now_ns);
// Every ban as ban_json, soonest expiry first.
Json bans_json_list(std::vector<Ban> bans, uint64_t now_ns);
// {"bans": [...]}: bans_json_list.
std::string render_bans_json(std::vector<Ban> bans, uint64_t now_ns);
// A table, soonest expiry first, or "no bans\n".
std::string render_bans_text(std::vector<Ban> bans, uint64_t now_ns);

}  // namespace dt
