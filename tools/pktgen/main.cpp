// main.cpp - bounded test traffic for dthrottle's namespace tests and demo.
//
//   pktgen send   spoofed-source UDP frames over an AF_PACKET socket, paced, bounded (send.cpp)
//   pktgen sink   counts UDP datagrams per source address: the independent witness
//                 of what the XDP program let through to the stack (sink.cpp)
//
// Safety first: `send` transmits only on veth interfaces, only from and to the
// benchmarking ranges 198.18.0.0/15 (RFC 2544) and 2001:2::/48 (RFC 5180), and only
// for a bounded count and duration, so a typo cannot spray spoofed traffic onto a
// real network. Exit codes: 0 success, 1 runtime failure, 2 usage error.
// This file holds the usage and the option parsing of both; values are parsed by the
// agent's own parsers (common/parse_values.h).
#include <getopt.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "common/parse_values.h"
#include "pktgen/addr.h"
#include "pktgen/send.h"
#include "pktgen/sink.h"

namespace dt::pktgen {
namespace {

const char kUsage[] =
    "Usage: pktgen send --iface IF --dst-ip A[,A6] --dst-mac MAC\n"
    "                   (--sources S1,S2,... | --src-range FIRST+N)\n"
    "                   --rate PPS --count N --duration D\n"
    "                   [--src-random] [--src-mac MAC] [--dport P] [--size BYTES] [--json]\n"
    "       pktgen sink [--port P] --duration D [--json]\n"
    "\n"
    "Test traffic for dthrottle, for network namespaces joined by veth pairs.\n"
    "\n"
    "send: transmits UDP frames over a raw AF_PACKET socket on IF, each with a spoofed\n"
    "  source address taken round-robin from the sources, paced to PPS frames per\n"
    "  second in total, until N frames are sent or D has passed, whichever comes\n"
    "  first. Prints the frames sent per source. IPv4 sources go to the IPv4\n"
    "  destination, IPv6 sources to the IPv6 one (give both in --dst-ip to mix).\n"
    "  Only veth interfaces, and only addresses in 198.18.0.0/15 and 2001:2::/48\n"
    "  (the benchmarking ranges) are accepted.\n"
    "    --iface IF          veth interface to send on\n"
    "    --dst-ip A[,A6]     destination: one IPv4 and/or one IPv6 address\n"
    "    --dst-mac MAC       destination MAC (the peer veth's address)\n"
    "    --src-mac MAC       source MAC (default: IF's own address)\n"
    "    --sources LIST      comma-separated source addresses\n"
    "    --src-random        each frame's source drawn at random from the sources\n"
    "                        (a spoofed flood) instead of round-robin\n"
    "    --src-range A+N     N consecutive source addresses starting at A (may be\n"
    "                        combined with --sources)\n"
    "    --rate PPS          frames per second, all sources together\n"
    "    --count N           stop after N frames in total (required)\n"
    "    --duration D        stop after D, e.g. 2s, 500ms (required, at most 1h)\n"
    "    --dport P           destination UDP port (default 9999)\n"
    "    --size BYTES        length of each frame, Ethernet header included, 100 to\n"
    "                        1514 (default: the shortest, 58 IPv4 / 78 IPv6)\n"
    "\n"
    "sink: counts the UDP datagrams arriving on port P per source address (IPv4 and\n"
    "  IPv6) for D, or until SIGINT/SIGTERM, then prints the counts. Prints\n"
    "  \"listening\" on stderr once it is ready to receive.\n"
    "    --port P            UDP port (default 9999)\n"
    "    --duration D        how long to listen (required, at most 1h)\n"
    "\n"
    "Both:\n"
    "    --json              print the result as JSON instead of a table\n"
    "    -h, --help          show this help\n"
    "\n"
    "Example:\n"
    "  pktgen send --iface veth0 --dst-ip 198.18.0.2 --dst-mac 02:00:00:00:00:02 \\\n"
    "      --src-range 198.18.1.1+4 --rate 4000 --count 8000 --duration 3s\n";

// The checks no single option can make: everything required is given, every address is in
// the benchmarking ranges, every source has a destination of its family.
// Returns -1 to go on, else the exit code.
int check_send(const SendOptions &o, bool have_count) {
  if (o.iface.empty()) return usage_error("send: --iface is required");
  if (o.dsts.empty()) return usage_error("send: --dst-ip is required");
  if (!o.have_dst_mac) return usage_error("send: --dst-mac is required");
  if (o.sources.empty()) return usage_error("send: give the spoofed sources with --sources or --src-range");
  if (o.rate == 0) return usage_error("send: --rate is required");
  if (!have_count || o.duration_ns == 0)
    return usage_error("send: both --count and --duration are required, so that every run is bounded");
  if (o.sources.size() > kMaxSources) return usage_error("send: at most 65536 sources");
  std::set<Addr> seen;
  for (const auto &a : o.sources) {
    if (!in_test_range(a))
      return usage_error("source " + addr_str(a) + " is outside 198.18.0.0/15 and 2001:2::/48; "
                         "pktgen only spoofs addresses reserved for benchmarking");
    if (!seen.insert(a).second) return usage_error("source " + addr_str(a) + " is given twice");
    if (std::none_of(o.dsts.begin(), o.dsts.end(), [&](const Addr &d) { return d.family == a.family; }))
      return usage_error("source " + addr_str(a) + " has no --dst-ip of its family (" +
                         (a.family == AF_INET ? "IPv4" : "IPv6") + ")");
  }
  for (const auto &d : o.dsts)
    if (!in_test_range(d))
      return usage_error("destination " + addr_str(d) + " is outside 198.18.0.0/15 and 2001:2::/48; "
                         "pktgen only sends to addresses reserved for benchmarking");
  return -1;
}

// --duration D: at most kMaxDurationNs.
bool parse_bounded_duration(const std::string &v, uint64_t *ns) {
  std::string err;
  return dt::parse_duration(v, ns, &err) && *ns <= kMaxDurationNs;
}

// A port from 1 to 65535.
bool parse_port(const std::string &v, uint16_t *port) {
  uint64_t n = 0;
  std::string err;
  if (!dt::parse_count(v, 1, 65535, &n, &err)) return false;
  *port = static_cast<uint16_t>(n);
  return true;
}


// Returns -1 to go on, else the exit code (help or a usage error).
int parse_send(int argc, char **argv, SendOptions *o) {
  enum { kIface = 1000, kDstIp, kDstMac, kSrcMac, kSources, kSrcRange, kRate, kCount, kDuration,
         kDport, kSize, kJson, kSrcRandom };
  static const option kLong[] = {
      {"iface", required_argument, nullptr, kIface},
      {"dst-ip", required_argument, nullptr, kDstIp},
      {"dst-mac", required_argument, nullptr, kDstMac},
      {"src-mac", required_argument, nullptr, kSrcMac},
      {"sources", required_argument, nullptr, kSources},
      {"src-range", required_argument, nullptr, kSrcRange},
      {"rate", required_argument, nullptr, kRate},
      {"count", required_argument, nullptr, kCount},
      {"duration", required_argument, nullptr, kDuration},
      {"dport", required_argument, nullptr, kDport},
      {"size", required_argument, nullptr, kSize},
      {"json", no_argument, nullptr, kJson},
      {"src-random", no_argument, nullptr, kSrcRandom},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  bool have_count = false;
  std::string err;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", kLong, nullptr)) != -1) {
    const std::string v = optarg ? optarg : "";
    switch (c) {
      case kIface: o->iface = v; break;
      case kDstIp:
        for (const auto &s : split(v, ',')) {
          Addr a;
          if (!parse_addr(s, &a)) return usage_error("--dst-ip: '" + s + "' is not an IP address");
          for (const auto &d : o->dsts)
            if (d.family == a.family)
              return usage_error("--dst-ip: give at most one IPv4 and one IPv6 destination");
          o->dsts.push_back(a);
        }
        break;
      case kDstMac:
        if (!parse_mac(v, &o->dst_mac)) return usage_error("--dst-mac: '" + v + "' is not a MAC address like 02:00:00:00:00:01");
        o->have_dst_mac = true;
        break;
      case kSrcMac:
        if (!parse_mac(v, &o->src_mac)) return usage_error("--src-mac: '" + v + "' is not a MAC address like 02:00:00:00:00:01");
        o->have_src_mac = true;
        break;
      case kSources:
        for (const auto &s : split(v, ',')) {
          Addr a;
          if (!parse_addr(s, &a)) return usage_error("--sources: '" + s + "' is not an IP address");
          o->sources.push_back(a);
        }
        break;
      case kSrcRange:
        if (!expand_range(v, &o->sources, &err)) return usage_error(err);
        break;
      case kRate:
        if (!dt::parse_rate(v, &o->rate, &err) || o->rate <= 0 || o->rate > kMaxRate)
          return usage_error("--rate: '" + v + "' is not a rate from 0 (excluded) to 10000000 frames per second");
        break;
      case kCount:
        if (!dt::parse_count(v, 1, kMaxCount, &o->count, &err))
          return usage_error("--count: '" + v + "' is not a whole number from 1 to 1000000000");
        have_count = true;
        break;
      case kDuration:
        if (!parse_bounded_duration(v, &o->duration_ns))
          return usage_error("--duration: '" + v + "' is not a time from 1ms to 1h such as 2s or 500ms");
        break;
      case kDport:
        if (!parse_port(v, &o->dport)) return usage_error("--dport: '" + v + "' is not a port from 1 to 65535");
        break;
      case kSize:
        if (!dt::parse_count(v, 100, 1514, &o->size, &err))
          return usage_error("--size: '" + v + "' is not a frame length from 100 to 1514 bytes");
        break;
      case kJson: o->json = true; break;
      case kSrcRandom: o->random = true; break;
      case 'h': fputs(kUsage, stdout); return 0;
      case ':': return usage_error(std::string("option ") + argv[optind - 1] + " needs a value");
      default: return usage_error(std::string("unknown option ") + argv[optind - 1]);
    }
  }
  if (optind < argc) return usage_error(std::string("unexpected argument '") + argv[optind] + "'");
  return check_send(*o, have_count);
}

// Returns -1 to go on, else the exit code (help or a usage error).
int parse_sink(int argc, char **argv, SinkOptions *o) {
  enum { kPort = 1000, kDuration, kJson };
  static const option kLong[] = {{"port", required_argument, nullptr, kPort},
                                 {"duration", required_argument, nullptr, kDuration},
                                 {"json", no_argument, nullptr, kJson},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", kLong, nullptr)) != -1) {
    const std::string v = optarg ? optarg : "";
    switch (c) {
      case kPort:
        if (!parse_port(v, &o->port)) return usage_error("--port: '" + v + "' is not a port from 1 to 65535");
        break;
      case kDuration:
        if (!parse_bounded_duration(v, &o->duration_ns))
          return usage_error("--duration: '" + v + "' is not a time from 1ms to 1h such as 5s or 500ms");
        break;
      case kJson: o->json = true; break;
      case 'h': fputs(kUsage, stdout); return 0;
      case ':': return usage_error(std::string("option ") + argv[optind - 1] + " needs a value");
      default: return usage_error(std::string("unknown option ") + argv[optind - 1]);
    }
  }
  if (optind < argc) return usage_error(std::string("unexpected argument '") + argv[optind] + "'");
  if (o->duration_ns == 0) return usage_error("sink: --duration is required, so that every run is bounded");
  return -1;
}

}  // namespace
}  // namespace dt::pktgen

int main(int argc, char **argv) {
  using namespace dt::pktgen;
  const std::string mode = argc >= 2 ? argv[1] : "";
  if (mode == "send") {
    SendOptions o;
    if (int rc = parse_send(argc - 1, argv + 1, &o); rc >= 0) return rc;
    return run_send(o);
  }
  if (mode == "sink") {
    SinkOptions o;
    if (int rc = parse_sink(argc - 1, argv + 1, &o); rc >= 0) return rc;
    return run_sink(o);
  }
  if (mode == "-h" || mode == "--help" || mode == "help") return fputs(kUsage, stdout), 0;
  return usage_error(mode.empty() ? "say what to do: send or sink"
                                  : "unknown mode '" + mode + "' (expected send or sink)");
}
