// run_flags.cpp - the options of `dthrottle-agent` (run) and its `check`: names, --help, values.
#include "cli/run_flags.h"

#include "bans/ban_sync.h"
#include "cli/option_values.h"
#include "common/endpoint.h"
#include "common/node_id.h"
#include "common/parse_values.h"
#include "common/peer_set.h"
#include "common/program_name.h"
#include "events/command_runner.h"
#include "query/query_listen.h"
#include "rules/prefix_limits.h"
#include "rules/tags.h"

namespace dt {
namespace {

const char kRunUsage[] =
    "Usage: %prog --iface IFACE --rate R --burst B [--peers HOST:PORT,...] [options]\n"
    "       %prog stats [--iface IFACE | --pin-dir DIR] [--json] [--top N]\n"
    "       %prog top [--iface IFACE | --pin-dir DIR] [--interval D] [--top N] [--count N]\n"
    "       %prog check [--config FILE] [options]    # validate; loads nothing\n"
    "       %prog reload [--iface IFACE | --pin-dir DIR]\n"
    "       %prog explain ADDR [--iface IFACE | --pin-dir DIR] [--json]   # why is ADDR throttled?\n"
    "       %prog hub [--listen ADDR:PORT] [--curve-key FILE --curve-peers DIR | --insecure-cluster]\n"
    "       %prog keygen NAME [--dir DIR] [--endpoint HOST:PORT] [--node-id ID] [--role node|hub]\n"
    "           [--from NAME.key]\n"
    "       %prog ban ADDR|PREFIX --for D [--reason TEXT] [--iface IFACE | --pin-dir DIR]\n"
    "       %prog unban ADDR|PREFIX [--iface IFACE | --pin-dir DIR]\n"
    "       %prog bans [--iface IFACE | --pin-dir DIR] [--json]\n"
    "       %prog crowdsec --lapi URL --key-file FILE (--iface IFACE | --pin-dir DIR)   # CrowdSec bouncer\n"
    "       %prog capture (--iface IFACE | --pin-dir DIR) -w FILE [--dropped|--would-drop|--passed] [...]\n"
    "       %prog suggest (--iface IFACE | --pin-dir DIR) [--for D] [--rules FILE] [...]   # limits from traffic\n"
    "       %prog fingerprint -r FILE [--name NAME] [--top N]   # an attack's header values, from a capture\n"
    "\n"
    "Throttles packets per source address on IFACE with an XDP program (or at tc\n"
    "ingress, --attach tc): every source\n"
    "gets a token bucket of B packets that refills at R packets per second; a packet\n"
    "without a token is dropped. Runs until SIGINT or SIGTERM, then detaches.\n"
    "If the agent dies, the program stays attached and keeps enforcing; a restarted\n"
    "agent takes it over with the same bucket state.\n"
    "\n";

const char kCheckUsage[] =
    "Usage: %prog check [--config FILE] [options]\n"
    "\n"
    "Checks a command line of the agent and its --config file exactly as the agent would\n"
    "(the same options, limits and files: rules, tag rules, peers, CurveZMQ keys), then\n"
    "exits without loading, attaching or binding anything: 0 with a summary, or 2 with\n"
    "the message the agent would give. It takes the agent's options (%prog --help):\n"
    "\n";

const char kRunExamples[] =
    "Examples:\n"
    "  %prog --iface eth0 --rate 100 --burst 50\n"
    "  %prog --iface eth0 --rate 100 --burst 50 --peers 198.18.1.2:7700,198.18.1.3:7700 \\\n"
    "        --curve-key /etc/dthrottle/web1.key --curve-peers /etc/dthrottle/peers.d\n"
    "  %prog --iface eth0 --rate 100 --burst 50 --peers-file /etc/dthrottle/peers --insecure-cluster\n"
    "  %prog --iface eth0 --rate 10/m --burst 1      # one packet every 6 s per source\n"
    "  %prog --config /etc/dthrottle/eth0.conf --iface eth0\n"
    "  %prog stats --iface eth0 --top 20\n"
    "  %prog top --iface eth0\n"
    "  bpftool map dump pinned /sys/fs/bpf/dthrottle/eth0/buckets\n";

// A line of --help between groups of options.
OptionSpec text(const char *line) { return {nullptr, 0, nullptr, line, {}}; }

// --rate or --burst: what `parse` makes of it, into *to; noted as given (*given, *text, and
// *bytes: with a byte unit) for the checks after the last option.
template <class T>
OptionHandler budget_into(T *to, bool *given, std::string *text, bool *bytes,
                          bool (*parse)(const std::string &, T *, bool *, std::string *)) {
  return [=](const std::string &v, std::string *why) {
    *given = true, *text = v;
    return parse(v, to, bytes, why);
  };
}

// -i, -r, -b, --rules, --dry-run, --prefix-limit, --pin-dir, --xdp-mode, --attach: the XDP
// program and its tables.
std::vector<OptionSpec> dataplane_options(RunOptions *o, RunFlagsSeen *seen) {
  return {
      {"iface", 'i', "IFACE", "network interface to protect (required)", store(&o->iface)},
      {"rate", 'r', "R",
       "refill rate per source, packets per second (required);\nfractions allowed (0.1666 = one packet every 6 s), "
       "and\n"
       "the suffixes /s, /m, /h (10/m = one every 6 s); with a\nbyte unit a byte budget: 100kB/s, 10Mbit/s, 1MiB/s",
       budget_into(&o->rate, &seen->rate, &seen->rate_text, &seen->rate_bytes, parse_budget_rate)},
      {"burst", 'b', "B",
       "bucket size: packets a new or idle source may send at\nonce, 1 to 1000000000 (required); bytes with a byte\n"
       "rate: 15kB, 64KiB (at least 1518B, one full frame)",
       budget_into(&o->burst, &seen->burst, &seen->burst_text, &seen->burst_bytes, parse_budget_burst)},
      {"rules", 0, "FILE",
       "packet and tag rules (TOML, dthrottle-rules(5)); --rate and\n--burst then make the default rule for unmatched "
       "sources,\nand without them unmatched sources pass. kill -HUP or\n`%prog reload` re-reads it without losing "
       "bucket state",
       store(&o->rules_file)},
      {"dry-run", 0, nullptr,
       "decide and count every packet as if enforcing, but drop\nnothing: what would be dropped is counted as "
       "would-drop\n(%prog stats, %prog top, metrics). Per rule: dry_run =\ntrue in --rules, then enforce by a reload "
       "(buckets kept)",
       turn_on(&o->dry_run)},
      {"prefix-limit", 0, "L",
       "also cap the default rule's sources per prefix: L is\nv4/N=RATE,burst=B or v6/N=RATE,burst=B (repeatable, "
       "up\nto 4 levels per family, e.g. v4/24=1000/s,burst=2000 and\nv4/16=5000/s,burst=10000): a packet passes only "
       "if every\nlevel of its prefix has a token, checked before its\nsource gets a bucket (spoofed floods; "
       "docs/rules.md);\n"
       "prefix_limits in a [[rule]] of --rules",
       parsed_append(&o->prefix_limits, parse_prefix_limit)},
      {"pin-dir", 0, "DIR", "where the maps and the XDP link are pinned\n(default /sys/fs/bpf/dthrottle/IFACE)",
       absolute_path_into(&o->pin_dir)},
      {"xdp-mode", 0, "MODE", "auto (native, falling back to generic), native or\ngeneric (default auto)",
       [seen, mode = one_of_into(&o->mode, parse_xdp_mode, "auto, native, generic")](const std::string &v,
                                                                                     std::string *why) {
         seen->xdp_mode = true;
         return mode(v, why);
       }},
      {"attach", 0, "HOOK",
       "xdp (default: the XDP hook alone), xdp-multi or tc.\nxdp-multi: native XDP in libxdp's dispatcher, beside\n"
       "programs loaded with xdp-loader or libxdp (run priority\n50; what dthrottle passes goes on to the next one);\n"
       "refused on kernels without extension programs.\ntc: the same decisions at tc ingress (a tcx link on\n"
       "Linux 6.6+, else a clsact filter), for hosts whose XDP\nhook belongs to another program. Each keeps the pins,\n"
       "survival and take-over; stopping removes only what\ndthrottle added",
       one_of_into(&o->hook, parse_attach_hook, "xdp, xdp-multi, tc")},
  };
}

// The query socket for applications: --query-socket, --query-listen, --tag-rule, ... --redis-timeout.
std::vector<OptionSpec> query_options(RunOptions *o) {
  return {
      text("\nQuery socket (applications ask about any string tag, see docs/query-protocol.md):"),
      {"query-socket", 0, "PATH",
       "unix stream socket: send \"TAG\\n\", read \"OK\\n\" or \"NO\\n\";\n\"BUSY NAME\\n\" tells adaptive rules the "
       "service is busy",
       store(&o->query_socket)},
      {"query-listen", 0, "A:P",
       "the same over TCP, e.g. 127.0.0.1:7800 (a bare port is\n127.0.0.1); another address needs --query-insecure",
       checked_into(&o->query_listen, parse_query_listen)},
      {"query-insecure", 0, nullptr,
       "serve --query-listen on an address that is not loopback:\nanyone who reaches it spends any tag's budget",
       turn_on(&o->query_insecure)},
      {"query-socket-mode", 0, "MODE", "permissions of the unix socket, octal (default 0660)",
       [o](const std::string &v, std::string *why) { return parse_socket_mode(v, &o->query_socket_mode, why); }},
      {"query-socket-group", 0, "GROUP",
       "group of the unix socket: its members may ask (default\ndthrottle if that group exists, else root's)",
       [o](const std::string &v, std::string *why) {
         gid_t gid = 0;
         return resolve_group(v, &gid, why) && (o->query_socket_group = v, o->query_socket_gid = gid, true);
       }},
      {"query-admin-uids", 0, "LIST",
       "users (UID or NAME, comma separated) whose unix-socket\nconnections may send BUSY and VERIFY (root and the "
       "agent's own\nuid always may; TCP clients never)",
       [o](const std::string &v, std::string *why) {
         std::vector<uid_t> uids;
         if (!parse_uid_list(v, &uids, why)) return false;
         return o->query_admin_uids.insert(o->query_admin_uids.end(), uids.begin(), uids.end()), true;
       }},
      {"query-idle-timeout", 0, "D", "close connections silent this long (default 60s)",
       duration_into(&o->query_idle_timeout_ns, 100'000'000, 86'400'000'000'000ull, "from 100ms to 24h")},
      {"tag-rule", 0, "P=R/B",
       "tags starting with P: rate R, burst B (repeatable; also\n[[tag]] in --rules); the longest prefix wins; a tag "
       "no\nrule matches is allowed",
       checked_append(&o->tag_rules, parse_tag_rule)},
      {"query-max-wait", 0, "D", "longest wait a RESERVE may be granted (default 1s)",
       duration_into(&o->query_max_wait_ns)},
      {"query-max-connections", 0, "N", "(default 4096; at most the descriptor limit minus 256\nand 2 per peer or hub)",
       count_into(&o->query_max_connections, 1, 1000000)},
      {"max-tags", 0, "N", "tag buckets kept (default 1000000)", count_into(&o->max_tags, 1, 100000000)},
      {"redis", 0, "ADDR",
       "Redis (HOST:PORT or a unix socket path) deciding strict\ntags (strict = true in [[tag]], or --tag-rule "
       "P=R/B!strict)",
       [o](const std::string &v, std::string *why) {
         std::string host;
         int port = 0;
         return parse_redis_address(v, &host, &port, why) && (o->redis = v, true);
       }},
      {"redis-timeout", 0, "D", "connect and command timeout (default 50ms)",
       duration_into(&o->redis_timeout_ns, 1'000'000, 10'000'000'000ull, "between 1ms and 10s")},
  };
}

// --clock, --max-sources, --keep, --stats-interval, --log-level, --metrics, --config: how the
// agent runs, reports, starts and stops.
std::vector<OptionSpec> agent_options(RunOptions *o) {
  return {
      text(""),
      {"clock", 0, "MODE",
       "precise (default) or coarse: the coarse kernel clock saves\n~30 ns per packet on virtual machines, and may "
       "grant a\nsource up to rate x 4 ms more in a window (docs/performance.md)",
       either_into(&o->coarse_clock, "precise", "coarse")},
      {"max-sources", 0, "N",
       "capacity of the source table, least recently seen\nsources evicted beyond it (default 1048576)",
       [o](const std::string &v, std::string *why) {
         uint64_t n = 0;
         if (!parse_count(v, 1, 1u << 28, &n, why)) return false;
         o->max_sources = static_cast<uint32_t>(n), o->max_sources_explicit = true;
         return true;
       }},
      {"max-verified", 0, "N",
       "capacity of the table of sources verified by a SYN cookie\n(syn_cookies rules), least recently "
       "verified evicted\nbeyond it (default 65536)",
       [o](const std::string &v, std::string *why) {
         uint64_t n = 0;
         if (!parse_count(v, 1, 1u << 24, &n, why)) return false;
         return o->max_verified = static_cast<uint32_t>(n), true;
       }},
      {"verified-ttl", 0, "D",
       "how long a source stays verified after its SYN cookie\nchecked out, and at most when a peer or VERIFY says "
       "so\n(default 10m)",
       duration_into(&o->verified_ttl_ns, 1'000'000'000ull, 7ull * 24 * 3600 * 1'000'000'000ull,
                     "between 1s and 7 days")},
      {"peer-verified", 0, "WHO",
       "which peers' verified sources (SYN cookies) this host\ntakes: all (default), none, or NODE[,NODE...] (node "
       "ids);\nthe others' are refused, counted and logged",
       [o](const std::string &v, std::string *why) { return parse_peer_set(v, &o->peer_verified, why); }},
      {"peer-verified-max", 0, "N",
       "at most N verified sources of any one peer in force here\n(default a quarter of --max-verified: 16384); "
       "past it\nthe peer's new ones are refused, counted and logged",
       count_into(&o->peer_verified_max, 1, 1u << 24)},
      {"keep", 0, nullptr,
       "on exit, leave the program attached and the maps pinned\n(for upgrades: the next agent takes over)",
       turn_on(&o->keep)},
      {"stats-interval", 0, "D", "log the counters every D, e.g. 10s or 500ms (default 10s)",
       duration_into(&o->stats_interval_ns)},
      {"log-level", 0, "LEVEL", "debug, info, warn or error (default info)", log_level_into(&o->log_level)},
      {"metrics", 0, "ADDR:PORT",
       "serve Prometheus metrics on http://ADDR:PORT/metrics; a\nbare port is 127.0.0.1 (this host only); "
       "0.0.0.0\nexposes them on every interface (logged once)",
       [o](const std::string &v, std::string *why) {
         HostPort m;
         if (!parse_metrics_address(v, &m, why)) return false;
         return o->metrics_host = m.host, o->metrics_port = m.port, true;
       }},
      {"config", 0, "FILE",
       "read options from FILE: one `name = value` a line, named\nlike these flags without dashes, # for comments; "
       "flags\ngiven on the command line override it",
       // read by parse_run_options ahead of the command line
       [](const std::string &v, std::string *why) { return !v.empty() || (*why = "needs a file name", false); }},
      {"help", 'h', nullptr, "show this help", {}},
  };
}

// --peers, --peers-file, --listen, --hub, --period, --node-id, --down-after, --report-max-age,
// --curve-key, --curve-peers: one budget per source across hosts.
std::vector<OptionSpec> cluster_options(RunOptions *o) {
  return {
      text("\nCluster options (one budget per source across hosts):"),
      {"peers", 'p', "LIST",
       "peers' report endpoints, HOST:PORT[,HOST:PORT...]; may be\nrepeated; a tcp:// prefix is accepted",
       endpoints_into(&o->peers, false)},
      {"peers-file", 0, "PATH",
       "more peers, one HOST:PORT a line (# comments); kill -HUP\nor `%prog reload` re-reads it (and the --config "
       "file's\npeers), connects to added peers, drops removed ones,\nresolves DNS names again; buckets are kept",
       [o](const std::string &v, std::string *why) {
         return !v.empty() ? (o->peers_file = v, true) : (*why = "needs a file name", false);
       }},
      {"listen", 0, "ADDR:PORT",
       "where this agent publishes its reports (default *:7700\nwith --peers or --peers-file)",
       [o](const std::string &v, std::string *why) { return normalize_endpoint(v, true, &o->listen, why); }},
      {"hub", 0, "HOST:PORT",
       "publish to a `%prog hub` at HOST:PORT and subscribe at\nHOST:PORT+1, instead of (or besides) a full mesh",
       endpoints_into(&o->hubs, true)},
      {"period", 0, "D", "how often reports are exchanged (default 200ms)",
       duration_into(&o->period_ns, 10'000'000, 60'000'000'000ull, "from 10ms to 60s")},
      {"node-id", 0, "NAME",
       "this agent's name in reports, unique in the cluster\n(default: the host name and a hash of IFACE's MAC\n"
       "address, e.g. web1-3fa2c1, so cloned hosts differ;\nwith --curve-key: the node_id of the key file)",
       [o](const std::string &v, std::string *why) {
         if (!valid_node_id(v)) return *why = "'" + v + "' must be 1 to 64 characters of A-Z a-z 0-9 . _ : -", false;
         return o->node_id = v, true;
       }},
      {"down-after", 0, "D",
       "a peer silent this long is reported down (default 11\nperiods); an idle agent says \"alive\" every (D - "
       "period)\n/ 2 (default 5 periods). With --curve-key in a full mesh\na peer is also down once its link drops, "
       "and by default\nsays \"alive\" every 20 s (down after 40 s + a period)",
       duration_into(&o->down_after_ns)},
      {"report-max-age", 0, "D",
       "peers' reports older than D are not charged, nor those a\npeer sent while it could not hear us (a "
       "partition's\nbacklog); at least one period, at most 1h (default 10\nperiods); off: charge every report "
       "whatever its age",
       duration_or_off_into(&o->report_max_age_ns, 0, 3'600'000'000'000ull, "at most 1h (or off)")},
      {"report-scheme", 0, "S",
       "owner (default): sources seen only here go to their owner\npeer, shared ones to every peer; mesh: every "
       "source to\nevery peer (docs/cluster-scale.md)",
       either_into(&o->report_mesh, "owner", "mesh")},
      {"early-report", 0, "D",
       "sources new to this host go to their owner (or every\npeer) at ticks D apart within a period, not only at "
       "its\nend: a new client sprayed over many hosts gets about one\nbudget, not one each (default a quarter period; "
       "off)",
       duration_or_off_into(&o->early_report_ns, 1'000'000, 60'000'000'000ull, "from 1ms (or off)")},
      {"curve-key", 0, "FILE",
       "this node's CurveZMQ key pair (%prog keygen): encrypt and\nauthenticate peer traffic (also through a `%prog "
       "hub\n--curve-key`), and sign every report with the node's key;\nthe node's boot counter is kept beside it "
       "(NAME.boot) if\nthat directory is writable",
       store(&o->curve_key)},
      {"curve-peers", 0, "DIR",
       "public keys (*.pub) of the peers allowed to subscribe, of\nthe hubs, and of every node whose reports are "
       "applied:\na report is checked against its node's key (read again\non reload)",
       store(&o->curve_peers)},
      {"insecure-cluster", 0, nullptr,
       "run the cluster without keys: anyone who reaches its\nports can forge, read or silence reports\n"
       "(docs/security.md); without it a cluster needs --curve-key",
       turn_on(&o->insecure_cluster)},
      text(""),
  };
}

// --peer-bans, --peer-ban-*: what this host takes of its peers' bans (docs/bans.md).
std::vector<OptionSpec> peer_ban_options(RunOptions *o) {
  PeerBanPolicy *p = &o->peer_bans;
  return {
      text("Peers' bans (docs/bans.md \"What a member may ban\"):"),
      {"peer-bans", 0, "WHO",
       "which peers' bans this host takes: all (default), none,\nor NODE[,NODE...] (node ids); a peer lifts only its "
       "own",
       [p](const std::string &v, std::string *why) { return parse_peer_bans(v, p, why); }},
      {"peer-ban-min-prefix", 0, "V4,V6",
       "refuse peers' bans wider than these prefix lengths\n(default 16,48: no /15 or wider, no IPv6 /47 or wider)",
       [p](const std::string &v, std::string *why) { return parse_ban_min_prefix(v, &p->min_prefix, why); }},
      {"peer-ban-max-duration", 0, "D",
       "a peer's ban lasts at most D here, 1s to 30d (default\n1d); its origin's re-announcements renew it",
       [p](const std::string &v, std::string *why) { return parse_ban_duration(v, &p->max_duration_ns, why); }},
      {"peer-ban-max", 0, "N", "at most N bans of any one peer in force here\n(default 4096, at most 16384)",
       count_into(&p->max_per_peer, 1, kMaxPeerBans)},
      {"peer-ban-rate", 0, "N", "at most N new bans a second from any one peer, in\nbursts of 10 s worth (default 100)",
       count_into(&p->rate_per_s, 1, 100000)},
      {"auto-ban-max", 0, "N",
       "at most N automatic bans (rules with escalate) in force\nat once; past it none is made, counted and logged\n"
       "(default 1024, at most 65536)",
       count_into(&o->auto_ban_max, 1, 65536)},
      text(""),
  };
}

// --on-event, --on-event-*, --attack-*: events for the operator's tools (docs/events.md).
std::vector<OptionSpec> event_options(RunOptions *o) {
  return {
      text("Events (docs/events.md; also EVENTS 1 on the query socket, for admins):"),
      {"on-event", 0, "CMD",
       "run CMD for each event (ban, unban, attack_started and\n_ended, peer_down and _up), one JSON line on its "
       "stdin;\nno shell: an absolute path and words ('quoted' ones\nallowed); /bin/sh -c '...' for a shell. It runs "
       "as the\nagent's uid with no capability and no descriptor of it",
       [o](const std::string &v, std::string *why) {
         return split_command(v, &o->on_event_argv, why) && (o->on_event = v, true);
       }},
      {"on-event-jobs", 0, "N", "at most N commands at once (default 4)", count_into(&o->on_event_jobs, 1, 64)},
      {"on-event-timeout", 0, "D", "a command still running after D is killed (default 10s)",
       duration_into(&o->on_event_timeout_ns, 100'000'000, 3'600'000'000'000ull, "from 100ms to 1h")},
      {"on-event-queue", 0, "N", "at most N events wait for a command; more are dropped\nand counted (default 256)",
       count_into(&o->on_event_queue, 1, 65536)},
      {"attack-drops", 0, "N",
       "a rule dropping N packets a second or more is under\nattack (attack_started); it ends (attack_ended) when "
       "its\ndrops stay under N/2 for --attack-quiet; attack_drops in\na [[rule]] overrides it; 0: off (default 1000)",
       count_into(&o->attack_drops, 0, UINT64_MAX)},
      {"attack-quiet", 0, "D", "see --attack-drops (default 10s)",
       duration_into(&o->attack_quiet_ns, 1'000'000'000, 86'400'000'000'000ull, "from 1s to 24h")},
      text(""),
  };
}

void append(std::vector<OptionSpec> *to, std::vector<OptionSpec> more) {
  for (auto &o : more) to->push_back(std::move(o));
}

}  // namespace

const std::vector<std::string> kRunListSettings = {"peers", "hub", "prefix-limit", "query-admin-uids"};

CommandSpec run_command(RunOptions *o, RunFlagsSeen *seen, const std::string &subcommand) {
  CommandSpec spec;
  spec.command = command_name(subcommand);
  spec.usage = subcommand.empty() ? kRunUsage : kCheckUsage;
  spec.options = dataplane_options(o, seen);
  append(&spec.options, query_options(o));
  append(&spec.options, agent_options(o));
  append(&spec.options, cluster_options(o));
  append(&spec.options, peer_ban_options(o));
  append(&spec.options, event_options(o));
  spec.epilogue = subcommand.empty() ? kRunExamples : "";
  return spec;
}

}  // namespace dt
