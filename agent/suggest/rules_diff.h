// rules_diff.h - `agent suggest`'s proposal as a change to the rules file: the rate, burst
// and prefix_limits lines of named [[rule]] blocks rewritten (comments and layout kept),
// and the change as a unified diff that `patch` applies. Pure: text in, text out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

// A rule's new packet rate and burst, by its name in the file, and its prefix budgets
// ("v4/24=2000/s,burst=4000"; none: left as they are).
struct RuleEdit {
  std::string rule;
  double rate = 0;
  uint64_t burst = 0;
  std::vector<std::string> prefix_limits;
};

// One line of the edited file against the old: kept, removed or added.
struct DiffLine {
  enum class Kind { Keep, Del, Add } kind = Kind::Keep;
  std::string text;  // without its newline
};

// The file's lines with `edits` applied: in each [[rule]] block whose name is an edit's,
// the `rate = ...` line replaced, and the `burst = ...` line replaced or, when the block
// has none, added after the rate; with prefix_limits, the `prefix_limits = [...]` lines
// (one or several) replaced by one line, or added after the burst. Edits whose rule has no block with a `rate` line are
// appended to *skipped (by name).
std::vector<DiffLine> edit_rules_text(const std::string &text, const std::vector<RuleEdit> &edits,
                                      std::vector<std::string> *skipped);

// `lines` as a unified diff of `path` (three lines of context; "" when nothing changed).
std::string unified_diff(const std::vector<DiffLine> &lines, const std::string &path);

// A rate as the rules file writes it: "20", "0.5", "1500".
std::string rate_text(double rate);

// A prefix budget as prefix_limits (and --prefix-limit) write it: "v4/24=2000/s,burst=4000".
std::string prefix_limit_text(bool v6, unsigned bits, double rate, uint64_t burst);

}  // namespace dt
