// run_checks.cpp - the run options checked as a set, once all are read (run_flags.h):
// what is required, defaults derived from other options, options that need each other.
#include "cli/run_flags.h"
#include "common/node_id.h"
#include "common/parse_values.h"
#include "common/program_name.h"
#include "dataplane/policy.h"
#include "query/query_listen.h"
#include "rules/prefix_limits.h"

namespace dt {
namespace {

// --rate/--burst make the default rule; with --rules they may be left out (then sources no
// rule matches pass). Its units, its policy and its prefix budgets.
ParseOutcome check_default_rule(const RunFlagsSeen &seen, RunOptions *o, std::string *err) {
  if (!o->rules_file.empty() && !seen.rate && !seen.burst) {
    if (o->prefix_limits.empty()) return ParseOutcome::Ok;
    *err =
        "--prefix-limit caps the default rule's sources per prefix, which needs --rate and --burst "
        "(for a rule of the --rules file: prefix_limits in its [[rule]])";
    return ParseOutcome::Error;
  }
  if (!seen.rate) return *err = "--rate is required (or --rules FILE)", ParseOutcome::Error;
  if (!seen.burst) return *err = "--burst is required (or --rules FILE)", ParseOutcome::Error;
  const std::string rate = "--rate " + seen.rate_text, burst = "--burst " + seen.burst_text;
  if (std::string m = budget_unit_mismatch(seen.rate_bytes, seen.burst_bytes, rate, burst); !m.empty())
    return *err = m, ParseOutcome::Error;
  o->bytes = seen.rate_bytes;
  dt_policy p{};
  if (std::string why; !make_policy(o->rate, o->burst, &p, &why, o->bytes))
    return *err = rate + " " + burst + ": " + why, ParseOutcome::Error;
  if (std::string why; !check_prefix_limits(o->prefix_limits, "default", o->bytes, 32, 64, &why))
    return *err = "--prefix-limit: " + why + " (the default rule is " + rate + " " + burst + ")", ParseOutcome::Error;
  return ParseOutcome::Ok;
}

}  // namespace

std::string cluster_security_error(bool cluster, const std::string &curve_key, bool insecure) {
  if (insecure && !curve_key.empty())
    return "--insecure-cluster and --curve-key contradict each other: keep --curve-key (the secure cluster) "
           "or drop it";
  if (insecure && !cluster) return "--insecure-cluster only makes sense with --peers, --peers-file, --listen or --hub";
  if (!cluster || insecure || !curve_key.empty()) return "";
  return "a cluster without keys lets anyone on the network forge, read or silence reports: give "
         "--curve-key FILE --curve-peers DIR (make them with `" +
         command_name("keygen") + " NAME`, see docs/security.md), or --insecure-cluster to run it unauthenticated";
}

ParseOutcome finish_run_options(const RunFlagsSeen &seen, RunOptions *o, std::string *err) {
  if (o->iface.empty()) return *err = "--iface is required", ParseOutcome::Error;
  if (check_default_rule(seen, o, err) != ParseOutcome::Ok) return ParseOutcome::Error;
  if (o->hook == AttachHook::Tc && seen.xdp_mode)
    return *err = "--xdp-mode is for --attach xdp; with --attach tc no XDP program is attached", ParseOutcome::Error;
  if (o->hook == AttachHook::XdpMulti && seen.xdp_mode)
    return *err = "--xdp-mode is for --attach xdp; --attach xdp-multi is native mode only", ParseOutcome::Error;
  if (o->pin_dir.empty()) o->pin_dir = default_pin_dir(o->iface);
  if ((!o->peers.empty() || !o->peers_file.empty()) && o->listen.empty()) o->listen = "tcp://*:7700";
  if (!o->curve_peers.empty() && o->curve_key.empty())
    return *err = "--curve-peers needs --curve-key (this node's key pair)", ParseOutcome::Error;
  if (!o->curve_key.empty() && !o->cluster())
    return *err = "--curve-key only makes sense with --peers, --listen or --hub", ParseOutcome::Error;
  if (std::string why = cluster_security_error(o->cluster(), o->curve_key, o->insecure_cluster); !why.empty())
    return *err = why, ParseOutcome::Error;
  if (std::string why = query_listen_security_error(o->query_listen, o->query_insecure); !why.empty())
    return *err = why, ParseOutcome::Error;
  if (o->query_socket_group.empty()) o->query_socket_gid = default_socket_group();
  // With --curve-key the key names the node (load_run_config reads it: bind_node_id_to_key).
  if (o->node_id.empty() && o->curve_key.empty()) o->node_id = default_node_id(o->iface);
  return ParseOutcome::Ok;
}

}  // namespace dt
