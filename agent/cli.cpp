// cli.cpp - flag parsing with getopt_long; every error names the flag and the value.
#include "cli.h"

#include <getopt.h>

#include <unistd.h>

#include "cluster.h"
#include "dthrottle/common.h"
#include "parse_values.h"
#include "peer_protocol.h"

namespace dt {
namespace {

const char kRunUsage[] =
    "Usage: agent --iface IFACE --rate R --burst B [--peers HOST:PORT,...] [options]\n"
    "       agent stats [--iface IFACE | --pin-dir DIR] [--json] [--top N]\n"
    "       agent hub [--listen ADDR:PORT]\n"
    "       agent keygen NAME [--dir DIR] [--endpoint HOST:PORT]\n"
    "\n"
    "Throttles packets per source address on IFACE with an XDP program: every source\n"
    "gets a token bucket of B packets that refills at R packets per second; a packet\n"
    "without a token is dropped. Runs until SIGINT or SIGTERM, then detaches.\n"
    "If the agent dies, the program stays attached and keeps enforcing; a restarted\n"
    "agent takes it over with the same bucket state.\n"
    "\n"
    "Options:\n"
    "  -i, --iface IFACE       network interface to protect (required)\n"
    "  -r, --rate R            refill rate per source, packets per second (required);\n"
    "                          fractions allowed (0.1666 = one packet every 6 s), and\n"
    "                          the suffixes /s, /m, /h (10/m = one every 6 s)\n"
    "  -b, --burst B           bucket size: packets a new or idle source may send at\n"
    "                          once, 1 to 1000000000 (required)\n"
    "      --pin-dir DIR       where the maps and the XDP link are pinned\n"
    "                          (default /sys/fs/bpf/dthrottle/IFACE)\n"
    "      --xdp-mode MODE     auto (native, falling back to generic), native or\n"
    "                          generic (default auto)\n"
    "      --max-sources N     capacity of the source table, least recently seen\n"
    "                          sources evicted beyond it (default 1048576)\n"
    "      --keep              on exit, leave the program attached and the maps pinned\n"
    "                          (for upgrades: the next agent takes over)\n"
    "      --stats-interval D  log the counters every D, e.g. 10s or 500ms (default 10s)\n"
    "      --log-level LEVEL   debug, info, warn or error (default info)\n"
    "  -h, --help              show this help\n"
    "\n"
    "Cluster options (one budget per source across hosts):\n"
    "  -p, --peers LIST        peers' report endpoints, HOST:PORT[,HOST:PORT...]; may be\n"
    "                          repeated; a tcp:// prefix is accepted\n"
    "      --listen ADDR:PORT  where this agent publishes its reports (default *:7700\n"
    "                          when --peers is given)\n"
    "      --hub HOST:PORT     publish to an `agent hub` at HOST:PORT and subscribe at\n"
    "                          HOST:PORT+1, instead of (or besides) a full mesh\n"
    "      --period D          how often reports are exchanged (default 200ms)\n"
    "      --node-id NAME      this agent's name in reports (default: the host name)\n"
    "      --down-after D      a peer silent this long is reported down (default 5\n"
    "                          periods)\n"
    "      --curve-key FILE    this node's CurveZMQ key pair (agent keygen): encrypt and\n"
    "                          authenticate peer traffic\n"
    "      --curve-peers DIR   public keys (*.pub) of the peers allowed to subscribe\n"
    "\n"
    "Examples:\n"
    "  agent --iface eth0 --rate 100 --burst 50\n"
    "  agent --iface eth0 --rate 100 --burst 50 --peers 198.18.1.2:7700,198.18.1.3:7700\n"
    "  agent --iface eth0 --rate 10/m --burst 1      # one packet every 6 s per source\n"
    "  agent stats --iface eth0 --top 20\n"
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

const char kHubUsage[] =
    "Usage: agent hub [--listen ADDR:PORT] [--log-level LEVEL]\n"
    "\n"
    "Relays peer reports so that agents need not all connect to each other: agents\n"
    "started with --hub HOST:PORT publish to ADDR:PORT (an XSUB socket) and subscribe\n"
    "at port+1 (XPUB); the hub forwards every report to every agent (zmq_proxy).\n"
    "Run two hubs and give agents both for redundancy (duplicates are dropped).\n"
    "\n"
    "Options:\n"
    "      --listen ADDR:PORT  frontend to bind (default *:7701; backend: port + 1)\n"
    "      --log-level LEVEL   debug, info, warn or error (default info)\n"
    "  -h, --help              show this help\n";

enum LongOnly {
  kPinDir = 1000, kXdpMode, kMaxSources, kKeep, kStatsInterval, kLogLevel, kJson, kTop,
  kListen, kHub, kPeriod, kNodeId, kDownAfter, kCurveKey, kCurvePeers,
};

// Appends the comma-separated endpoints of `v` to *out, normalised.
bool add_endpoints(const std::string &v, std::vector<std::string> *out, std::string *err) {
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    std::string one = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::string ep;
    if (!normalize_endpoint(one, false, &ep, err)) return false;
    out->push_back(ep);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

std::string flag_error(const char *flag, const std::string &msg) {
  return std::string("--") + flag + ": " + msg;
}

}  // namespace

const char *run_usage() { return kRunUsage; }
const char *stats_usage() { return kStatsUsage; }
const char *hub_usage() { return kHubUsage; }

ParseOutcome parse_run_options(int argc, char **argv, RunOptions *o, std::string *err) {
  static const option kLong[] = {
      {"iface", required_argument, nullptr, 'i'},
      {"rate", required_argument, nullptr, 'r'},
      {"burst", required_argument, nullptr, 'b'},
      {"pin-dir", required_argument, nullptr, kPinDir},
      {"xdp-mode", required_argument, nullptr, kXdpMode},
      {"max-sources", required_argument, nullptr, kMaxSources},
      {"keep", no_argument, nullptr, kKeep},
      {"stats-interval", required_argument, nullptr, kStatsInterval},
      {"log-level", required_argument, nullptr, kLogLevel},
      {"peers", required_argument, nullptr, 'p'},
      {"listen", required_argument, nullptr, kListen},
      {"hub", required_argument, nullptr, kHub},
      {"period", required_argument, nullptr, kPeriod},
      {"node-id", required_argument, nullptr, kNodeId},
      {"down-after", required_argument, nullptr, kDownAfter},
      {"curve-key", required_argument, nullptr, kCurveKey},
      {"curve-peers", required_argument, nullptr, kCurvePeers},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  bool have_rate = false, have_burst = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":i:r:b:p:h", kLong, nullptr)) != -1) {
    std::string v = optarg ? optarg : "", e;
    uint64_t n = 0;
    switch (c) {
      case 'p':
        if (!add_endpoints(v, &o->peers, &e)) return *err = flag_error("peers", e), ParseOutcome::Error;
        break;
      case kHub:
        if (!add_endpoints(v, &o->hubs, &e)) return *err = flag_error("hub", e), ParseOutcome::Error;
        break;
      case kListen:
        if (!normalize_endpoint(v, true, &o->listen, &e)) return *err = flag_error("listen", e), ParseOutcome::Error;
        break;
      case kPeriod:
        if (!parse_duration(v, &o->period_ns, &e) || o->period_ns < 10'000'000 || o->period_ns > 60'000'000'000ull)
          return *err = flag_error("period", e.empty() ? "'" + v + "' must be from 10ms to 60s" : e),
                 ParseOutcome::Error;
        break;
      case kDownAfter:
        if (!parse_duration(v, &o->down_after_ns, &e)) return *err = flag_error("down-after", e), ParseOutcome::Error;
        break;
      case kNodeId:
        if (!valid_node_id(v))
          return *err = flag_error("node-id", "'" + v + "' must be 1 to 64 characters of A-Z a-z 0-9 . _ : -"),
                 ParseOutcome::Error;
        o->node_id = v;
        break;
      case kCurveKey: o->curve_key = v; break;
      case kCurvePeers: o->curve_peers = v; break;
      case 'i': o->iface = v; break;
      case 'r':
        if (!parse_rate(v, &o->rate, &e)) return *err = flag_error("rate", e), ParseOutcome::Error;
        have_rate = true;
        break;
      case 'b':
        if (!parse_count(v, 1, DT_BURST_MAX, &o->burst, &e))
          return *err = flag_error("burst", e), ParseOutcome::Error;
        have_burst = true;
        break;
      case kPinDir:
        if (v.empty() || v[0] != '/')
          return *err = flag_error("pin-dir", "'" + v + "' must be an absolute path"),
                 ParseOutcome::Error;
        while (v.size() > 1 && v.back() == '/') v.pop_back();
        o->pin_dir = v;
        break;
      case kXdpMode:
        if (!parse_xdp_mode(v, &o->mode))
          return *err = flag_error("xdp-mode", "'" + v + "' is not one of auto, native, generic"),
                 ParseOutcome::Error;
        break;
      case kMaxSources:
        if (!parse_count(v, 1, 1u << 28, &n, &e))
          return *err = flag_error("max-sources", e), ParseOutcome::Error;
        o->max_sources = static_cast<uint32_t>(n);
        o->max_sources_explicit = true;
        break;
      case kKeep: o->keep = true; break;
      case kStatsInterval:
        if (!parse_duration(v, &o->stats_interval_ns, &e))
          return *err = flag_error("stats-interval", e), ParseOutcome::Error;
        break;
      case kLogLevel:
        if (!parse_log_level(v.c_str(), &o->log_level))
          return *err = flag_error("log-level", "'" + v + "' is not one of debug, info, warn, error"),
                 ParseOutcome::Error;
        break;
      case 'h': return ParseOutcome::Help;
      case ':':
        *err = std::string("option ") + argv[optind - 1] + " needs a value";
        return ParseOutcome::Error;
      default:
        *err = std::string("unknown option ") + argv[optind - 1];
        return ParseOutcome::Error;
    }
  }
  if (optind < argc) {
    *err = std::string("unexpected argument '") + argv[optind] + "'";
    return ParseOutcome::Error;
  }
  if (o->iface.empty()) return *err = "--iface is required", ParseOutcome::Error;
  if (!have_rate) return *err = "--rate is required", ParseOutcome::Error;
  if (!have_burst) return *err = "--burst is required", ParseOutcome::Error;
  if (o->pin_dir.empty()) o->pin_dir = default_pin_dir(o->iface);
  if (!o->peers.empty() && o->listen.empty()) o->listen = "tcp://*:7700";
  if (!o->curve_peers.empty() && o->curve_key.empty())
    return *err = "--curve-peers needs --curve-key (this node's key pair)", ParseOutcome::Error;
  if (!o->curve_key.empty() && !o->cluster())
    return *err = "--curve-key only makes sense with --peers, --listen or --hub", ParseOutcome::Error;
  if (o->node_id.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    o->node_id = valid_node_id(host) ? host : "dthrottle";
  }
  return ParseOutcome::Ok;
}

ParseOutcome parse_hub_options(int argc, char **argv, HubOptions *o, std::string *err) {
  static const option kLong[] = {{"listen", required_argument, nullptr, kListen},
                                 {"log-level", required_argument, nullptr, kLogLevel},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", kLong, nullptr)) != -1) {
    std::string v = optarg ? optarg : "", e;
    switch (c) {
      case kListen:
        if (!normalize_endpoint(v, true, &o->listen, &e)) return *err = flag_error("listen", e), ParseOutcome::Error;
        break;
      case kLogLevel:
        if (!parse_log_level(v.c_str(), &o->log_level))
          return *err = flag_error("log-level", "'" + v + "' is not one of debug, info, warn, error"),
                 ParseOutcome::Error;
        break;
      case 'h': return ParseOutcome::Help;
      case ':': return *err = std::string("option ") + argv[optind - 1] + " needs a value", ParseOutcome::Error;
      default: return *err = std::string("unknown option ") + argv[optind - 1], ParseOutcome::Error;
    }
  }
  if (optind < argc) return *err = std::string("unexpected argument '") + argv[optind] + "'", ParseOutcome::Error;
  return ParseOutcome::Ok;
}

ParseOutcome parse_stats_options(int argc, char **argv, StatsOptions *o, std::string *err) {
  static const option kLong[] = {{"iface", required_argument, nullptr, 'i'},
                                 {"pin-dir", required_argument, nullptr, kPinDir},
                                 {"json", no_argument, nullptr, kJson},
                                 {"top", required_argument, nullptr, kTop},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  optind = 1;
  opterr = 0;
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
      case ':':
        *err = std::string("option ") + argv[optind - 1] + " needs a value";
        return ParseOutcome::Error;
      default:
        *err = std::string("unknown option ") + argv[optind - 1];
        return ParseOutcome::Error;
    }
  }
  if (optind < argc) return *err = std::string("unexpected argument '") + argv[optind] + "'", ParseOutcome::Error;
  if (o->pin_dir.empty() && o->iface.empty())
    return *err = "say which throttle to read: --iface IFACE or --pin-dir DIR", ParseOutcome::Error;
  if (o->pin_dir.empty()) o->pin_dir = default_pin_dir(o->iface);
  return ParseOutcome::Ok;
}

}  // namespace dt
