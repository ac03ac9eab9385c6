// suggest_session.h - one run of `agent suggest`: the rules in force, the measurement
// (a reading of the buckets every second for --for), the findings and the diff.
#pragma once

#include <string>
#include <vector>

#include "dataplane/map_reader.h"
#include "suggest/suggest_options.h"
#include "suggest/suggest_report.h"

namespace dt {

// The rules in force (a name in rule_names, or rule 0), with their live policies.
std::vector<SuggestRule> read_suggest_rules(const MapFds &maps);

// Runs the command: 0, or 1 with the error on stderr.
int run_suggest(const SuggestOptions &opt);

}  // namespace dt
