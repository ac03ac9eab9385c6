// escalate_config.cpp - a rule's escalate settings: checks, the ban of offence n, text.
#include "policy/escalate_config.h"

#include <cmath>

#include "bans/ban_types.h"

namespace dt {

bool validate_escalate(const EscalateConfig &c, std::string *err) {
  const uint64_t s = 1'000'000'000ull;
  if (c.after_ns < s || c.after_ns > kMaxEscalateAfterNs) return *err = "'after' must be 1s to 1d", false;
  if (c.ban_ns < s || c.ban_ns > kMaxBanNs) return *err = "'ban' must be 1s to 30d", false;
  if (c.max_ns < s || c.max_ns > kMaxBanNs) return *err = "'max' must be 1s to 30d", false;
  if (c.max_ns < c.ban_ns)
    return *err =
               "'max' (" + format_remaining(c.max_ns) + ") is shorter than 'ban' (" + format_remaining(c.ban_ns) + ")",
           false;
  if (!(c.factor >= 1 && c.factor <= kMaxEscalateFactor))
    return *err = "'factor' must be a number from 1 (every ban as long) to 100", false;
  if (c.forget_ns < s || c.forget_ns > kMaxEscalateForgetNs) return *err = "'forget' must be 1s to 30d", false;
  return true;
}

uint64_t escalated_ban_ns(const EscalateConfig &c, uint32_t n) {
  double ns = static_cast<double>(c.ban_ns);
  for (uint32_t i = 1; i < n && ns < static_cast<double>(c.max_ns); i++) ns *= c.factor;
  return ns >= static_cast<double>(c.max_ns) ? c.max_ns : static_cast<uint64_t>(std::llround(ns));
}

std::string describe_escalate(const EscalateConfig &c) {
  char factor[32];
  snprintf(factor, sizeof factor, "%g", c.factor);
  return "after " + format_remaining(c.after_ns) + ", ban " + format_remaining(c.ban_ns) + " x" + factor + " up to " +
         format_remaining(c.max_ns) + ", forgotten after " + format_remaining(c.forget_ns) +
         (c.sources ? ", single sources too" : "");
}

}  // namespace dt
