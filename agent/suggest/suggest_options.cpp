// suggest_options.cpp - `agent suggest`'s option table, its --help text and its checks.
#include "suggest/suggest_options.h"

#include <cstdlib>

#include "cli/option_values.h"
#include "cli/options.h"
#include "common/program_name.h"

namespace dt {
namespace {

const char kSuggestUsage[] =
    "Usage: %prog suggest (--iface IFACE | --pin-dir DIR) [--for D] [--rules FILE] [--quantile P]\n"
    "                     [--headroom X] [--max-sources N] [--json]\n"
    "\n"
    "Proposes a rate and burst for each rule from the traffic it sees. For D it reads the\n"
    "pinned buckets every second (each source's passed + dropped + would-drop: no packet is\n"
    "copied), then prints per rule the distribution of its sources' peak rates over 1 s and\n"
    "10 s (p50, p99, p99.9, max), the same for their prefixes' aggregates (the rule's prefix\n"
    "budget lengths, else /24 and /48), what the current limits and the proposal would\n"
    "throttle (sources, prefixes and packets), and, with --rules, the change to FILE as a\n"
    "unified diff that patch applies. The proposal: rate = X times the P-th percentile of\n"
    "the 10 s peaks, burst enough for that percentile's 1 s peak; prefix_limits the same\n"
    "of the prefixes' aggregates, prefixes over 10 times the median left out as floods.\n"
    "--json prints the same as one JSON document (the diff in it). Run it on an agent in\n"
    "dry run (--dry-run, or dry_run = true in the rules) to measure demand as it is. Needs\n"
    "root (the pins are root's); the agent need not be told.\n"
    "\n";

const char kSuggestExamples[] =
    "\n"
    "Examples:\n"
    "  %prog suggest -i eth0 --for 10m --rules /etc/dthrottle/rules.toml > proposal.txt\n"
    "  patch /etc/dthrottle/rules.toml < proposal.txt && %prog reload -i eth0\n";

// A number in [min, max] (a percent for --quantile, a factor for --headroom), times `scale`.
OptionHandler number_into(double *to, double min, double max, double scale, const char *bounds) {
  return [=](const std::string &v, std::string *why) {
    char *end = nullptr;
    const double x = strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(x >= min && x <= max))
      return *why = "'" + v + "' must be a number " + bounds, false;
    return *to = x * scale, true;
  };
}

}  // namespace

int parse_suggest_command(int argc, char **argv, SuggestOptions *o) {
  std::vector<OptionSpec> options = with_pin_target(
      &o->iface, &o->pin_dir,
      {
          {"for", 0, "D", "how long to measure, 2s to 1h (default 60s)",
           duration_into(&o->for_ns, 2'000'000'000ull, 3'600'000'000'000ull, "from 2s to 1h")},
          {"rules", 0, "FILE", "the agent's rules file: print the proposal as a diff of it", store(&o->rules_file)},
          {"quantile", 0, "P", "the percentile of the sources' peaks the rate serves, 50 to 100 (default 99)",
           number_into(&o->quantile, 50, 100, 0.01, "from 50 to 100")},
          {"headroom", 0, "X", "the rate is X times that percentile, 1 to 100 (default 2)",
           number_into(&o->headroom, 1, 100, 1, "from 1 to 100")},
          {"max-sources", 0, "N",
           "sources to follow, 1 to 1000000 (default 10000; more are counted\n"
           "and left out); N x the seconds of --for at most 50000000",
           count_into(&o->max_sources, 1, 1'000'000)},
          {"json", 0, nullptr, "machine-readable output: one JSON document, the diff in it", turn_on(&o->json)},
      },
      "measure IFACE's throttle (/sys/fs/bpf/dthrottle/IFACE)", "measure the throttle pinned in DIR");
  const CommandSpec spec(command_name("suggest"), kSuggestUsage, std::move(options), 0, kSuggestExamples);
  return parse_subcommand(spec, argc, argv, [o](const std::vector<std::string> &, std::string *err) {
    if (o->max_sources * (o->for_ns / 1'000'000'000ull) > kSuggestMaxSourceSeconds)
      return *err =
                 "--max-sources x --for keeps at most 50000000 source-seconds (200 MB): shorten --for or lower "
                 "--max-sources",
             ParseOutcome::Error;
    return resolve_pin_dir(o->iface, &o->pin_dir, "measure", err);
  });
}

}  // namespace dt
