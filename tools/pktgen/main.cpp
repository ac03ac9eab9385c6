// main.cpp - bounded test traffic for dthrottle's namespace tests and demo.
//
//   pktgen send   spoofed-source UDP frames (or TCP SYNs, --tcp-syn) over an AF_PACKET
//                 socket, paced, bounded (send.cpp)
//   pktgen sink   counts UDP datagrams per source address: the independent witness
//                 of what the XDP program let through to the stack (sink.cpp)
//
// Safety first: `send` transmits only on veth interfaces, only from and to the
// benchmarking ranges 198.18.0.0/15 (RFC 2544) and 2001:2::/48 (RFC 5180), and only
// for a bounded count and duration, so a typo cannot spray spoofed traffic onto a
// real network. Exit codes: 0 success, 1 runtime failure, 2 usage error.
// This file holds the usage and the option tables of both (the agent's table-driven parser,
// cli/options.h); values are parsed by the agent's own parsers (common/parse_values.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "cli/option_values.h"
#include "cli/options.h"
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
    "                   [--src-random] [--src-mac MAC] [--sport P] [--dport P] [--size BYTES]\n"
    "                   [--tcp-syn] [--steady] [--start-at T] [--json]\n"
    "       pktgen sink [--port P] --duration D [--json]\n"
    "\n"
    "Test traffic for dthrottle, for network namespaces joined by veth pairs.\n"
    "pktgen send --help and pktgen sink --help list the options of each.\n"
    "\n"
    "Example:\n"
    "  pktgen send --iface veth0 --dst-ip 198.18.0.2 --dst-mac 02:00:00:00:00:02 \\\n"
    "      --src-range 198.18.1.1+4 --rate 4000 --count 8000 --duration 3s\n";

const char kSendUsage[] =
    "Usage: pktgen send --iface IF --dst-ip A[,A6] --dst-mac MAC\n"
    "                   (--sources S1,S2,... | --src-range FIRST+N)\n"
    "                   --rate PPS --count N --duration D\n"
    "                   [--src-random] [--src-mac MAC] [--sport P] [--dport P] [--size BYTES]\n"
    "                   [--tcp-syn] [--steady] [--start-at T] [--json]\n"
    "\n"
    "Transmits UDP frames (with --tcp-syn: TCP SYNs) over a raw AF_PACKET socket\n"
    "on IF, each with a spoofed source address taken round-robin from the sources,\n"
    "paced to PPS frames per second in total, until N frames are sent or D has\n"
    "passed, whichever comes first. Prints the frames sent per source. IPv4\n"
    "sources go to the IPv4 destination, IPv6 sources to the IPv6 one (give both\n"
    "in --dst-ip to mix).\n"
    "Only veth interfaces, and only addresses in 198.18.0.0/15 and 2001:2::/48\n"
    "(the benchmarking ranges) are accepted.\n"
    "A TCP SYN carries an MSS option (1460) and a sequence number of its own, with\n"
    "valid IP and TCP checksums, so that a listener's stack answers it.\n"
    "\n";

const char kSinkUsage[] =
    "Usage: pktgen sink [--port P] --duration D [--json]\n"
    "\n"
    "Counts the UDP datagrams arriving on port P per source address (IPv4 and\n"
    "IPv6) for D, or until SIGINT/SIGTERM, then prints the counts. Prints\n"
    "\"listening\" on stderr once it is ready to receive.\n"
    "\n";

// The checks no single option can make: everything required is given, every address is in
// the benchmarking ranges, every source has a destination of its family.
std::string send_refusal(const SendOptions &o, bool have_count) {
  if (o.iface.empty()) return "--iface is required";
  if (o.dsts.empty()) return "--dst-ip is required";
  if (!o.have_dst_mac) return "--dst-mac is required";
  if (o.sources.empty()) return "give the spoofed sources with --sources or --src-range";
  if (o.rate == 0) return "--rate is required";
  if (!have_count || o.duration_ns == 0)
    return "both --count and --duration are required, so that every run is bounded";
  if (o.sources.size() > kMaxSources) return "at most 65536 sources";
  if (o.tcp_syn && o.size) return "--size sets a UDP frame's length: a --tcp-syn frame is a bare SYN";
  std::set<Addr> seen;
  for (const auto &a : o.sources) {
    if (!in_test_range(a))
      return "source " + addr_str(a) +
             " is outside 198.18.0.0/15 and 2001:2::/48; "
             "pktgen only spoofs addresses reserved for benchmarking";
    if (!seen.insert(a).second) return "source " + addr_str(a) + " is given twice";
    if (std::none_of(o.dsts.begin(), o.dsts.end(), [&](const Addr &d) { return d.family == a.family; }))
      return "source " + addr_str(a) + " has no --dst-ip of its family (" + (a.family == AF_INET ? "IPv4" : "IPv6") +
             ")";
  }
  for (const auto &d : o.dsts)
    if (!in_test_range(d))
      return "destination " + addr_str(d) +
             " is outside 198.18.0.0/15 and 2001:2::/48; "
             "pktgen only sends to addresses reserved for benchmarking";
  return "";
}

// A handler that takes its value with parse(value), or refuses it with "'VALUE' is not " + what.
OptionHandler checked(std::function<bool(const std::string &)> parse, const char *what) {
  return [parse, what](const std::string &v, std::string *why) {
    return parse(v) || (*why = "'" + v + "' is not " + what, false);
  };
}

// --dst-ip A[,A6]: at most one destination per family.
bool add_destinations(const std::string &list, std::vector<Addr> *dsts, std::string *why) {
  for (const auto &s : split(list, ',')) {
    Addr a;
    if (!parse_addr(s, &a)) return *why = "'" + s + "' is not an IP address", false;
    for (const auto &d : *dsts)
      if (d.family == a.family) return *why = "give at most one IPv4 and one IPv6 destination", false;
    dsts->push_back(a);
  }
  return true;
}

// --sources LIST.
bool add_sources(const std::string &list, std::vector<Addr> *sources, std::string *why) {
  for (const auto &s : split(list, ',')) {
    Addr a;
    if (!parse_addr(s, &a)) return *why = "'" + s + "' is not an IP address", false;
    sources->push_back(a);
  }
  return true;
}

// --duration D: from 1ms to kMaxDurationNs.
OptionHandler bounded_duration(uint64_t *ns, const char *example) {
  return checked(
      [ns](const std::string &v) {
        std::string e;
        return parse_duration(v, ns, &e) && *ns <= kMaxDurationNs;
      },
      example);
}

// A port from 1 to 65535.
OptionHandler port_into(uint16_t *port) {
  return checked(
      [port](const std::string &v) {
        uint64_t n = 0;
        std::string e;
        return parse_count(v, 1, 65535, &n, &e) && (*port = static_cast<uint16_t>(n), true);
      },
      "a port from 1 to 65535");
}

// The options of `pktgen send`; *have_count: --count was given.
std::vector<OptionSpec> send_options(SendOptions *o, bool *have_count) {
  const char *kMacExample = "a MAC address like 02:00:00:00:00:01";
  return {
      {"iface", 0, "IF", "veth interface to send on", store(&o->iface)},
      {"dst-ip", 0, "A[,A6]", "destination: one IPv4 and/or one IPv6 address",
       [o](const std::string &v, std::string *why) { return add_destinations(v, &o->dsts, why); }},
      {"dst-mac", 0, "MAC", "destination MAC (the peer veth's address)",
       checked([o](const std::string &v) { return parse_mac(v, &o->dst_mac) && (o->have_dst_mac = true); },
               kMacExample)},
      {"src-mac", 0, "MAC", "source MAC (default: IF's own address)",
       checked([o](const std::string &v) { return parse_mac(v, &o->src_mac) && (o->have_src_mac = true); },
               kMacExample)},
      {"sources", 0, "LIST", "comma-separated source addresses",
       [o](const std::string &v, std::string *why) { return add_sources(v, &o->sources, why); }},
      {"src-random", 0, nullptr,
       "each frame's source drawn at random from the sources\n(a spoofed flood) instead of round-robin",
       turn_on(&o->random)},
      {"src-range", 0, "A+N", "N consecutive source addresses starting at A (may be\ncombined with --sources)",
       [o](const std::string &v, std::string *why) { return expand_range(v, &o->sources, why); }},
      {"rate", 0, "PPS", "frames per second, all sources together",
       checked(
           [o](const std::string &v) {
             std::string e;
             return parse_rate(v, &o->rate, &e) && o->rate > 0 && o->rate <= kMaxRate;
           },
           "a rate from 0 (excluded) to 10000000 frames per second")},
      {"count", 0, "N", "stop after N frames in total (required)",
       checked(
           [=](const std::string &v) {
             std::string e;
             return parse_count(v, 1, kMaxCount, &o->count, &e) && (*have_count = true);
           },
           "a whole number from 1 to 1000000000")},
      {"duration", 0, "D", "stop after D, e.g. 2s, 500ms (required, at most 1h)",
       bounded_duration(&o->duration_ns, "a time from 1ms to 1h such as 2s or 500ms")},
      {"sport", 0, "P", "source port of every frame (default 40000 + the\nsource's index)", port_into(&o->sport)},
      {"dport", 0, "P", "destination port (default 9999)", port_into(&o->dport)},
      {"tcp-syn", 0, nullptr, "send TCP SYNs (MSS option, a new sequence number each)\ninstead of UDP frames",
       turn_on(&o->tcp_syn)},
      {"steady", 0, nullptr,
       "after a late wake-up, skip the frames that fell due\n(counted as skipped) instead of sending them at once:\nno "
       "second ever sees more than PPS; the sources take\nturns by frames sent, so all lose alike",
       turn_on(&o->steady)},
      {"size", 0, "BYTES",
       "length of each frame, Ethernet header included, 100 to\n9014 (jumbo: above 1514 the interface's MTU must "
       "take\nit; default: the shortest, 58 IPv4 / 78 IPv6)",
       checked(
           [o](const std::string &v) {
             std::string e;
             return parse_count(v, 100, 9014, &o->size, &e);
           },
           "a frame length from 100 to 9014 bytes")},
      {"start-at", 0, "T",
       "send the first frame at Unix time T (seconds, e.g. from\ndate +%s.%N; default: at once): senders started "
       "one\nafter the other begin together",
       checked(
           [o](const std::string &v) {
             char *end = nullptr;
             const double t = strtod(v.c_str(), &end);
             return end && *end == '\0' && t > 0 && t < 1e11 &&
                    (o->start_at_unix_ns = static_cast<uint64_t>(t * 1e9), true);
           },
           "a Unix time in seconds such as 1764130000.25")},
      {"json", 0, nullptr, "print the result as JSON instead of a table", turn_on(&o->json)},
  };
}

// Returns -1 to go on, else the exit code (help or a usage error).
int parse_send(int argc, char **argv, SendOptions *o) {
  bool have_count = false;
  const CommandSpec spec("pktgen send", kSendUsage, send_options(o, &have_count));
  return parse_subcommand(spec, argc, argv, [&](const std::vector<std::string> &, std::string *err) {
    *err = send_refusal(*o, have_count);
    return err->empty() ? ParseOutcome::Ok : ParseOutcome::Error;
  });
}

// Returns -1 to go on, else the exit code (help or a usage error).
int parse_sink(int argc, char **argv, SinkOptions *o) {
  const CommandSpec spec("pktgen sink", kSinkUsage,
                         {
                             {"port", 0, "P", "UDP port (default 9999)", port_into(&o->port)},
                             {"duration", 0, "D", "how long to listen (required, at most 1h)",
                              bounded_duration(&o->duration_ns, "a time from 1ms to 1h such as 5s or 500ms")},
                             {"json", 0, nullptr, "print the result as JSON instead of a table", turn_on(&o->json)},
                         });
  return parse_subcommand(spec, argc, argv, [o](const std::vector<std::string> &, std::string *err) {
    if (o->duration_ns) return ParseOutcome::Ok;
    return *err = "--duration is required, so that every run is bounded", ParseOutcome::Error;
  });
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
