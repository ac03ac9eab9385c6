// stats_render.h - what `agent stats` prints: one snapshot of the maps as a table or as JSON.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "commands/stats_view.h"

namespace dt {

// What a running agent wrote about itself beside its maps (runtime_files.h), as read
// from its status files: "" when there is none (no cluster, no adaptive rule, no agent).
struct AgentStatusFiles {
  std::string cluster;     // .cluster.json or .cluster.txt
  std::string adaptive;    // .adaptive.json or .adaptive.txt
  std::string escalation;  // .escalation.json or .escalation.txt (rules with escalate)
  std::string events;      // .events.json or .events.txt (docs/events.md)
  std::string hook;        // .attach: how the program is attached ("native mode", "tc ingress, tcx link"; "" unknown)
  std::string bans;        // the bans with their counts (bans/ban_render.h: a table, or a JSON document); "" none
};

// The sources both views list: most dropped (with would-drop) first, then most passed, then by address;
// at most `top` of them (0: all).
std::vector<const SourceRow *> sources_by_drops(const StatsSnapshot &snap, size_t top);

// `agent stats`: policy, counters, rules, the agent's status tables (.txt files) and the
// top sources. Ends with a newline.
std::string render_stats_text(const StatsSnapshot &snap, const StatsOptions &opt, const AgentStatusFiles &status);

// `agent stats --json`: one line (and a newline) with the agent's status documents
// (.json files) under "cluster" and "adaptive"; a file that does not parse is left out,
// as a missing one is.
std::string render_stats_json(const StatsSnapshot &snap, const StatsOptions &opt, const AgentStatusFiles &status);

}  // namespace dt
