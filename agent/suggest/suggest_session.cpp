// suggest_session.cpp - agent suggest: measure, analyse, print the findings and the diff.
#include "suggest/suggest_session.h"

#include <signal.h>
#include <time.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/program_name.h"
#include "dataplane/policy.h"
#include "dthrottle/bucket.h"
#include "suggest/rules_diff.h"
#include "suggest/suggest_sampler.h"

namespace dt {
namespace {

volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void sleep_until(uint64_t due) {
  const timespec ts{static_cast<time_t>(due / 1'000'000'000), static_cast<long>(due % 1'000'000'000)};
  while (!g_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// A reading every second for opt.for_ns (Ctrl-C ends it early, with what was measured).
bool measure(const MapFds &maps, const SuggestOptions &opt, HitSampler *sampler, SuggestRun *run, std::string *err) {
  signal(SIGINT, on_stop);
  signal(SIGTERM, on_stop);
  const uint64_t start = monotonic_ns(), seconds = opt.for_ns / 1'000'000'000ull;
  std::vector<HitReading> reading;
  for (uint64_t tick = 0; tick <= seconds && !g_stop; tick++) {
    const uint64_t due = start + tick * 1'000'000'000ull;
    sleep_until(due);
    if (g_stop) break;
    if (int rc = read_hits(maps, &reading); rc != 0)
      return *err = "cannot read the buckets in " + opt.pin_dir + ": " + strerror(-rc), false;
    // Late if it woke late or was held up while reading: either way a second holds more.
    if (monotonic_ns() > due + 100'000'000ull) run->late_readings++;
    sampler->take(reading);
  }
  return true;
}

bool read_text(const std::string &path, std::string *out, std::string *err) {
  std::ifstream in(path);
  if (!in) return *err = "cannot read " + path + ": " + strerror(errno), false;
  std::stringstream text;
  text << in.rdbuf();
  *out = text.str();
  return true;
}

std::vector<RuleFinding> analyse(const std::vector<SuggestRule> &rules, const std::vector<SampledSource> &sources,
                                 const SuggestOptions &opt) {
  std::vector<std::vector<const SampledSource *>> by_rule(DT_MAX_RULES);
  for (const SampledSource &s : sources) {
    const uint32_t id = dt_key_rule_id(s.key.rule);
    if (id < DT_MAX_RULES) by_rule[id].push_back(&s);
  }
  const SuggestParams p{opt.quantile, opt.headroom, 10};
  std::vector<RuleFinding> out;
  for (const SuggestRule &r : rules) out.push_back(analyse_rule(r, by_rule[r.id], p));
  return out;
}

// The default rule's proposal as the agent's flags (which it is).
std::string default_flags(const RuleFinding &f) {
  std::string out = "the default rule is the agent's flags: --rate " + rate_text(f.proposal.rate) + " --burst " +
                    std::to_string(f.proposal.burst);
  for (const std::string &l : proposed_prefix_limits(f)) out += " --prefix-limit " + l;
  return out;
}

// The proposal as a change to the rules file.
ProposalChange proposal_change(const std::vector<RuleFinding> &findings, const std::string &rules_file,
                               const std::string &rules_text) {
  ProposalChange out;
  out.rules_file = rules_file;
  std::vector<RuleEdit> edits;
  for (const RuleFinding &f : findings) {
    if (!f.skipped.empty() || !f.proposal.valid) continue;
    if (f.rule.id == 0 && f.rule.name == "default") out.notes.push_back(default_flags(f));
    else edits.push_back({f.rule.name, f.proposal.rate, f.proposal.burst, proposed_prefix_limits(f)});
  }
  if (rules_file.empty()) {
    if (!edits.empty()) out.notes.push_back("give --rules FILE for the change to the rules file as a diff");
    return out;
  }
  std::vector<std::string> skipped;
  out.diff = unified_diff(edit_rules_text(rules_text, edits, &skipped), rules_file);
  for (const std::string &name : skipped)
    out.notes.push_back("rule " + name + ": no [[rule]] with that name and a rate in " + rules_file);
  if (out.diff.empty()) out.notes.push_back(rules_file + ": nothing to change");
  return out;
}

std::string change_text(const ProposalChange &c) {
  std::string out;
  for (const std::string &n : c.notes) out += "\n# " + n + "\n";
  if (!c.diff.empty()) out += "\n# apply with: patch " + c.rules_file + " < THIS-OUTPUT\n" + c.diff;
  return out;
}

}  // namespace

std::vector<SuggestRule> read_suggest_rules(const MapFds &maps) {
  std::vector<SuggestRule> out;
  for (uint32_t id = 0; id < DT_MAX_RULES; id++) {
    SuggestRule r;
    r.id = id;
    r.name = read_rule_name(maps.rule_names, id);
    if (r.name.empty() && id != 0) continue;
    if (r.name.empty()) r.name = "default";
    if (read_live_policy(maps.policy, maps.config, id, &r.policy) != 0) continue;
    if (maps.prefix_policy >= 0) read_live_prefix_policy(maps.prefix_policy, maps.config, id, &r.prefix);
    out.push_back(r);
  }
  return out;
}

int run_suggest(const SuggestOptions &opt) {
  const std::string me = command_name("suggest");
  std::string err, rules_text;
  PinnedMaps maps;
  if (!maps.open(opt.pin_dir, &err) || (!opt.rules_file.empty() && !read_text(opt.rules_file, &rules_text, &err)))
    return fprintf(stderr, "%s: %s\n", me.c_str(), err.c_str()), 1;
  fprintf(stderr, "%s: measuring %s for %llu s (Ctrl-C ends it early)\n", me.c_str(), opt.pin_dir.c_str(),
          static_cast<unsigned long long>(opt.for_ns / 1'000'000'000ull));
  HitSampler sampler(opt.max_sources);
  SuggestRun run;
  if (!measure(maps, opt, &sampler, &run, &err)) return fprintf(stderr, "%s: %s\n", me.c_str(), err.c_str()), 1;
  const std::vector<SampledSource> &sources = sampler.finish();
  if (sampler.seconds() == 0) return fprintf(stderr, "%s: stopped before a second was measured\n", me.c_str()), 1;
  run.pin_dir = opt.pin_dir;
  run.seconds = sampler.seconds(), run.sources = sampler.tracked();
  run.untracked = sampler.untracked(), run.max_sources = opt.max_sources;
  const std::vector<RuleFinding> findings = analyse(read_suggest_rules(maps), sources, opt);
  const SuggestParams params{opt.quantile, opt.headroom, 10};
  const ProposalChange change = proposal_change(findings, opt.rules_file, rules_text);
  const std::string text = opt.json ? render_findings_json(run, findings, params, change)
                                    : render_findings(run, findings, params) + change_text(change);
  fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace dt
