// subcommand_options.cpp - the option tables of agent stats, top, explain, reload, hub and
// keygen (cli.h), each with the --help text above its options and its checks after them.
#include "cli/cli.h"
#include "cli/option_values.h"
#include "common/endpoint.h"
#include "common/program_name.h"

namespace dt {
namespace {

const char kStatsUsage[] =
    "Usage: %prog stats [--iface IFACE | --pin-dir DIR] [--json] [--top N]\n"
    "\n"
    "Reads the pinned maps (no running agent needed) and prints the global counters\n"
    "and the sources with the most drops, with their current tokens.\n"
    "\n";

const char kTopUsage[] =
    "Usage: %prog top [--iface IFACE | --pin-dir DIR] [--interval D] [--top N] [--count N]\n"
    "\n"
    "Like %prog stats, but live: every D it reads the pinned maps again and shows what\n"
    "changed, as rates: packets passed and dropped per second, in total and for each\n"
    "source that sent in that interval, the most dropped first. On a terminal the\n"
    "screen is redrawn; otherwise frames follow each other, separated by a blank line.\n"
    "\n";

const char kExplainUsage[] =
    "Usage: %prog explain ADDR [--iface IFACE | --pin-dir DIR] [--json] [--watch DURATION]\n"
    "\n"
    "Why is ADDR throttled (or not)? Reads the pinned maps: the rule that matches ADDR (the\n"
    "prefix in the live rules and each candidate's conditions), the bucket key of each\n"
    "rule that applies, its tokens now and its passed / dropped / debited / would-drop\n"
    "counts, dry run or not. A running agent in a cluster also watches its peers' reports\n"
    "for DURATION and says which peers reported ADDR, with how many hits.\n"
    "\n";

const char kReloadUsage[] =
    "Usage: %prog reload [--iface IFACE | --pin-dir DIR]\n"
    "\n"
    "Makes the agent of IFACE re-read its --rules file and its peers (--peers-file,\n"
    "the peers of its --config file) like kill -HUP, and waits up to 5 s to say\n"
    "whether the new rules and peers are in force (peers added and removed live,\n"
    "buckets kept). An invalid file changes nothing: the agent keeps its rules or\n"
    "peers and this command prints why (exit 1).\n"
    "\n";

const char kHubUsage[] =
    "Usage: %prog hub [--listen ADDR:PORT] [--curve-key FILE --curve-peers DIR | --insecure-cluster]\n"
    "                 [--aggregate [--period D]] [--log-level LEVEL]\n"
    "\n"
    "Relays peer reports so that agents need not all connect to each other: agents\n"
    "started with --hub HOST:PORT publish to ADDR:PORT (an XSUB socket) and subscribe\n"
    "at port+1 (XPUB); the hub forwards every report to every agent (zmq_proxy).\n"
    "Run two hubs and give agents both for redundancy (duplicates are dropped).\n"
    "With --curve-key both ports are CurveZMQ servers: only agents whose public key is\n"
    "in --curve-peers may publish or subscribe (others are refused and logged), and\n"
    "every report is encrypted. Agents then need --curve-key, and the hub's .pub file\n"
    "(with 'endpoint = HOST:PORT' of --hub) in their --curve-peers, with every agent's\n"
    ".pub: the hub relays signed reports, which each agent checks against the key of\n"
    "the node they name (the hub cannot forge or alter one). kill -HUP makes\n"
    "the hub read --curve-peers again (agents added or removed without a restart).\n"
    "Without --curve-key the hub refuses to start unless --insecure-cluster is given.\n"
    "With --aggregate the hub sums instead of relaying: every --period it sends each\n"
    "agent one aggregate (the hits of every report it received, per source and tag,\n"
    "and which reports those were), signed with its key (--role hub; agents accept\n"
    "aggregates only from such keys); messages it does not sum (adaptive factors,\n"
    "resend requests, bans) pass unchanged. Give agents two summing hubs: they take\n"
    "one hub's sums at a time and switch when it is silent for their --down-after\n"
    "(docs/hub.md).\n"
    "\n";

const char kKeygenUsage[] =
    "Usage: %prog keygen NAME [--dir DIR] [--endpoint HOST:PORT] [--node-id ID] [--role node|hub]\n"
    "       %prog keygen NAME --from NAME.key [--dir DIR] [--endpoint HOST:PORT] [--node-id ID] [--role ...]\n"
    "\n"
    "Creates the keys of one member of a secured cluster: DIR/NAME.key (its secret, mode\n"
    "0600; give it to that agent's or hub's --curve-key) and DIR/NAME.pub (its public keys;\n"
    "copy it into every member's --curve-peers directory). The .key holds a CurveZMQ key\n"
    "pair; the node's report signing key is derived from it, and the .pub carries its\n"
    "public half, so peers check that each report comes from the node it names.\n"
    "\n";

// A hub's --curve-key and --curve-peers go together.
ParseOutcome check_hub_curve(const HubOptions &o, std::string *err) {
  if (o.curve_key.empty() == o.curve_peers.empty()) {
    *err = cluster_security_error(true, o.curve_key, o.insecure_cluster);
    return err->empty() ? ParseOutcome::Ok : ParseOutcome::Error;
  }
  *err = o.curve_key.empty() ? "--curve-peers needs --curve-key (the hub's key pair)"
                             : "--curve-key needs --curve-peers DIR (the agents' public keys)";
  return ParseOutcome::Error;
}

}  // namespace

int parse_stats_command(int argc, char **argv, StatsOptions *o) {
  std::vector<OptionSpec> options = with_pin_target(
      &o->iface, &o->pin_dir,
      {
          {"json", 0, nullptr, "machine-readable output", turn_on(&o->json)},
          {"top", 0, "N", "show N sources (default 10; 0 shows every source)", count_into(&o->top, 0, UINT32_MAX)},
      });
  return parse_subcommand({command_name("stats"), kStatsUsage, std::move(options)}, argc, argv,
                          pin_target_check(o, "read"));
}

int parse_top_command(int argc, char **argv, TopOptions *o) {
  std::vector<OptionSpec> options = with_pin_target(
      &o->iface, &o->pin_dir,
      {
          {"interval", 0, "D", "time between frames, 100ms to 1h (default 1s)",
           duration_into(&o->interval_ns, 100'000'000, 3'600'000'000'000ull, "from 100ms to 1h")},
          {"top", 0, "N", "show N sources (default 20; 0 shows every active source)",
           count_into(&o->top, 0, UINT32_MAX)},
          {"count", 0, "N", "stop after N frames (default 0: until interrupted)", count_into(&o->count, 0, UINT32_MAX)},
      });
  return parse_subcommand({command_name("top"), kTopUsage, std::move(options)}, argc, argv,
                          pin_target_check(o, "watch"));
}

int parse_explain_command(int argc, char **argv, ExplainOptions *o) {
  std::vector<OptionSpec> options =
      with_pin_target(&o->iface, &o->pin_dir,
                      {
                          {"json", 0, nullptr, "machine-readable output", turn_on(&o->json)},
                          {"watch", 0, "DURATION", "how long to watch the peers' reports (default 1s; 0: do not ask)",
                           [o](const std::string &v, std::string *why) {
                             if (v == "0") return o->watch_ns = 0, true;
                             return duration_into(&o->watch_ns, 0, 10'000'000'000ull, "from 0 to 10s")(v, why);
                           }},
                      });
  const CommandSpec spec(command_name("explain"), kExplainUsage, std::move(options), 1);  // ADDR
  return parse_subcommand(spec, argc, argv, [o](const std::vector<std::string> &operands, std::string *err) {
    if (operands.empty())
      return *err = "say which address to explain: " + command_name("explain") + " ADDR", ParseOutcome::Error;
    o->address = operands[0];
    return resolve_pin_dir(o->iface, &o->pin_dir, "explain", err);
  });
}

int parse_reload_command(int argc, char **argv, ReloadOptions *o) {
  std::vector<OptionSpec> options =
      with_pin_target(&o->iface, &o->pin_dir, {}, "the agent pinned in /sys/fs/bpf/dthrottle/IFACE",
                      "the agent whose maps are pinned in DIR");
  return parse_subcommand({command_name("reload"), kReloadUsage, std::move(options)}, argc, argv,
                          pin_target_check(o, "reload"));
}

int parse_hub_command(int argc, char **argv, HubOptions *o) {
  std::vector<OptionSpec> options = {
      {"listen", 0, "ADDR:PORT", "frontend to bind (default *:7701; backend: port + 1)",
       [o](const std::string &v, std::string *why) {
         std::string backend;
         return normalize_endpoint(v, true, &o->listen, why) && hub_backend_endpoint(v, &backend, why);
       }},
      {"curve-key", 0, "FILE", "the hub's CurveZMQ key pair (%prog keygen hub --role hub)", store(&o->curve_key)},
      {"curve-peers", 0, "DIR", "public keys (*.pub) of the agents allowed in", store(&o->curve_peers)},
      {"insecure-cluster", 0, nullptr,
       "relay without keys: anyone who reaches the hub can\npublish and read every report (docs/security.md)",
       turn_on(&o->insecure_cluster)},
      {"log-level", 0, "LEVEL", "debug, info, warn or error (default info)", log_level_into(&o->log_level)},
      {"aggregate", 0, nullptr,
       "sum the reports each period and send one aggregate\n(docs/hub.md), instead of relaying each one",
       turn_on(&o->aggregate)},
      {"period", 0, "D",
       "with --aggregate: how often the sums go out (default\n50ms: a report waits for the next one; a quarter of\nthe "
       "agents' default --period)",
       duration_into(&o->period_ns, 10'000'000, 60'000'000'000ull, "from 10ms to 60s")},
  };
  return parse_subcommand({command_name("hub"), kHubUsage, std::move(options)}, argc, argv,
                          [o](const std::vector<std::string> &, std::string *err) { return check_hub_curve(*o, err); });
}

int parse_keygen_command(int argc, char **argv, KeygenOptions *o) {
  std::vector<OptionSpec> options = {
      {"dir", 0, "DIR", "where to write the files (default: --from's directory, else\nthe current one)",
       store(&o->dir)},
      {"node-id", 0, "ID",
       "the node id the keys speak for (default NAME): the agent with\nthis .key takes it as its --node-id",
       store(&o->node_id)},
      {"role", 0, "node|hub",
       "node (default): signs its own reports; hub: a `%prog hub`'s\nkey (reserved to sign a summing hub's aggregate "
       "reports)",
       [o](const std::string &v, std::string *why) {
         if (v != "node" && v != "hub") return *why = "'" + v + "' is not one of node, hub", false;
         return o->role = v, true;
       }},
      {"endpoint", 0, "H:P",
       "where NAME publishes, as the others reach it (an agent's\n--listen, a hub's --listen), recorded in NAME.pub",
       [o](const std::string &v, std::string *why) { return normalize_endpoint(v, false, &o->endpoint, why); }},
      {"from", 0, "FILE",
       "rewrite NAME.pub (default DIR: FILE's) from an existing .key,\nkeeping its key pair: upgrades an older "
       "keygen's files (adds\nnode_id to FILE if it has none); keeps the old .pub's\nendpoint and role unless given",
       store(&o->from)},
  };
  const CommandSpec spec(command_name("keygen"), kKeygenUsage, std::move(options), 1);  // NAME
  return parse_subcommand(spec, argc, argv, [o](const std::vector<std::string> &operands, std::string *err) {
    if (operands.empty() || operands[0].empty() || operands[0].find('/') != std::string::npos)
      return *err = "give the node a NAME (no '/')", ParseOutcome::Error;
    o->name = operands[0];
    return ParseOutcome::Ok;
  });
}

}  // namespace dt
