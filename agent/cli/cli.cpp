// cli.cpp - flag parsing with getopt_long; every error names the flag and the value.
#include "cli/cli.h"

#include <getopt.h>

#include <unistd.h>

#include <set>

#include "common/endpoint.h"
#include "common/node_id.h"
#include "dataplane/policy.h"
#include "common/parse_values.h"
#include "common/report_types.h"
#include "dthrottle/common.h"
#include "rules/config_file.h"
#include "rules/prefix_limits.h"
#include "rules/tags.h"

namespace dt {
namespace {

const char kRunUsage[] =
    "Usage: agent --iface IFACE --rate R --burst B [--peers HOST:PORT,...] [options]\n"
    "       agent stats [--iface IFACE | --pin-dir DIR] [--json] [--top N]\n"
    "       agent top [--iface IFACE | --pin-dir DIR] [--interval D] [--top N] [--count N]\n"
    "       agent check [--config FILE] [options]    # validate; loads nothing\n"
    "       agent reload [--iface IFACE | --pin-dir DIR]\n"
    "       agent explain ADDR [--iface IFACE | --pin-dir DIR] [--json]   # why is ADDR throttled?\n"
    "       agent hub [--listen ADDR:PORT] [--curve-key FILE --curve-peers DIR]\n"
    "       agent keygen NAME [--dir DIR] [--endpoint HOST:PORT] [--node-id ID] [--role node|hub]\n"
    "                         [--from NAME.key]\n"
    "\n"
    "Throttles packets per source address on IFACE with an XDP program (or at tc\n"
    "ingress, --attach tc): every source\n"
    "gets a token bucket of B packets that refills at R packets per second; a packet\n"
    "without a token is dropped. Runs until SIGINT or SIGTERM, then detaches.\n"
    "If the agent dies, the program stays attached and keeps enforcing; a restarted\n"
    "agent takes it over with the same bucket state.\n"
    "\n"
    "Options:\n"
    "  -i, --iface IFACE       network interface to protect (required)\n"
    "  -r, --rate R            refill rate per source, packets per second (required);\n"
    "                          fractions allowed (0.1666 = one packet every 6 s), and\n"
    "                          the suffixes /s, /m, /h (10/m = one every 6 s); with a\n"
    "                          byte unit a byte budget: 100kB/s, 10Mbit/s, 1MiB/s\n"
    "  -b, --burst B           bucket size: packets a new or idle source may send at\n"
    "                          once, 1 to 1000000000 (required); bytes with a byte\n"
    "                          rate: 15kB, 64KiB (at least 1518B, one full frame)\n"
    "      --rules FILE        packet and tag rules (TOML, see README \"Rules\"); --rate and\n"
    "                          --burst then make the default rule for unmatched sources,\n"
    "                          and without them unmatched sources pass. kill -HUP or\n"
    "                          `agent reload` re-reads it without losing bucket state\n"
    "      --dry-run           decide and count every packet as if enforcing, but drop\n"
    "                          nothing: what would be dropped is counted as would-drop\n"
    "                          (agent stats, agent top, metrics). Per rule: dry_run =\n"
    "                          true in --rules, then enforce by a reload (buckets kept)\n"
    "      --prefix-limit L    also cap the default rule's sources per prefix: L is\n"
    "                          v4/N=RATE,burst=B or v6/N=RATE,burst=B (repeatable, up\n"
    "                          to 4 levels per family, e.g. v4/24=1000/s,burst=2000 and\n"
    "                          v4/16=5000/s,burst=10000): a packet passes only if every\n"
    "                          level of its prefix has a token, checked before its\n"
    "                          source gets a bucket (spoofed floods; README \"Spoofed\n"
    "                          floods\"); prefix_limits in a [[rule]] of --rules\n"
    "      --pin-dir DIR       where the maps and the XDP link are pinned\n"
    "                          (default /sys/fs/bpf/dthrottle/IFACE)\n"
    "      --xdp-mode MODE     auto (native, falling back to generic), native or\n"
    "                          generic (default auto)\n"
    "      --attach HOOK       xdp (default) or tc: the same decisions at tc ingress\n"
    "                          (a tcx link on Linux 6.6+, else a clsact filter), for\n"
    "                          hosts whose XDP hook belongs to another program; the\n"
    "                          same pins, survival and take-over; stopping removes only\n"
    "                          what dthrottle added\n"
    "\n"
    "Query socket (applications ask about any string tag, see docs/query-protocol.md):\n"
    "      --query-socket PATH unix stream socket: send \"TAG\\n\", read \"OK\\n\" or \"NO\\n\";\n"
    "                          \"BUSY NAME\\n\" tells adaptive rules the service is busy\n"
    "      --query-listen A:P  the same over TCP, e.g. 127.0.0.1:7800\n"
    "      --tag-rule P=R/B    tags starting with P: rate R, burst B (repeatable; also\n"
    "                          [[tag]] in --rules); the longest prefix wins; a tag no\n"
    "                          rule matches is allowed\n"
    "      --query-max-wait D  longest wait a RESERVE may be granted (default 1s)\n"
    "      --query-max-connections N   (default 4096)\n"
    "      --max-tags N        tag buckets kept (default 1000000)\n"
    "      --redis ADDR        Redis (HOST:PORT or a unix socket path) deciding strict\n"
    "                          tags (strict = true in [[tag]], or --tag-rule P=R/B!strict)\n"
    "      --redis-timeout D   connect and command timeout (default 50ms)\n"
    "\n"
    "      --clock MODE        precise (default) or coarse: the coarse kernel clock saves\n"
    "                          ~30 ns per packet on virtual machines, and may grant a\n"
    "                          source up to rate x 4 ms more in a window (see README)\n"
    "      --max-sources N     capacity of the source table, least recently seen\n"
    "                          sources evicted beyond it (default 1048576)\n"
    "      --keep              on exit, leave the program attached and the maps pinned\n"
    "                          (for upgrades: the next agent takes over)\n"
    "      --stats-interval D  log the counters every D, e.g. 10s or 500ms (default 10s)\n"
    "      --log-level LEVEL   debug, info, warn or error (default info)\n"
    "      --metrics ADDR:PORT serve Prometheus metrics on http://ADDR:PORT/metrics;\n"
    "                          ADDR is bound as given: 127.0.0.1 keeps them local,\n"
    "                          0.0.0.0 exposes them on every interface\n"
    "      --config FILE       read options from FILE: one `name = value` a line, named\n"
    "                          like these flags without dashes, # for comments; flags\n"
    "                          given on the command line override it\n"
    "  -h, --help              show this help\n"
    "\n"
    "Cluster options (one budget per source across hosts):\n"
    "  -p, --peers LIST        peers' report endpoints, HOST:PORT[,HOST:PORT...]; may be\n"
    "                          repeated; a tcp:// prefix is accepted\n"
    "      --peers-file PATH   more peers, one HOST:PORT a line (# comments); kill -HUP\n"
    "                          or `agent reload` re-reads it (and the --config file's\n"
    "                          peers), connects to added peers, drops removed ones,\n"
    "                          resolves DNS names again; buckets are kept\n"
    "      --listen ADDR:PORT  where this agent publishes its reports (default *:7700\n"
    "                          with --peers or --peers-file)\n"
    "      --hub HOST:PORT     publish to an `agent hub` at HOST:PORT and subscribe at\n"
    "                          HOST:PORT+1, instead of (or besides) a full mesh\n"
    "      --period D          how often reports are exchanged (default 200ms)\n"
    "      --node-id NAME      this agent's name in reports, unique in the cluster\n"
    "                          (default: the host name and a hash of IFACE's MAC\n"
    "                          address, e.g. web1-3fa2c1, so cloned hosts differ;\n"
    "                          with --curve-key: the node_id of the key file)\n"
    "      --down-after D      a peer silent this long is reported down (default 5\n"
    "                          periods)\n"
    "      --report-max-age D  peers' reports older than D are not charged, nor those a\n"
    "                          peer sent while it could not hear us (a partition's\n"
    "                          backlog); at least one period, at most 1h (default 10\n"
    "                          periods); off: charge every report whatever its age\n"
    "      --curve-key FILE    this node's CurveZMQ key pair (agent keygen): encrypt and\n"
    "                          authenticate peer traffic (also through an `agent hub\n"
    "                          --curve-key`), and sign every report with the node's key\n"
    "      --curve-peers DIR   public keys (*.pub) of the peers allowed to subscribe, of\n"
    "                          the hubs, and of every node whose reports are applied:\n"
    "                          a report is checked against its node's key (read again\n"
    "                          on reload)\n"
    "\n"
    "Examples:\n"
    "  agent --iface eth0 --rate 100 --burst 50\n"
    "  agent --iface eth0 --rate 100 --burst 50 --peers 198.18.1.2:7700,198.18.1.3:7700\n"    "  agent --iface eth0 --rate 100 --burst 50 --peers-file /etc/dthrottle/peers\n"
    "  agent --iface eth0 --rate 10/m --burst 1      # one packet every 6 s per source\n"
    "  agent --config /etc/dthrottle/eth0.conf --iface eth0\n"
    "  agent stats --iface eth0 --top 20\n"
    "  agent top --iface eth0\n"
    "  bpftool map dump pinned /sys/fs/bpf/dthrottle/eth0/buckets\n";

const char kStatsUsage[] =
    "Usage: agent stats [--iface IFACE | --pin-dir DIR] [--json] [--top N]\n"
    "\n"
    "Reads the pinned maps (no running agent needed) and prints the global counters\n"
    "and the sources with the most drops, with their current tokens.\n"
    "\n"
    "Options:\n"
    "  -i, --iface IFACE   read /sys/fs/bpf/dthrottle/IFACE\n"
    "      --pin-dir DIR   read the maps pinned in DIR\n"
    "      --json          machine-readable output\n"
    "      --top N         show N sources (default 10; 0 shows every source)\n"
    "  -h, --help          show this help\n";

const char kExplainUsage[] =
    "Usage: agent explain ADDR [--iface IFACE | --pin-dir DIR] [--json] [--watch DURATION]\n"
    "\n"
    "Why is ADDR throttled (or not)? Reads the pinned maps: the rule that matches ADDR (the\n"
    "prefix in the live rules and each candidate's conditions), the bucket key of each\n"
    "rule that applies, its tokens now and its passed / dropped / debited / would-drop\n"
    "counts, dry run or not. A running agent in a cluster also watches its peers' reports\n"
    "for DURATION and says which peers reported ADDR, with how many hits.\n"
    "\n"
    "Options:\n"
    "  -i, --iface IFACE     read /sys/fs/bpf/dthrottle/IFACE\n"
    "      --pin-dir DIR     read the maps pinned in DIR\n"
    "      --json            machine-readable output\n"
    "      --watch DURATION  how long to watch the peers' reports (default 1s; 0: do not ask)\n"
    "  -h, --help            show this help\n";

const char kHubUsage[] =
    "Usage: agent hub [--listen ADDR:PORT] [--curve-key FILE --curve-peers DIR]\n"
    "                 [--log-level LEVEL]\n"
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
    "\n"
    "Options:\n"
    "      --listen ADDR:PORT  frontend to bind (default *:7701; backend: port + 1)\n"
    "      --curve-key FILE    the hub's CurveZMQ key pair (agent keygen hub --role hub)\n"
    "      --curve-peers DIR   public keys (*.pub) of the agents allowed in\n"
    "      --log-level LEVEL   debug, info, warn or error (default info)\n"
    "  -h, --help              show this help\n";

const char kTopUsage[] =
    "Usage: agent top [--iface IFACE | --pin-dir DIR] [--interval D] [--top N] [--count N]\n"
    "\n"
    "Like agent stats, but live: every D it reads the pinned maps again and shows what\n"
    "changed, as rates: packets passed and dropped per second, in total and for each\n"
    "source that sent in that interval, the most dropped first. On a terminal the\n"
    "screen is redrawn; otherwise frames follow each other, separated by a blank line.\n"
    "\n"
    "Options:\n"
    "  -i, --iface IFACE   read /sys/fs/bpf/dthrottle/IFACE\n"
    "      --pin-dir DIR   read the maps pinned in DIR\n"
    "      --interval D    time between frames, 100ms to 1h (default 1s)\n"
    "      --top N         show N sources (default 20; 0 shows every active source)\n"
    "      --count N       stop after N frames (default 0: until interrupted)\n"
    "  -h, --help          show this help\n";

enum LongOnly {
  kPinDir = 1000, kXdpMode, kAttach, kMaxSources, kKeep, kStatsInterval, kLogLevel, kJson, kTop, kWatch,
  kListen, kHub, kPeriod, kNodeId, kDownAfter, kReportMaxAge, kCurveKey, kCurvePeers,
  kMetrics, kRules, kClock, kQuerySocket, kQueryListen, kTagRule, kQueryMaxConn, kQueryMaxWait, kMaxTags,
  kRedis, kRedisTimeout, kConfig, kInterval, kCount, kDryRun, kPeersFile, kPrefixLimit,
};

// Appends the comma-separated endpoints of `v` to *out, normalised. A hub's port must
// leave room for its subscribers' port (+ 1).
bool add_endpoints(const std::string &v, bool hubs, std::vector<std::string> *out, std::string *err) {
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    std::string one = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::string ep, backend;
    if (!normalize_endpoint(one, false, &ep, err)) return false;
    if (hubs && !hub_backend_endpoint(one, &backend, err)) return false;
    out->push_back(ep);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

std::string flag_error(const char *flag, const std::string &msg) {
  return std::string("--") + flag + ": " + msg;
}

// Leftover non-option arguments are a mistake (a typo of a subcommand, a value without
// its flag): the first one is named.
ParseOutcome no_extra_arguments(int argc, char **argv, std::string *err) {
  if (optind >= argc) return ParseOutcome::Ok;
  *err = std::string("unexpected argument '") + argv[optind] + "'";
  return ParseOutcome::Error;
}

// --log-level VALUE.
bool set_log_level_flag(const std::string &v, LogLevel *out, std::string *err) {
  if (parse_log_level(v.c_str(), out)) return true;
  *err = flag_error("log-level", "'" + v + "' is not one of debug, info, warn, error");
  return false;
}

// Before a getopt_long loop: optind 0, not 1, makes glibc re-initialise fully (the parsers
// run more than once, parse_run_options on several argvs); the errors are ours to word.
void start_getopt() {
  optind = 0;
  opterr = 0;
}

// getopt_long's own complaints (':' a missing value, '?' an unknown option), as a sentence.
ParseOutcome getopt_error(int c, char **argv, std::string *err) {
  *err = c == ':' ? std::string("option ") + argv[optind - 1] + " needs a value"
                  : std::string("unknown option ") + argv[optind - 1];
  return ParseOutcome::Error;
}

// --iface or --pin-dir names an agent's pins; `what` says what the command does with them.
ParseOutcome resolve_pin_dir(const std::string &iface, std::string *pin_dir, const char *what, std::string *err) {
  if (pin_dir->empty() && iface.empty()) {
    *err = std::string("say which throttle to ") + what + ": --iface IFACE or --pin-dir DIR";
    return ParseOutcome::Error;
  }
  if (pin_dir->empty()) *pin_dir = default_pin_dir(iface);
  return ParseOutcome::Ok;
}

}  // namespace

const char *run_usage() { return kRunUsage; }
const char *stats_usage() { return kStatsUsage; }
const char *hub_usage() { return kHubUsage; }
const char *explain_usage() { return kExplainUsage; }
const char *top_usage() { return kTopUsage; }

namespace {

// The run flags; every one but --help is also a setting of a --config file.
const option kRunLong[] = {
      {"config", required_argument, nullptr, kConfig},
      {"iface", required_argument, nullptr, 'i'},
      {"rate", required_argument, nullptr, 'r'},
      {"burst", required_argument, nullptr, 'b'},
      {"pin-dir", required_argument, nullptr, kPinDir},
      {"xdp-mode", required_argument, nullptr, kXdpMode},
      {"attach", required_argument, nullptr, kAttach},
      {"max-sources", required_argument, nullptr, kMaxSources},
      {"keep", no_argument, nullptr, kKeep},
      {"stats-interval", required_argument, nullptr, kStatsInterval},
      {"log-level", required_argument, nullptr, kLogLevel},
      {"peers", required_argument, nullptr, 'p'},
      {"peers-file", required_argument, nullptr, kPeersFile},
      {"listen", required_argument, nullptr, kListen},
      {"hub", required_argument, nullptr, kHub},
      {"period", required_argument, nullptr, kPeriod},
      {"node-id", required_argument, nullptr, kNodeId},
      {"down-after", required_argument, nullptr, kDownAfter},
      {"report-max-age", required_argument, nullptr, kReportMaxAge},
      {"curve-key", required_argument, nullptr, kCurveKey},
      {"curve-peers", required_argument, nullptr, kCurvePeers},
      {"metrics", required_argument, nullptr, kMetrics},
      {"rules", required_argument, nullptr, kRules},
      {"clock", required_argument, nullptr, kClock},
      {"dry-run", no_argument, nullptr, kDryRun},
      {"prefix-limit", required_argument, nullptr, kPrefixLimit},
      {"query-socket", required_argument, nullptr, kQuerySocket},
      {"query-listen", required_argument, nullptr, kQueryListen},
      {"tag-rule", required_argument, nullptr, kTagRule},
      {"query-max-connections", required_argument, nullptr, kQueryMaxConn},
      {"query-max-wait", required_argument, nullptr, kQueryMaxWait},
      {"max-tags", required_argument, nullptr, kMaxTags},
      {"redis", required_argument, nullptr, kRedis},
      {"redis-timeout", required_argument, nullptr, kRedisTimeout},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
const char kRunShort[] = ":i:r:b:p:h";
// Settings that add up when repeated in a config file.
const std::vector<std::string> kRunLists = {"peers", "hub", "prefix-limit"};

// What the flag groups note for finish_run_options while the argv is read.
struct RunFlagsSeen {
  bool rate = false, burst = false;
  bool rate_bytes = false, burst_bytes = false;  // given with byte units
  std::string rate_text, burst_text;             // as given, for messages
  bool xdp_mode = false;                         // --xdp-mode given
};

// A run flag read by its group, refused (*err says why), or another group's.
enum class FlagOutcome { Handled, Failed, NotMine };

FlagOutcome flag_failed(const char *flag, const std::string &msg, std::string *err) {
  *err = flag_error(flag, msg);
  return FlagOutcome::Failed;
}

// --iface, --rate, --burst, --rules, --dry-run, --prefix-limit, --pin-dir, --xdp-mode, --attach,
// --max-sources, --clock: the XDP program and its tables.
FlagOutcome parse_dataplane_flag(int c, std::string v, RunOptions *o, RunFlagsSeen *seen, std::string *err) {
  std::string e;
  uint64_t n = 0;
  switch (c) {
    case 'i': o->iface = v; break;
    case 'r':
      if (!parse_budget_rate(v, &o->rate, &seen->rate_bytes, &e)) return flag_failed("rate", e, err);
      seen->rate = true;
      seen->rate_text = v;
      break;
    case 'b':
      if (!parse_budget_burst(v, &o->burst, &seen->burst_bytes, &e)) return flag_failed("burst", e, err);
      seen->burst = true;
      seen->burst_text = v;
      break;
    case kRules: o->rules_file = v; break;
    case kDryRun: o->dry_run = true; break;
    case kPrefixLimit: {
      PrefixLimit l;
      if (!parse_prefix_limit(v, &l, &e)) return flag_failed("prefix-limit", e, err);
      o->prefix_limits.push_back(l);
      break;
    }
    case kPinDir:
      if (v.empty() || v[0] != '/') return flag_failed("pin-dir", "'" + v + "' must be an absolute path", err);
      while (v.size() > 1 && v.back() == '/') v.pop_back();
      o->pin_dir = v;
      break;
    case kXdpMode:
      if (!parse_xdp_mode(v, &o->mode))
        return flag_failed("xdp-mode", "'" + v + "' is not one of auto, native, generic", err);
      seen->xdp_mode = true;
      break;
    case kAttach:
      if (!parse_attach_hook(v, &o->hook)) return flag_failed("attach", "'" + v + "' is not one of xdp, tc", err);
      break;
    case kMaxSources:
      if (!parse_count(v, 1, 1u << 28, &n, &e)) return flag_failed("max-sources", e, err);
      o->max_sources = static_cast<uint32_t>(n);
      o->max_sources_explicit = true;
      break;
    case kClock:
      if (v != "precise" && v != "coarse")
        return flag_failed("clock", "'" + v + "' is not one of precise, coarse", err);
      o->coarse_clock = v == "coarse";
      break;
    default: return FlagOutcome::NotMine;
  }
  return FlagOutcome::Handled;
}

// --peers, --peers-file, --hub, --listen, --period, --down-after, --report-max-age, --node-id, --curve-key,
// --curve-peers.
FlagOutcome parse_cluster_flag(int c, std::string v, RunOptions *o, RunFlagsSeen *, std::string *err) {
  std::string e;
  switch (c) {
    case 'p':
      if (!add_endpoints(v, false, &o->peers, &e)) return flag_failed("peers", e, err);
      break;
    case kHub:
      if (!add_endpoints(v, true, &o->hubs, &e)) return flag_failed("hub", e, err);
      break;
    case kListen:
      if (!normalize_endpoint(v, true, &o->listen, &e)) return flag_failed("listen", e, err);
      break;
    case kPeriod:
      if (!parse_duration(v, &o->period_ns, &e) || o->period_ns < 10'000'000 || o->period_ns > 60'000'000'000ull)
        return flag_failed("period", e.empty() ? "'" + v + "' must be from 10ms to 60s" : e, err);
      break;
    case kDownAfter:
      if (!parse_duration(v, &o->down_after_ns, &e)) return flag_failed("down-after", e, err);
      break;
    case kReportMaxAge:
      if (v == "off") o->report_max_age_ns = UINT64_MAX;
      else if (!parse_duration(v, &o->report_max_age_ns, &e) || o->report_max_age_ns > 3'600'000'000'000ull)
        return flag_failed("report-max-age", e.empty() ? "'" + v + "' must be at most 1h (or off)" : e, err);
      break;
    case kNodeId:
      if (!valid_node_id(v))
        return flag_failed("node-id", "'" + v + "' must be 1 to 64 characters of A-Z a-z 0-9 . _ : -", err);
      o->node_id = v;
      break;
    case kPeersFile:
      if (v.empty()) return flag_failed("peers-file", "needs a file name", err);
      o->peers_file = v;
      break;
    case kCurveKey: o->curve_key = v; break;
    case kCurvePeers: o->curve_peers = v; break;
    default: return FlagOutcome::NotMine;
  }
  return FlagOutcome::Handled;
}

// --query-socket, --query-listen, --tag-rule, --query-max-connections, --query-max-wait,
// --max-tags, --redis, --redis-timeout: the query socket for applications.
FlagOutcome parse_query_flag(int c, std::string v, RunOptions *o, RunFlagsSeen *, std::string *err) {
  std::string e, redis_host;
  int redis_port = 0;
  HostPort listen;
  TagRule tag_rule;
  switch (c) {
    case kQuerySocket: o->query_socket = v; break;
    case kQueryListen:
      if (!parse_query_listen(v, &listen, &e)) return flag_failed("query-listen", e, err);
      o->query_listen = v;
      break;
    case kTagRule:
      if (!parse_tag_rule(v, &tag_rule, &e)) return flag_failed("tag-rule", e, err);
      o->tag_rules.push_back(v);
      break;
    case kQueryMaxConn:
      if (!parse_count(v, 1, 1000000, &o->query_max_connections, &e))
        return flag_failed("query-max-connections", e, err);
      break;
    case kQueryMaxWait:
      if (!parse_duration(v, &o->query_max_wait_ns, &e)) return flag_failed("query-max-wait", e, err);
      break;
    case kMaxTags:
      if (!parse_count(v, 1, 100000000, &o->max_tags, &e)) return flag_failed("max-tags", e, err);
      break;
    case kRedis:
      if (!parse_redis_address(v, &redis_host, &redis_port, &e)) return flag_failed("redis", e, err);
      o->redis = v;
      break;
    case kRedisTimeout:
      if (!parse_duration(v, &o->redis_timeout_ns, &e) || o->redis_timeout_ns < 1'000'000 ||
          o->redis_timeout_ns > 10'000'000'000ull)
        return flag_failed("redis-timeout", e.empty() ? "must be between 1ms and 10s" : e, err);
      break;
    default: return FlagOutcome::NotMine;
  }
  return FlagOutcome::Handled;
}

// --metrics, --stats-interval, --log-level, --keep, --config: what the agent reports, and how
// it starts and stops.
FlagOutcome parse_agent_flag(int c, std::string v, RunOptions *o, RunFlagsSeen *, std::string *err) {
  std::string e;
  HostPort metrics;
  switch (c) {
    case kMetrics:
      if (!parse_metrics_address(v, &metrics, &e)) return flag_failed("metrics", e, err);
      o->metrics_host = metrics.host;
      o->metrics_port = metrics.port;
      break;
    case kStatsInterval:
      if (!parse_duration(v, &o->stats_interval_ns, &e)) return flag_failed("stats-interval", e, err);
      break;
    case kLogLevel: return set_log_level_flag(v, &o->log_level, err) ? FlagOutcome::Handled : FlagOutcome::Failed;
    case kKeep: o->keep = true; break;
    case kConfig:  // read by parse_run_options, ahead of this loop
      if (v.empty()) return flag_failed("config", "needs a file name", err);
      break;
    default: return FlagOutcome::NotMine;
  }
  return FlagOutcome::Handled;
}

using RunFlagGroup = FlagOutcome (*)(int c, std::string v, RunOptions *o, RunFlagsSeen *seen, std::string *err);
constexpr RunFlagGroup kRunFlagGroups[] = {parse_dataplane_flag, parse_cluster_flag, parse_query_flag,
                                           parse_agent_flag};

// Flag c with its value v, read by the group it belongs to; NotMine if none has it.
FlagOutcome parse_run_flag(int c, const std::string &v, RunOptions *o, RunFlagsSeen *seen, std::string *err) {
  for (RunFlagGroup group : kRunFlagGroups)
    if (FlagOutcome r = group(c, v, o, seen, err); r != FlagOutcome::NotMine) return r;
  return FlagOutcome::NotMine;
}

// After the last flag: what is required, the defaults that depend on other flags, and the
// flags that make sense only together.
ParseOutcome finish_run_options(const RunFlagsSeen &seen, RunOptions *o, std::string *err) {
  if (o->iface.empty()) return *err = "--iface is required", ParseOutcome::Error;
  // --rate/--burst make the default rule; with --rules they may be left out (then
  // sources no rule matches pass).
  if (o->rules_file.empty() || seen.rate || seen.burst) {
    if (!seen.rate) return *err = "--rate is required (or --rules FILE)", ParseOutcome::Error;
    if (!seen.burst) return *err = "--burst is required (or --rules FILE)", ParseOutcome::Error;
    if (std::string m = budget_unit_mismatch(seen.rate_bytes, seen.burst_bytes, "--rate " + seen.rate_text,
                                             "--burst " + seen.burst_text);
        !m.empty())
      return *err = m, ParseOutcome::Error;
    o->bytes = seen.rate_bytes;
    dt_policy p{};
    if (std::string why; !make_policy(o->rate, o->burst, &p, &why, o->bytes))
      return *err = "--rate " + seen.rate_text + " --burst " + seen.burst_text + ": " + why, ParseOutcome::Error;
    if (std::string why; !check_prefix_limits(o->prefix_limits, "default", o->bytes, 32, 64, &why))
      return *err = "--prefix-limit: " + why + " (the default rule is --rate " + seen.rate_text + " --burst " +
                    seen.burst_text + ")",
             ParseOutcome::Error;
  } else if (!o->prefix_limits.empty()) {
    return *err = "--prefix-limit caps the default rule's sources per prefix, which needs --rate and --burst "
                  "(for a rule of the --rules file: prefix_limits in its [[rule]])",
           ParseOutcome::Error;
  }
  if (o->hook == AttachHook::Tc && seen.xdp_mode)
    return *err = "--xdp-mode is for --attach xdp; with --attach tc no XDP program is attached", ParseOutcome::Error;
  if (o->pin_dir.empty()) o->pin_dir = default_pin_dir(o->iface);
  if ((!o->peers.empty() || !o->peers_file.empty()) && o->listen.empty()) o->listen = "tcp://*:7700";
  if (!o->curve_peers.empty() && o->curve_key.empty())
    return *err = "--curve-peers needs --curve-key (this node's key pair)", ParseOutcome::Error;
  if (!o->curve_key.empty() && !o->cluster())
    return *err = "--curve-key only makes sense with --peers, --listen or --hub", ParseOutcome::Error;
  // With --curve-key the key names the node (load_run_config reads it: bind_node_id_to_key).
  if (o->node_id.empty() && o->curve_key.empty()) o->node_id = default_node_id(o->iface);
  return ParseOutcome::Ok;
}

// The getopt loop of parse_run_options. *arg_index: the argv index of the argument an
// error is about, or -1 for errors about the whole set (a required flag missing...).
// Each flag is read by its group (kRunFlagGroups); finish_run_options then checks the set.
ParseOutcome parse_run_argv(int argc, char **argv, RunOptions *o, std::string *err, int *arg_index) {
  RunFlagsSeen seen;
  start_getopt();
  int c;
  while ((c = getopt_long(argc, argv, kRunShort, kRunLong, nullptr)) != -1) {
    *arg_index = optind - 1;
    if (c == 'h') return ParseOutcome::Help;
    switch (parse_run_flag(c, optarg ? optarg : "", o, &seen, err)) {
      case FlagOutcome::Handled: break;
      case FlagOutcome::Failed: return ParseOutcome::Error;
      case FlagOutcome::NotMine: return getopt_error(c, argv, err);
    }
  }
  *arg_index = -1;
  if (no_extra_arguments(argc, argv, err) != ParseOutcome::Ok) return ParseOutcome::Error;
  return finish_run_options(seen, o, err);
}

// The --config file named on the command line ("": none) and the options given there.
// Errors are left to the real parse.
void scan_command_line(int argc, char **argv, std::string *config, std::set<int> *given) {
  start_getopt();
  int c;
  while ((c = getopt_long(argc, argv, kRunShort, kRunLong, nullptr)) != -1) {
    given->insert(c);
    if (c == kConfig) *config = optarg;
  }
}

}  // namespace

// --config FILE: every setting becomes "--name=value" ahead of the command line, so one
// getopt loop checks both and the command line, parsed last, wins. A flag given on the
// command line drops the file's lines for it (--peers replaces the file's list rather
// than adding to it), but every line of the file is first parsed on its own, so that a
// bad line is reported as FILE:LINE even when the command line overrides it.
ParseOutcome parse_run_options(int argc, char **argv, RunOptions *o, std::string *err) {
  std::string config;
  std::set<int> given;
  scan_command_line(argc, argv, &config, &given);
  int at = -1;
  if (config.empty() || given.count('h')) return parse_run_argv(argc, argv, o, err, &at);

  std::vector<ConfigSetting> settings;
  if (!load_config_file(config, kRunLong, kRunLists, &settings, err)) return ParseOutcome::Error;
  ArgvList file_only, merged;
  file_only.push(argv[0]);
  merged.push(argv[0]);
  for (const auto &s : settings) {
    file_only.push(s.arg);
    if (!given.count(s.opt)) merged.push(s.arg);
  }
  RunOptions scratch;
  std::string e;
  if (parse_run_argv(file_only.argc(), file_only.argv(), &scratch, &e, &at) == ParseOutcome::Error && at > 0) {
    // "--rate: invalid rate 'x'" -> "FILE:LINE: rate: invalid rate 'x'"
    *err = config + ":" + std::to_string(settings[at - 1].line) + ": " + (e.rfind("--", 0) == 0 ? e.substr(2) : e);
    return ParseOutcome::Error;
  }
  for (int i = 1; i < argc; i++) merged.push(argv[i]);
  const ParseOutcome r = parse_run_argv(merged.argc(), merged.argv(), o, err, &at);
  o->config_file = config;
  o->config_peers = !given.count('p');
  return r;
}

bool read_config_peers(const std::string &config_file, std::vector<std::string> *out, std::string *err) {
  std::vector<ConfigSetting> settings;
  if (!load_config_file(config_file, kRunLong, kRunLists, &settings, err)) return false;
  const std::string prefix = "--peers=";
  for (const auto &s : settings) {
    if (s.opt != 'p' || s.arg.rfind(prefix, 0) != 0) continue;
    std::string e;
    if (!add_endpoints(s.arg.substr(prefix.size()), false, out, &e)) {
      *err = config_file + ":" + std::to_string(s.line) + ": peers: " + e;
      return false;
    }
  }
  return true;
}

ParseOutcome parse_hub_options(int argc, char **argv, HubOptions *o, std::string *err) {
  static const option kLong[] = {{"listen", required_argument, nullptr, kListen},
                                 {"log-level", required_argument, nullptr, kLogLevel},
                                 {"curve-key", required_argument, nullptr, kCurveKey},
                                 {"curve-peers", required_argument, nullptr, kCurvePeers},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  start_getopt();
  int c;
  while ((c = getopt_long(argc, argv, ":h", kLong, nullptr)) != -1) {
    std::string v = optarg ? optarg : "", e;
    switch (c) {
      case kListen: {
        std::string backend;
        if (!normalize_endpoint(v, true, &o->listen, &e) || !hub_backend_endpoint(v, &backend, &e))
          return *err = flag_error("listen", e), ParseOutcome::Error;
        break;
      }
      case kLogLevel:
        if (!set_log_level_flag(v, &o->log_level, err)) return ParseOutcome::Error;
        break;
      case kCurveKey: o->curve_key = v; break;
      case kCurvePeers: o->curve_peers = v; break;
      case 'h': return ParseOutcome::Help;
      default: return getopt_error(c, argv, err);
    }
  }
  if (o->curve_key.empty() != o->curve_peers.empty())
    return *err = o->curve_key.empty() ? "--curve-peers needs --curve-key (the hub's key pair)"
                                       : "--curve-key needs --curve-peers DIR (the agents' public keys)",
           ParseOutcome::Error;
  return no_extra_arguments(argc, argv, err);
}

ParseOutcome parse_stats_options(int argc, char **argv, StatsOptions *o, std::string *err) {
  static const option kLong[] = {{"iface", required_argument, nullptr, 'i'},
                                 {"pin-dir", required_argument, nullptr, kPinDir},
                                 {"json", no_argument, nullptr, kJson},
                                 {"top", required_argument, nullptr, kTop},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  start_getopt();
  int c;
  while ((c = getopt_long(argc, argv, ":i:h", kLong, nullptr)) != -1) {
    std::string v = optarg ? optarg : "", e;
    switch (c) {
      case 'i': o->iface = v; break;
      case kPinDir: o->pin_dir = v; break;
      case kJson: o->json = true; break;
      case kTop:
        if (!parse_count(v, 0, UINT32_MAX, &o->top, &e))
          return *err = flag_error("top", e), ParseOutcome::Error;
        break;
      case 'h': return ParseOutcome::Help;
      default: return getopt_error(c, argv, err);
    }
  }
  if (no_extra_arguments(argc, argv, err) != ParseOutcome::Ok) return ParseOutcome::Error;
  return resolve_pin_dir(o->iface, &o->pin_dir, "read", err);
}

ParseOutcome parse_explain_options(int argc, char **argv, ExplainOptions *o, std::string *err) {
  static const option kLong[] = {{"iface", required_argument, nullptr, 'i'},
                                 {"pin-dir", required_argument, nullptr, kPinDir},
                                 {"json", no_argument, nullptr, kJson},
                                 {"watch", required_argument, nullptr, kWatch},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  start_getopt();
  int c;
  while ((c = getopt_long(argc, argv, ":i:h", kLong, nullptr)) != -1) {
    std::string v = optarg ? optarg : "", e;
    switch (c) {
      case 'i': o->iface = v; break;
      case kPinDir: o->pin_dir = v; break;
      case kJson: o->json = true; break;
      case kWatch:
        if (v == "0") o->watch_ns = 0;
        else if (!parse_duration(v, &o->watch_ns, &e) || o->watch_ns > 10'000'000'000ull)
          return *err = flag_error("watch", e.empty() ? "'" + v + "' must be from 0 to 10s" : e), ParseOutcome::Error;
        break;
      case 'h': return ParseOutcome::Help;
      default: return getopt_error(c, argv, err);
    }
  }
  if (optind >= argc) return *err = "say which address to explain: agent explain ADDR", ParseOutcome::Error;
  o->address = argv[optind++];
  if (no_extra_arguments(argc, argv, err) != ParseOutcome::Ok) return ParseOutcome::Error;
  return resolve_pin_dir(o->iface, &o->pin_dir, "explain", err);
}

ParseOutcome parse_top_options(int argc, char **argv, TopOptions *o, std::string *err) {
  static const option kLong[] = {{"iface", required_argument, nullptr, 'i'},
                                 {"pin-dir", required_argument, nullptr, kPinDir},
                                 {"interval", required_argument, nullptr, kInterval},
                                 {"top", required_argument, nullptr, kTop},
                                 {"count", required_argument, nullptr, kCount},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  start_getopt();
  int c;
  while ((c = getopt_long(argc, argv, ":i:h", kLong, nullptr)) != -1) {
    std::string v = optarg ? optarg : "", e;
    switch (c) {
      case 'i': o->iface = v; break;
      case kPinDir: o->pin_dir = v; break;
      case kInterval:
        if (!parse_duration(v, &o->interval_ns, &e) || o->interval_ns < 100'000'000 ||
            o->interval_ns > 3'600'000'000'000ull)
          return *err = flag_error("interval", e.empty() ? "'" + v + "' must be from 100ms to 1h" : e),
                 ParseOutcome::Error;
        break;
      case kTop:
        if (!parse_count(v, 0, UINT32_MAX, &o->top, &e)) return *err = flag_error("top", e), ParseOutcome::Error;
        break;
      case kCount:
        if (!parse_count(v, 0, UINT32_MAX, &o->count, &e)) return *err = flag_error("count", e), ParseOutcome::Error;
        break;
      case 'h': return ParseOutcome::Help;
      default: return getopt_error(c, argv, err);
    }
  }
  if (no_extra_arguments(argc, argv, err) != ParseOutcome::Ok) return ParseOutcome::Error;
  return resolve_pin_dir(o->iface, &o->pin_dir, "watch", err);
}

}  // namespace dt
