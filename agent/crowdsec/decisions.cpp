// decisions.cpp - the decision stream read one decision at a time (nlohmann::json's
// callback parser): each decision becomes a ban, a lifted ban or a count, then is dropped.
#include "crowdsec/decisions.h"

#include <algorithm>

#include "common/json.h"
#include "crowdsec/go_duration.h"

namespace dt {
namespace {

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (tolower(static_cast<unsigned char>(a[i])) != tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// The string field `name` of a decision, or "" if it is missing or not a string.
std::string_view field(const Json &decision, const char *name) {
  const auto it = decision.find(name);
  if (it == decision.end() || !it->is_string()) return {};
  return it->get_ref<const std::string &>();
}

// A scenario fit for a log line and `agent bans`: control characters replaced, at most
// max_bytes, cut where a UTF-8 character starts.
std::string clean_reason(std::string_view text, size_t max_bytes) {
  if (text.size() > max_bytes) {
    size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) cut--;
    text = text.substr(0, cut);
  }
  std::string out(text);
  for (char &c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

enum class List { None, New, Deleted };

// One decision of `list` into *out; false (with why) if it is invalid.
bool take_decision(const Json &d, List list, const StreamLimits &limits, StreamBatch *out, std::string *why) {
  if (!d.is_object()) return *why = "a decision that is not an object", false;
  const std::string_view type = field(d, "type"), scope = field(d, "scope"), value = field(d, "value");
  if (type.empty() || scope.empty() || value.empty()) return *why = "a decision without type, scope or value", false;
  const bool ip = equals_ignoring_case(scope, "ip"), range = equals_ignoring_case(scope, "range");
  if (!ip && !range) return out->counts.other_scope++, true;
  if (!equals_ignoring_case(type, "ban")) return out->counts.other_type++, true;
  BanPrefix prefix;
  if (!parse_ban_value(value, range, &prefix))
    return *why = "'" + clean_reason(value, 60) + "' is not an " + (range ? "address range" : "address"), false;
  if (list == List::Deleted) return out->deleted.push_back(prefix), true;
  int64_t ns = 0;
  const std::string_view duration = field(d, "duration");
  if (!parse_go_duration(duration, INT64_MAX / 2, &ns))
    return *why = "bad duration '" + clean_reason(duration, 60) + "' for " + ban_prefix_text(prefix), false;
  if (ns <= 0) return *why = "an expired decision for " + ban_prefix_text(prefix), false;
  StreamBan ban{prefix, std::min(ns, limits.max_duration_ns),
                clean_reason(field(d, "scenario"), limits.max_reason_bytes), clean_reason(field(d, "origin"), 32)};
  if (ban.reason.empty()) ban.reason = ban.origin;
  out->added.push_back(std::move(ban));
  return true;
}

// The deepest nesting of arrays and objects in `text`, counted up to `stop` (more: stop + 1),
// brackets inside strings left out. Not a validation: the parser still reads the text.
size_t json_depth(std::string_view text, size_t stop) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > stop) return deepest;
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      depth--;
    }
  }
  return deepest;
}

}  // namespace

bool parse_ban_value(std::string_view value, bool range, BanPrefix *out) {
  if (value.size() > 64 || (!range && value.find('/') != std::string_view::npos)) return false;
  std::string err;
  return parse_ban_prefix(std::string(value), out, &err);
}

bool parse_decision_stream(std::string_view body, const StreamLimits &limits, StreamBatch *out, std::string *err) {
  *out = StreamBatch{};
  if (json_depth(body, limits.max_depth) > limits.max_depth)
    return *err = "the response nests arrays or objects deeper than " + std::to_string(limits.max_depth) + " levels",
           false;
  List list = List::None;
  size_t seen = 0;
  auto on_event = [&](int depth, Json::parse_event_t event, Json &parsed) {
    using E = Json::parse_event_t;
    if (depth == 1 && event == E::key) {
      const std::string &k = parsed.get_ref<const std::string &>();
      list = k == "new" ? List::New : k == "deleted" ? List::Deleted : List::None;
      return true;
    }
    if (depth < 2) return true;
    if (depth > 2) return event != E::object_start && event != E::array_start;  // a decision's own fields only
    if (event == E::object_start || event == E::key) return true;
    // A whole element of a top-level array (object_end, or a value or array that is no decision).
    if (list == List::None || event == E::array_end) return false;
    if (++seen > limits.max_decisions) return out->counts.over_limit++, false;
    std::string why;
    if (event != E::object_end) why = "a decision that is not an object";
    if (event != E::object_end || !take_decision(parsed, list, limits, out, &why)) {
      out->counts.invalid++;
      if (out->first_problem.empty()) out->first_problem = why;
    }
    return false;
  };
  const Json top = Json::parse(body.begin(), body.end(), on_event, false);
  if (top.is_discarded()) return *err = "the response is not JSON", false;
  if (!top.is_object()) return *err = "the response is not a JSON object", false;
  for (const char *key : {"new", "deleted"}) {
    const auto it = top.find(key);
    if (it != top.end() && !it->is_null() && !it->is_array())
      return *err = std::string("\"") + key + "\" is neither a list nor null", false;
  }
  return true;
}

}  // namespace dt
