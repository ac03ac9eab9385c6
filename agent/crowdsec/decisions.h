// decisions.h - the CrowdSec Local API's decision stream (GET /v1/decisions/stream), read
// into the bans it asks for. Pure parsing: no HTTP, no clock, no map.
//
// A response is {"new": [decision...] | null, "deleted": [decision...] | null}; a decision
// is {"id":1, "origin":"cscli", "scenario":"...", "scope":"Ip", "type":"ban",
// "value":"198.18.0.7", "duration":"3h59m55.7s"}. Only `ban` decisions of scope Ip or
// Range become bans; the others are counted and left alone.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bans/ban_types.h"

namespace dt {

// A decision's value as a ban's prefix: an address (scope Ip) or CIDR (scope Range; host
// bits past the length are cleared). False if it is neither, or a /0.
bool parse_ban_value(std::string_view value, bool range, BanPrefix *out);

// A ban asked for by a `new` decision.
struct StreamBan {
  BanPrefix prefix;
  int64_t duration_ns = 0;  // what is left of it when the LAPI answered (> 0)
  std::string reason;       // the decision's scenario ("crowdsecurity/ssh-bf", or a manual reason)
  std::string origin;       // "crowdsec", "cscli", "CAPI", "lists"...
};

// What one response held, besides its bans.
struct StreamCounts {
  uint64_t other_type = 0;   // captcha, throttle...: not bans
  uint64_t other_scope = 0;  // Country, AS, Username...: not addresses
  uint64_t invalid = 0;      // a decision with a missing or bad field, or an expired `new` one
  uint64_t over_limit = 0;   // decisions past Limits::max_decisions, left out
};

struct StreamBatch {
  std::vector<StreamBan> added;    // in the order of the response
  std::vector<BanPrefix> deleted;  // bans lifted
  StreamCounts counts;
  std::string first_problem;  // the first invalid decision, for the log ("" if none)
};

// Defaults: what the ban maps hold (bans/ban_types.h: DT_MAX_BANS bans of at most 30 days,
// reasons of at most 95 bytes), with room for a startup answer that lists as many expired ones.
struct StreamLimits {
  size_t max_decisions = 200'000;                             // new + deleted, per response
  int64_t max_duration_ns = static_cast<int64_t>(kMaxBanNs);  // longer bans are cut to this
  size_t max_reason_bytes = kMaxBanReason;                    // a longer scenario is cut (at a UTF-8 boundary)
  size_t max_depth = 16;  // deeper nesting refuses the whole response (a decision's fields are at depth 3)
};

// The response `body` into *out. False (with *err) when the body is not JSON or not the
// stream's object; one bad decision only counts in out->counts.invalid. Nesting deeper
// than a decision's fields is skipped, and the document is never held whole in memory
// (each decision is dropped once read). A body nested deeper than limits.max_depth is
// refused before it is parsed: the parser's stacks grow with the depth (about 9 bytes a
// level, so a 64 MiB body of '[' would cost over 500 MiB).
bool parse_decision_stream(std::string_view body, const StreamLimits &limits, StreamBatch *out, std::string *err);

}  // namespace dt
