// suggest_report.h - `agent suggest`'s findings per rule: the distribution of its sources'
// peak rates and of its prefixes' aggregate rates, what its current limits and the
// proposed ones would throttle, and the text that says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dthrottle/common.h"
#include "suggest/suggest_sampler.h"
#include "suggest/suggest_stats.h"

namespace dt {

// A rule in force, as the maps describe it.
struct SuggestRule {
  uint32_t id = 0;
  std::string name;
  dt_policy policy{};
  dt_prefix_policy prefix{};  // its prefix budgets (their lengths group the aggregates)
};

// Peak rates over the short (1 s) and the long window.
struct PeakQuantiles {
  Quantiles short_w, long_w;
};

// One prefix level: its prefixes' aggregates, what the rule's budget of that level (if it
// has one) and the proposed one would throttle. Throttled counts prefixes as its sources.
struct PrefixFinding {
  bool v6 = false;
  unsigned bits = 0;
  std::string level;  // "v4/24", "v6/48"
  PeakQuantiles peaks;
  bool has_now = false;  // the rule has a budget at this level
  Proposal now_limit;    // that budget
  Throttled now;
  size_t outliers = 0;  // prefixes over kPrefixOutlier x the median (floods)
  Proposal proposal;    // not valid: none (a rule keyed by destination)
  Throttled proposed;
  std::vector<std::string> capped;  // prefixes the proposal would throttle ("198.18.20.0/24"), the first kMaxCapped
  uint64_t capped_sources = 0;      // sources in all of them
};
inline constexpr size_t kMaxCapped = 10;

struct RuleFinding {
  SuggestRule rule;
  std::string skipped;     // why no proposal ("" : there is one)
  uint64_t hits = 0;       // every hit of its sources
  size_t sources = 0;      // its sources that sent
  size_t long_window = 0;  // seconds: 10, or the whole measurement if shorter
  PeakQuantiles peaks;
  std::vector<PrefixFinding> prefixes;
  Throttled now;  // under its current rate and burst
  Proposal proposal;
  Throttled proposed;  // under the proposal
};

// The rule's findings from its sources' series (all of the same measurement).
RuleFinding analyse_rule(const SuggestRule &rule, const std::vector<const SampledSource *> &sources,
                         const SuggestParams &p);

// What the measurement was, for the text's first line.
struct SuggestRun {
  std::string pin_dir;
  size_t seconds = 0, sources = 0;
  uint64_t untracked = 0, max_sources = 0;
  uint64_t late_readings = 0;  // readings finished more than 100 ms after their second
};

std::string render_findings(const SuggestRun &run, const std::vector<RuleFinding> &rules, const SuggestParams &p);

// The proposed prefix_limits of a rule ("v4/24=2000/s,burst=4000"): a proposal for each
// level measured, the rule's own levels of a family that sent nothing as they are.
std::vector<std::string> proposed_prefix_limits(const RuleFinding &f);

// The proposal as a change to the rules file: what the diff cannot say (the default rule's
// flags, rules not in the file) and the unified diff ("" when nothing changes or no file).
struct ProposalChange {
  std::string rules_file;
  std::vector<std::string> notes;
  std::string diff;
};

// All of it as one JSON document (agent suggest --json; docs/rules.md "Suggested limits").
std::string render_findings_json(const SuggestRun &run, const std::vector<RuleFinding> &rules, const SuggestParams &p,
                                 const ProposalChange &change);

}  // namespace dt
