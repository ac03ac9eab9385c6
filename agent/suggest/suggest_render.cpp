// suggest_render.cpp - the text of agent suggest's findings (suggest_report.h).
#include <cinttypes>
#include <cstdio>

#include "common/appendf.h"
#include "suggest/rules_diff.h"
#include "suggest/suggest_report.h"

namespace dt {
namespace {

void quantile_row(std::string *out, const char *label, const Quantiles &q) {
  appendf(out, "    %-22s %10.4g %10.4g %10.4g %10.4g\n", label, q.p50, q.p99, q.p999, q.max);
}

void peaks_table(std::string *out, const std::string &what, size_t n, const PeakQuantiles &p, size_t long_window) {
  const std::string label = what + " (" + std::to_string(n) + ")";
  appendf(out, "  %-24s %10s %10s %10s %10s\n", label.c_str(), "p50", "p99", "p99.9", "max");
  quantile_row(out, "peak /s over 1 s", p.short_w);
  const std::string over = "peak /s over " + std::to_string(long_window) + " s";
  quantile_row(out, over.c_str(), p.long_w);
}

void throttled_line(std::string *out, const char *what, const Throttled &t, const char *of = "sources") {
  appendf(out,
          "%s would throttle %" PRIu64 " of %" PRIu64 " %s (%.2f%%) and %" PRIu64 " of %" PRIu64 " packets (%.2f%%)\n",
          what, t.sources, t.of_sources, of, 100 * t.source_share(), t.packets, t.of_packets, 100 * t.packet_share());
}

void prefix_text(std::string *out, const PrefixFinding &pf, size_t long_window, const SuggestParams &p) {
  peaks_table(out, pf.level + " prefixes", pf.peaks.short_w.n, pf.peaks, long_window);
  if (pf.has_now) {
    const std::string now = "    now: " + prefix_limit_text(pf.v6, pf.bits, pf.now_limit.rate, pf.now_limit.burst);
    throttled_line(out, now.c_str(), pf.now, "prefixes");
  }
  if (!pf.proposal.valid) return;
  appendf(out, "    proposed: %s (%.4g x the p%g of the peaks",
          prefix_limit_text(pf.v6, pf.bits, pf.proposal.rate, pf.proposal.burst).c_str(), p.headroom, 100 * p.quantile);
  if (pf.outliers)
    appendf(out, " of the prefixes under %g x the median: %zu over it left out as floods", kPrefixOutlier, pf.outliers);
  appendf(out, ")\n");
  throttled_line(out, "    proposed:", pf.proposed, "prefixes");
  if (pf.capped.empty()) return;
  std::string names;
  for (const std::string &n : pf.capped) names += (names.empty() ? "" : ", ") + n;
  if (pf.proposed.sources > pf.capped.size()) names += ", ...";
  appendf(out, "    capped: %s (%" PRIu64 " sources)\n", names.c_str(), pf.capped_sources);
}

std::string limits_text(const dt_policy &pol) {
  if (!pol.interval_ns) return "no limit";
  return "rate " + rate_text(1e9 / static_cast<double>(pol.interval_ns)) + ", burst " +
         std::to_string(pol.burst_ns / pol.interval_ns);
}

void rule_text(std::string *out, const RuleFinding &f, const SuggestParams &p) {
  appendf(out, "\nrule %s (%s%s): ", f.rule.name.c_str(), limits_text(f.rule.policy).c_str(),
          f.rule.policy.flags & DT_POL_DRY_RUN ? ", dry run" : "");
  if (!f.skipped.empty()) return appendf(out, "no proposal: %s\n", f.skipped.c_str());
  appendf(out, "%zu sources, %" PRIu64 " packets\n", f.sources, f.hits);
  peaks_table(out, "sources", f.peaks.short_w.n, f.peaks, f.long_window);
  throttled_line(out, ("  now: " + limits_text(f.rule.policy)).c_str(), f.now);
  if (!f.proposal.valid) return appendf(out, "  no proposal: no source sent\n");
  appendf(out, "  proposed: rate %s, burst %" PRIu64 " (%.4g x the p%g of the peaks)\n",
          rate_text(f.proposal.rate).c_str(), f.proposal.burst, p.headroom, 100 * p.quantile);
  throttled_line(out, "  proposed:", f.proposed);
  for (const PrefixFinding &pf : f.prefixes) prefix_text(out, pf, f.long_window, p);
}

}  // namespace

std::string render_findings(const SuggestRun &run, const std::vector<RuleFinding> &rules, const SuggestParams &p) {
  std::string out;
  appendf(&out, "measured %zu s of the buckets in %s: %zu sources", run.seconds, run.pin_dir.c_str(), run.sources);
  if (run.untracked)
    appendf(&out, " (cap of %" PRIu64 " sources reached: %" PRIu64 " more left out; --max-sources)", run.max_sources,
            run.untracked);
  appendf(&out, "\n");
  if (run.late_readings)
    appendf(&out, "note: %" PRIu64 " readings came over 100 ms late (a busy host): their seconds hold more than 1 s\n",
            run.late_readings);
  for (const RuleFinding &f : rules) rule_text(&out, f, p);
  return out;
}

}  // namespace dt
