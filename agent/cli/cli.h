// cli.h - the agent's command line: each subcommand's options and its parser. The option
// tables (cli/options.h): run_flags.cpp for the agent itself, subcommand_options.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bans/ban_policy.h"
#include "cli/options.h"
#include "common/log.h"
#include "common/peer_set.h"
#include "dataplane/dataplane.h"
#include "rules/prefix_limits.h"

namespace dt {

struct RunOptions {
  std::string iface;
  double rate = 0;      // packets per second, or bytes per second with `bytes`
  uint64_t burst = 0;   // packets, or bytes with `bytes`
  bool bytes = false;   // --rate/--burst have byte units: a byte budget (docs/rules.md "Byte budgets")
  std::string pin_dir;  // empty: default_pin_dir(iface)
  XdpMode mode = XdpMode::Auto;
  AttachHook hook = AttachHook::Xdp;  // --attach
  uint32_t max_sources = 0;
  bool max_sources_explicit = false;
  uint32_t max_verified = DT_DEFAULT_MAX_VERIFIED;        // --max-verified: sources a SYN cookie verified
  uint64_t verified_ttl_ns = DT_DEFAULT_VERIFIED_TTL_NS;  // --verified-ttl
  bool keep = false;
  uint64_t stats_interval_ns = 10'000'000'000ull;
  LogLevel log_level = LogLevel::Info;
  // Cluster (enabled by --peers, --hub or --listen).
  std::vector<std::string> peers;  // normalised tcp://host:port (--peers, or the --config file's)
  std::string peers_file;          // --peers-file: more peers, re-read on reload
  std::string config_file;         // --config ("" for none)
  bool config_peers = false;       // `peers` came from the --config file: re-read on reload
  std::vector<std::string> hubs;
  std::string listen;  // normalised; default tcp://*:7700 with --peers
  uint64_t period_ns = 200'000'000;
  uint64_t down_after_ns = 0;      // 0: 5 periods
  uint64_t report_max_age_ns = 0;  // --report-max-age: 0: 10 periods; UINT64_MAX: off
  bool report_mesh = false;        // --report-scheme mesh (default owner: docs/cluster-scale.md)
  uint64_t early_report_ns = 0;    // --early-report: 0: a quarter period; UINT64_MAX: off
  std::string node_id;             // default: default_node_id(iface), host name + MAC hash; with
                                   // --curve-key "" until load_run_config sets the key's
  std::string curve_key, curve_peers;
  bool insecure_cluster = false;      // --insecure-cluster: a cluster without --curve-key, asked for by name
  PeerBanPolicy peer_bans;            // --peer-bans, --peer-ban-*: what this host takes of the peers' bans
  PeerSet peer_verified;              // --peer-verified: whose verified sources (SYN cookies) this host takes
  bool config_peer_verified = false;  // `peer-verified` from the --config file (or its default): re-read on reload
  uint32_t peer_verified_max =
      0;  // --peer-verified-max: one peer's verified sources here; 0: a quarter of --max-verified
  uint64_t auto_ban_max = 1024;            // --auto-ban-max: automatic bans (escalate) in force at once
  std::string rules_file;                  // --rules: packet and tag rules (TOML)
  bool coarse_clock = false;               // --clock coarse
  bool dry_run = false;                    // --dry-run: every rule decides and counts, nothing is dropped
  std::vector<PrefixLimit> prefix_limits;  // --prefix-limit: the default rule's prefix budgets
  // Query socket for applications (tags).
  std::string query_socket;                            // unix stream socket path
  std::string query_listen;                            // TCP ADDR:PORT
  std::vector<std::string> tag_rules;                  // --tag-rule PREFIX=RATE/BURST, besides [[tag]] in --rules
  uint64_t query_max_connections = 4096;               // clamped to the descriptor limit (query_listen.h)
  unsigned query_socket_mode = 0660;                   // --query-socket-mode
  std::string query_socket_group;                      // --query-socket-group as given ("" : the default)
  uint32_t query_socket_gid = 0;                       // the group it names (finish_run_options resolves it)
  std::vector<uint32_t> query_admin_uids;              // --query-admin-uids: BUSY and other admin commands
  uint64_t query_idle_timeout_ns = 60'000'000'000ull;  // --query-idle-timeout
  bool query_insecure = false;                         // --query-insecure: a non-loopback --query-listen
  uint64_t query_max_wait_ns = 1'000'000'000;
  uint64_t max_tags = 1'000'000;
  std::string redis;  // --redis: decides strict tags ("" for none)
  uint64_t redis_timeout_ns = 50'000'000;
  // Events (docs/events.md): --on-event CMD, and when a rule is under attack.
  std::string on_event;                    // as given ("" : none)
  std::vector<std::string> on_event_argv;  // its words (events/command_runner.h split_command)
  uint64_t on_event_jobs = 4;              // children at once
  uint64_t on_event_timeout_ns = 10'000'000'000ull;
  uint64_t on_event_queue = 256;                 // events waiting for a child, at most
  uint64_t attack_drops = 1000;                  // a rule's drops per second that start an attack (0: never)
  uint64_t attack_quiet_ns = 10'000'000'000ull;  // under half of it this long ends one
  // --metrics ADDR:PORT: Prometheus text on GET /metrics (host "": off).
  std::string metrics_host;
  uint16_t metrics_port = 0;
  bool cluster() const { return !peers.empty() || !peers_file.empty() || !hubs.empty() || !listen.empty(); }
};

struct HubOptions {
  std::string listen = "tcp://*:7701";  // frontend; the backend is port + 1
  std::string curve_key, curve_peers;   // CurveZMQ: the hub's key pair, the agents' public keys
  bool insecure_cluster = false;        // --insecure-cluster: relay without keys, asked for by name
  LogLevel log_level = LogLevel::Info;
  bool aggregate = false;           // --aggregate: sum the reports each period (agent/hub/)
  uint64_t period_ns = 50'000'000;  // --period: how often a summing hub sends its sums
};

struct StatsOptions {
  std::string iface;
  std::string pin_dir;
  bool json = false;
  uint64_t top = 10;  // 0: every source
};

struct TopOptions {
  std::string iface;
  std::string pin_dir;
  uint64_t interval_ns = 1'000'000'000;
  uint64_t top = 20;   // 0: every active source
  uint64_t count = 0;  // frames to print, 0: until interrupted
};

// agent explain ADDR [--iface IFACE | --pin-dir DIR] [--json] [--watch DURATION]
struct ExplainOptions {
  std::string address;
  std::string iface, pin_dir;
  bool json = false;
  uint64_t watch_ns = 1'000'000'000;  // how long the running agent watches peers' reports
};

// agent reload [--iface IFACE | --pin-dir DIR]
struct ReloadOptions {
  std::string iface, pin_dir;
};

// agent keygen NAME [--dir DIR] [--endpoint HOST:PORT] [--node-id ID] [--role node|hub] [--from FILE]
struct KeygenOptions {
  std::string name;
  std::string dir;       // "": --from's directory, else "."
  std::string endpoint;  // normalised (tcp://HOST:PORT), "" for none
  std::string node_id;   // "": NAME (or --from's)
  std::string role;      // "node", "hub", or "" (node; with --from: the old .pub's)
  std::string from;      // an existing .key whose .pub is rewritten
};

// agent crowdsec --lapi URL --key-file FILE (--iface IFACE | --pin-dir DIR) [--poll D]
struct CrowdsecOptions {
  std::string lapi;      // the Local API's base URL, as given (crowdsec/lapi_client.h checks it)
  std::string key_file;  // the bouncer's API key (`cscli bouncers add NAME`), first line
  std::string ca_file, cert_file, tls_key_file;  // https: --ca-file, --cert, --key
  bool insecure_lapi = false;                    // --insecure-lapi: http:// to a LAPI on another host
  std::string iface, pin_dir;
  uint64_t poll_ns = 10'000'000'000;
  LogLevel log_level = LogLevel::Info;
  BanMinPrefix min_prefix;  // --min-prefix: wider decisions are refused
};

// agent ban ADDR|PREFIX --for DURATION [--reason TEXT] [--iface IFACE | --pin-dir DIR]
// agent unban ADDR|PREFIX [--iface IFACE | --pin-dir DIR]
// agent bans [--iface IFACE | --pin-dir DIR] [--json]   (cli/ban_options.cpp)
struct BanOptions {
  std::string target;  // the prefix as given
  std::string iface, pin_dir;
  uint64_t for_ns = 0;  // --for (required for ban)
  std::string reason;   // --reason
  bool json = false;    // bans: --json
};

// Each parses its subcommand's argv (argv[0]: the subcommand) into *out: -1 to go on with
// *out, else the exit code once --help is printed (0) or the error with its hint (2).
// `subcommand`: "" (run) or "check", which parse alike and name themselves in messages.
int parse_run_command(int argc, char **argv, RunOptions *out, const char *subcommand);
int parse_stats_command(int argc, char **argv, StatsOptions *out);
int parse_top_command(int argc, char **argv, TopOptions *out);
int parse_explain_command(int argc, char **argv, ExplainOptions *out);
int parse_reload_command(int argc, char **argv, ReloadOptions *out);
int parse_hub_command(int argc, char **argv, HubOptions *out);
int parse_keygen_command(int argc, char **argv, KeygenOptions *out);
int parse_crowdsec_command(int argc, char **argv, CrowdsecOptions *out);  // cli/crowdsec_options.cpp
int parse_ban_command(int argc, char **argv, BanOptions *out);
int parse_unban_command(int argc, char **argv, BanOptions *out);
int parse_bans_command(int argc, char **argv, BanOptions *out);

// The run options with their --config file; *err the message on Error.
ParseOutcome parse_run_options(int argc, char **argv, RunOptions *out, std::string *err);
// `agent --help`.
std::string run_usage();
// The `peers` of a --config file as the file says now (for a reload), normalised, added
// to *out. False with "FILE:LINE: peers: why" in *err.
bool read_config_peers(const std::string &config_file, std::vector<std::string> *out, std::string *err);
// The `peer-verified` of a --config file as the file says now (for a reload): its value, or
// `all` (the default) without one. False with "FILE:LINE: peer-verified: why" in *err.
bool read_config_peer_verified(const std::string &config_file, PeerSet *out, std::string *err);

// Secure is the default: a cluster without keys runs only when asked for by name
// (--insecure-cluster), since anyone who reaches its ports could forge, read or silence
// reports. "" when the combination is fine, else why not (agent run, check and hub).
std::string cluster_security_error(bool cluster, const std::string &curve_key, bool insecure);

}  // namespace dt
