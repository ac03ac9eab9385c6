// run_config.h - the daemon's configuration loaded and checked, the same way for `agent
// check` and the daemon. The rules are loaded, the tag rules assembled and every rule set
// checked as the daemon would install it, so that every configuration error the daemon
// would exit with (status 2) is found without touching the dataplane.
#pragma once

#include <string>
#include <vector>

#include "cli/cli.h"
#include "rules/rules.h"
#include "rules/tags.h"

namespace dt {

struct RunConfig {
  RunOptions opt;
  LoadedRules rules;               // the default rule (--rate/--burst) and --rules
  std::vector<TagRule> tag_rules;  // [[tag]] of the rules file, then --tag-rule flags
  std::vector<std::string> peers;  // every peer endpoint in force (see load_peers)
};

// The cluster's peers: --peers (or the --config file's peers, read again when `reread`),
// then those of --peers-file; repeats dropped. False with the file's error in *err.
bool load_peers(const RunOptions &opt, bool reread, std::vector<std::string> *out, std::string *err);

// The peers whose verified sources this host takes: --peer-verified, or the --config file's
// `peer-verified` read again (unless the command line gave it). False with the file's error.
bool load_peer_verified(const RunOptions &opt, PeerSet *out, std::string *err);

// Loads the rules of `opt` and checks them (see check_tag_rules, check_adaptive_rules);
// with --curve-key, out->opt.node_id becomes the key's (bind_node_id_to_key).
// False with the daemon's sentence in *err: a configuration error (exit status 2).
bool load_run_config(const RunOptions &opt, RunConfig *out, std::string *err);

// The tag rules of a rule set: the file's [[tag]], then the --tag-rule flags of `opt`.
std::vector<TagRule> tag_rules_of(const LoadedRules &r, const RunOptions &opt);

// Strict tag rules are decided by Redis: without --redis they could only be
// approximated, so such a rule set is refused ("... is strict, which needs --redis ADDR").
bool check_strict(const std::vector<TagRule> &rules, const RunOptions &opt, std::string *err);

// check_strict, then the checks of TagTable::replace_rules (distinct prefixes, valid
// rates), on a scratch table: what the daemon's table would refuse.
bool check_tag_rules(const std::vector<TagRule> &rules, const RunOptions &opt, std::string *err);

// The part of configuring adaptive limits that needs no dataplane: every adaptive
// rule's parameters. The rest (hit counting, map writes) can only fail at run time.
bool check_adaptive_rules(const LoadedRules &rules, const std::vector<TagRule> &tag_rules, std::string *err);

// A --report-max-age shorter than --period would make every report stale: refused.
bool check_report_max_age(const RunOptions &opt, std::string *err);

// What is in dry run, as the log says it: "dry run: nothing is dropped; ..." (--dry-run),
// "dry run for rules a, b: ..." (dry_run = true in the rules file), or "" (enforcing).
std::string describe_dry_run(const RunConfig &c);

// The summary line of the rules (describe_rules), counting every tag rule.
std::string describe_run_rules(const RunConfig &c);

}  // namespace dt
