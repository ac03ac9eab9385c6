// reload.h - SIGHUP: re-read the rules file and install it everywhere (the maps, the tag
// table, the cluster, the adaptive limits), or keep the rules in force; re-read the peers
// (--peers-file, the --config file's peers) and change the cluster's membership, or keep
// the peers in force.
#pragma once

#include <memory>
#include <string>

#include "daemon/run_config.h"
#include "dataplane/policy.h"

namespace dt {

class AdaptiveDriver;
class Cluster;
class HostSynproxy;
class TagTable;

// What a reload replaces.
struct ReloadTargets {
  RunConfig &config;  // its rules and tag rules become the new ones in force
  const RuleMaps &maps;
  TagTable &tags;
  Cluster *cluster;  // nullptr without peers
  AdaptiveDriver &adaptive;
  // The SYNPROXY table of the syn_cookies rules (host/synproxy.h): replaced when their ports
  // change, removed when no rule has syn_cookies any more, installed again only if
  // `synproxy_allowed` (the agent kept CAP_NET_ADMIN for it at start).
  std::unique_ptr<HostSynproxy> &synproxy;
  bool synproxy_allowed = false;
};

// Re-reads the rules file and installs it everywhere; a bad file changes nothing (the
// old rules stay in force). The SYNPROXY table follows the syn_cookies rules' ports: a new
// one is in place before the maps change (their cookies' ACKs must find it), an old one goes
// after them; a table the agent may not install (it started without syn_cookies rules, and
// dropped CAP_NET_ADMIN) refuses the reload. Returns the outcome for `agent reload`: "ok <summary>",
// "partial <why>" (some of it is in force) or "error <why>".
std::string reload_rules(ReloadTargets t);

// Re-reads the peers (load_peers) and --config's peer-verified (load_peer_verified) and
// hands them to the cluster: "ok peers: 1 added (h4:7700); 3 peers[; --peer-verified: h1
// (was all)]", or "error ..." with the previous peers and --peer-verified kept.
std::string reload_peers(ReloadTargets t);

// What SIGHUP does: reload_rules with --rules, reload_peers with a cluster whose peers
// (or --peer-verified) come from a file; one outcome for both ("partial" if one failed and the other did not).
std::string reload_all(ReloadTargets t);

}  // namespace dt
