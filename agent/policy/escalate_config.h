// escalate_config.h - a rule's `escalate` setting (docs/rules.md "Escalation: repeat
// offenders banned"): how long a source may stay over the rule's budget before it is
// banned, for how long, and how the ban grows with each repeat offence.
//
//   escalate = { after = "30s", ban = "10m", factor = 2, max = "7d", forget = "14d" }
//   after    over budget (dropped by the rule) continuously this long: an offence
//   ban      the first offence's ban
//   factor   each repeat offence within `forget` of the last ban's end: the last ban x factor
//   max      no ban longer than this
//   forget   an offence later than this after the last ban's end starts again at `ban`
//   sources  with prefix_limits: escalate single sources too (default false: only the
//            prefixes whose budget is exhausted, since single sources may be spoofed)
#pragma once

#include <cstdint>
#include <string>

namespace dt {

struct EscalateConfig {
  bool enabled = false;
  uint64_t after_ns = 30'000'000'000ull;
  uint64_t ban_ns = 600'000'000'000ull;
  double factor = 2;
  uint64_t max_ns = 7ull * 86400 * 1'000'000'000;
  uint64_t forget_ns = 14ull * 86400 * 1'000'000'000;
  bool sources = false;
};

// Limits of the settings (checked by validate_escalate).
constexpr double kMaxEscalateFactor = 100;
constexpr uint64_t kMaxEscalateAfterNs = 86400ull * 1'000'000'000;        // a day
constexpr uint64_t kMaxEscalateForgetNs = 30ull * 86400 * 1'000'000'000;  // 30 days

// The settings hold together: after 1s..1d, ban <= max (both 1s..30d), factor 1..100,
// forget 1s..30d. False with a sentence in *err.
bool validate_escalate(const EscalateConfig &c, std::string *err);

// The ban of offence number `n` (1 for the first): ban x factor^(n-1), at most max.
uint64_t escalated_ban_ns(const EscalateConfig &c, uint32_t n);

// "after 30s, ban 10m 0s x2 up to 7d 0h, forgotten after 14d 0h" for logs and check.
std::string describe_escalate(const EscalateConfig &c);

}  // namespace dt
