// reload.h - SIGHUP: re-read the rules file and install it everywhere (the maps, the tag
// table, the cluster, the adaptive limits), or keep the rules in force.
#pragma once

#include <string>

#include "daemon/run_config.h"
#include "dataplane/policy.h"

namespace dt {

class AdaptiveDriver;
class Cluster;
class TagTable;

// What a reload replaces.
struct ReloadTargets {
  RunConfig &config;  // its rules and tag rules become the new ones in force
  const RuleMaps &maps;
  TagTable &tags;
  Cluster *cluster;  // nullptr without peers
  AdaptiveDriver &adaptive;
};

// Re-reads the rules file and installs it everywhere; a bad file changes nothing (the
// old rules stay in force). Returns the outcome for `agent reload`: "ok <summary>",
// "partial <why>" (some of it is in force) or "error <why>".
std::string reload_rules(ReloadTargets t);

}  // namespace dt
