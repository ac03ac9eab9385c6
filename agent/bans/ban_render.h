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
// {"bans": [...]}: every ban, soonest expiry first.
std::string render_bans_json(std::vector<Ban> bans, uint64_t now_ns);
// A table, soonest expiry first, or "no bans\n".
std::string render_bans_text(std::vector<Ban> bans, uint64_t now_ns);

}  // namespace dt
