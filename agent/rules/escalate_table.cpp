// escalate_table.cpp - a [[rule]]'s `escalate` table (policy/escalate_config.h,
// docs/rules.md "Escalation: repeat offenders banned").
#include "bans/ban_types.h"
#include "rules/rules_toml.h"

namespace dt {
namespace {

// One duration key of the table ("30s", "10m", "7d"), if present.
bool escalate_duration(const RuleSet &rs, const Value &v, const char *key, uint64_t *ns, std::string *err) {
  if (!v.contains(key)) return true;
  const Value &d = v.at(key);
  std::string why;
  if (!d.is_string() || !parse_ban_duration(d.as_string().str, ns, &why))
    return *err = file_line(rs, static_cast<int>(d.location().line())) + "escalate '" + key +
                  "' must be a duration in quotes, 1s to 30d: \"30s\", \"10m\", \"2h\", \"7d\"",
           false;
  return true;
}

// What a rule must be to escalate: a throttle rule keyed by source.
bool escalate_fits(const RuleSet &rs, const PacketRule &r, int line, std::string *err) {
  if (r.action != RuleAction::Throttle)
    return *err = file_line(rs, line) + "rule '" + r.name + "': only throttle rules escalate ('" +
                  rule_action_name(r.action) + "' has no budget to be over)",
           false;
  if (r.key_by_dest)
    return *err = file_line(rs, line) + "rule '" + r.name +
                  "': escalate bans sources, and this rule's buckets are destinations (key_by = \"destination\")",
           false;
  return true;
}

}  // namespace

bool parse_rule_escalate(const RuleSet &rs, const Value &t, PacketRule *r, std::string *err) {
  if (!t.contains("escalate")) return true;
  const Value &v = t.at("escalate");
  const int line = static_cast<int>(v.location().line());
  if (!v.is_table())
    return *err = file_line(rs, line) +
                  "'escalate' must be a table like { after = \"30s\", ban = \"10m\", factor = 2, "
                  "max = \"7d\", forget = \"14d\" }",
           false;
  if (!known_keys(rs, v, {"after", "ban", "factor", "max", "forget", "sources"}, "'escalate'", err)) return false;
  if (!escalate_fits(rs, *r, line, err)) return false;
  EscalateConfig c;
  c.enabled = true;
  if (!escalate_duration(rs, v, "after", &c.after_ns, err) || !escalate_duration(rs, v, "ban", &c.ban_ns, err) ||
      !escalate_duration(rs, v, "max", &c.max_ns, err) || !escalate_duration(rs, v, "forget", &c.forget_ns, err))
    return false;
  if (v.contains("factor") && !get_number(v.at("factor"), &c.factor))
    return *err =
               file_line(rs, static_cast<int>(v.at("factor").location().line())) + "escalate 'factor' must be a number",
           false;
  if (!get_bool(rs, v, "sources", &c.sources, err, "escalate ")) return false;
  if (!v.contains("max") && c.max_ns < c.ban_ns) c.max_ns = c.ban_ns;  // a long ban and no max: the ban is the max
  std::string why;
  if (!validate_escalate(c, &why)) return *err = file_line(rs, line) + "rule '" + r->name + "': escalate " + why, false;
  r->escalate = c;
  return true;
}

}  // namespace dt
