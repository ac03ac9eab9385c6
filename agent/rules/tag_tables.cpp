// tag_tables.cpp - the [[tag]] tables of the rules file. Prefix, rate and burst, strict
// (Redis) and adaptive.
#include "rules/rules_toml.h"

namespace dt {
namespace {

// A [[tag]]'s strict (Redis-held) budget and what to do when Redis fails.
bool parse_tag_strict(const RuleSet &rs, const Value &t, TagRule *tr, std::string *err) {
  if (t.contains("strict")) {
    if (!t.at("strict").is_boolean()) {
      *err = file_line(rs, tr->line) + "'strict' must be true or false";
      return false;
    }
    tr->strict = t.at("strict").as_boolean();
  }
  if (t.contains("on_redis_error")) {
    const Value &v = t.at("on_redis_error");
    const std::string s = v.is_string() ? v.as_string().str : "";
    if (s != "deny" && s != "local") {
      *err = file_line(rs, tr->line) + "'on_redis_error' must be \"deny\" or \"local\"";
      return false;
    }
    if (!tr->strict) {
      *err = file_line(rs, tr->line) + "'on_redis_error' applies to strict tags only (add strict = true)";
      return false;
    }
    tr->strict_fallback_local = s == "local";
  }
  return true;
}

// One [[tag]] table; `prefixes` holds the prefixes of the tags before it (each may appear once).
bool parse_tag(const RuleSet &rs, const Value &t, std::set<std::string> *prefixes, TagRule *tr, std::string *err) {
  tr->line = static_cast<int>(t.location().line());
  if (!t.is_table() ||
      !known_keys(rs, t, {"prefix", "rate", "burst", "strict", "on_redis_error", "adaptive"}, "a [[tag]]", err)) {
    if (err->empty()) *err = file_line(rs, tr->line) + "each [[tag]] must be a table";
    return false;
  }
  if (!t.contains("prefix") || !t.at("prefix").is_string()) {
    *err = file_line(rs, tr->line) + "a [[tag]] needs a 'prefix' string (\"\" matches every tag)";
    return false;
  }
  tr->prefix = t.at("prefix").as_string().str;
  if (tr->prefix.size() > 1024 || tr->prefix.find('\n') != std::string::npos) {
    *err = file_line(rs, tr->line) + "tag prefix must be at most 1024 bytes, without newlines";
    return false;
  }
  if (!prefixes->insert(tr->prefix).second) {
    *err = file_line(rs, tr->line) + "tag prefix '" + tr->prefix + "' is used twice";
    return false;
  }
  if (!rate_burst(rs, t, tr->line, &tr->rate, &tr->burst, nullptr, err)) return false;
  if (!parse_tag_strict(rs, t, tr, err)) return false;
  if (!parse_adaptive(rs, t, &tr->adaptive, err)) return false;
  if (tr->adaptive.enabled && tr->strict) {
    *err = file_line(rs, tr->line) + "a strict tag rule cannot be adaptive (Redis holds its one budget)";
    return false;
  }
  return true;
}

}  // namespace

// The [[tag]] tables, into rs.tags in file order.
bool parse_tag_tables(RuleSet &rs, const Value &root, std::string *err) {
  std::set<std::string> prefixes;
  return each_table(rs, root, "tag", err, [&](const Value &t) {
    TagRule tr;
    if (!parse_tag(rs, t, &prefixes, &tr, err)) return false;
    rs.tags.push_back(tr);
    return true;
  });
}

}  // namespace dt
