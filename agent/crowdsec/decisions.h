// decisions.h - the CrowdSec Local API's decision stream (GET /v1/decisions/stream), read
// into the bans it asks for. Pure parsing: no HTTP, no clock, no map.
//
// A response is {"new": [decision...] | null, "deleted": [decision...] | null}; a decision
// is {"id":1, "origin":"cscli", "scenario":"...", "scope":"Ip", "type":"ban",
// "value":"198.18.0.7", "duration":"3h59m55.7s"}. Only `ban` decisions of scope Ip or
// Range become bans; the others are counted and left alone.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dt {

// An address or prefix as bans are keyed: 16 bytes (IPv4 mapped into IPv6) cut to `bits`
// of those 128 (an IPv4 /24 is 120), host bits zero.
struct BanPrefix {
  uint8_t addr[16] = {};
  uint8_t bits = 0;
  auto operator<=>(const BanPrefix &) const = default;
};

// "198.18.0.7", "198.18.5.0/24", "2001:2::/48": a single address without its length.
std::string ban_prefix_text(const BanPrefix &p);
// An address ("Ip") or CIDR ("Range"; host bits past the length are cleared: the LAPI
// holds what it was given). False if it is neither.
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
  std::vector<StreamBan> added;       // in the order of the response
  std::vector<BanPrefix> deleted;     // bans lifted
  StreamCounts counts;
  std::string first_problem;          // the first invalid decision, for the log ("" if none)
};

struct StreamLimits {
  size_t max_decisions = 250'000;                // new + deleted, per response
  int64_t max_duration_ns = 366LL * 86'400'000'000'000;  // longer bans are cut to this
  size_t max_reason_bytes = 120;                 // a longer scenario is cut (at a UTF-8 boundary)
};

// The response `body` into *out. False (with *err) when the body is not JSON or not the
// stream's object; one bad decision only counts in out->counts.invalid. Nesting deeper
// than a decision's fields is skipped, and the document is never held whole in memory
// (each decision is dropped once read).
bool parse_decision_stream(std::string_view body, const StreamLimits &limits, StreamBatch *out, std::string *err);

}  // namespace dt
