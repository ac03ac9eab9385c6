// suggest_json.cpp - agent suggest --json: the findings and the proposal as one document.
#include "common/json.h"
#include "suggest/suggest_report.h"

namespace dt {
namespace {

Json quantiles_json(const Quantiles &q) {
  return {{"n", q.n},
          {"p50", printed_number("%.6g", q.p50)},
          {"p99", printed_number("%.6g", q.p99)},
          {"p99_9", printed_number("%.6g", q.p999)},
          {"max", printed_number("%.6g", q.max)}};
}

Json peaks_json(const PeakQuantiles &p) {
  return {{"over_1s", quantiles_json(p.short_w)}, {"over_long", quantiles_json(p.long_w)}};
}

// What a limit would throttle; `of` names what Throttled counts as sources ("sources", "prefixes").
Json throttled_json(const Throttled &t, const char *of) {
  return {{of, t.sources},
          {std::string("of_") + of, t.of_sources},
          {"packets", t.packets},
          {"of_packets", t.of_packets},
          {std::string(of) + "_share", printed_number("%.6g", t.source_share())},
          {"packets_share", printed_number("%.6g", t.packet_share())}};
}

Json limit_json(const Proposal &p) {
  if (!p.valid) return nullptr;
  return {{"rate", printed_number("%.6g", p.rate)}, {"burst", p.burst}};
}

Json prefix_json(const PrefixFinding &pf) {
  Json j = {{"level", pf.level}, {"peaks", peaks_json(pf.peaks)}, {"now", limit_json(pf.now_limit)}};
  if (pf.has_now) j["now_throttles"] = throttled_json(pf.now, "prefixes");
  j["proposal"] = limit_json(pf.proposal);
  if (!pf.proposal.valid) return j;
  j["proposal"]["floods_left_out"] = pf.outliers;
  j["proposal"]["throttles"] = throttled_json(pf.proposed, "prefixes");
  j["proposal"]["capped"] = pf.capped;
  j["proposal"]["capped_sources"] = pf.capped_sources;
  return j;
}

Json rule_json(const RuleFinding &f) {
  const dt_policy &pol = f.rule.policy;
  Proposal now;
  if (pol.interval_ns) now = {true, 1e9 / static_cast<double>(pol.interval_ns), pol.burst_ns / pol.interval_ns};
  Json j = {{"name", f.rule.name},
            {"id", f.rule.id},
            {"dry_run", (pol.flags & DT_POL_DRY_RUN) != 0},
            {"now", limit_json(now)}};
  j["skipped"] = f.skipped.empty() ? Json(nullptr) : Json(f.skipped);
  if (!f.skipped.empty()) return j;
  j["sources"] = f.sources;
  j["packets"] = f.hits;
  j["long_window_s"] = f.long_window;
  j["peaks"] = peaks_json(f.peaks);
  j["now_throttles"] = throttled_json(f.now, "sources");
  j["proposal"] = limit_json(f.proposal);
  if (f.proposal.valid) {
    j["proposal"]["throttles"] = throttled_json(f.proposed, "sources");
    j["proposal"]["prefix_limits"] = proposed_prefix_limits(f);
  }
  j["prefixes"] = Json::array();
  for (const PrefixFinding &pf : f.prefixes) j["prefixes"].push_back(prefix_json(pf));
  return j;
}

}  // namespace

std::string render_findings_json(const SuggestRun &run, const std::vector<RuleFinding> &rules, const SuggestParams &p,
                                 const ProposalChange &change) {
  Json j = {{"pin_dir", run.pin_dir},
            {"seconds", run.seconds},
            {"sources", run.sources},
            {"max_sources", run.max_sources},
            {"untracked", run.untracked},
            {"late_readings", run.late_readings},
            {"quantile", printed_number("%.6g", p.quantile)},
            {"headroom", printed_number("%.6g", p.headroom)},
            {"prefix_outlier", printed_number("%.6g", kPrefixOutlier)}};
  j["rules"] = Json::array();
  for (const RuleFinding &f : rules) j["rules"].push_back(rule_json(f));
  j["rules_file"] = change.rules_file.empty() ? Json(nullptr) : Json(change.rules_file);
  j["notes"] = change.notes;
  j["diff"] = change.diff;
  return dump_json(j) + "\n";
}

}  // namespace dt
