// capture_options.cpp - `agent capture`'s option table, its --help text and its checks.
#include "capture/capture_options.h"

#include "cli/option_values.h"
#include "cli/options.h"
#include "common/program_name.h"

namespace dt {
namespace {

const char kCaptureUsage[] =
    "Usage: %prog capture (--iface IFACE | --pin-dir DIR) -w FILE [--dropped] [--would-drop] [--passed]\n"
    "                     [--rule NAME] [--source PREFIX] [--count N] [--duration D] [--snaplen N]\n"
    "                     [--per-cpu-rate K] [--format pcapng|pcap]\n"
    "\n"
    "Writes samples of the packets the throttle decided to FILE, a pcapng file whose every\n"
    "packet carries a comment with its verdict and the rule that decided it (tcpdump -r and\n"
    "Wireshark read it). The kernel samples: it keeps the packets whose verdict was asked for\n"
    "(by default dropped and would-drop) and that match --rule and --source, then at most K\n"
    "of them per second on each CPU, so a flood cannot turn capturing into a second flood.\n"
    "Stops after N packets, after D, or on Ctrl-C (the file stays valid). One capture at a\n"
    "time per throttle; one that dies stops sampling within 3 s. Needs root (CAP_BPF).\n"
    "\n";

const char kCaptureExamples[] =
    "\n"
    "Examples:\n"
    "  %prog capture -i eth0 -w drops.pcapng\n"
    "  %prog capture -i eth0 --rule dns-flood --count 1000 -w dns.pcapng\n"
    "  %prog capture -i eth0 --passed --source 198.18.7.0/24 -w - | tcpdump -r - -n\n";

// A verdict switch: adds its bit to the mask.
OptionHandler verdict_into(uint8_t *mask, uint8_t bit) {
  return [=](const std::string &, std::string *) { return *mask |= bit, true; };
}

OptionHandler format_into(PcapFormat *to) {
  return [=](const std::string &v, std::string *why) {
    if (v == "pcapng") return *to = PcapFormat::Pcapng, true;
    if (v == "pcap") return *to = PcapFormat::Pcap, true;
    return *why = "'" + v + "' is no format: pcapng (with comments) or pcap", false;
  };
}

}  // namespace

int parse_capture_command(int argc, char **argv, CaptureOptions *o) {
  std::vector<OptionSpec> options = with_pin_target(
      &o->iface, &o->pin_dir,
      {
          {"write", 'w', "FILE", "write the packets to FILE (\"-\": standard output)", store(&o->output)},
          {"dropped", 0, nullptr, "packets dropped (the default, with --would-drop)",
           verdict_into(&o->verdicts, DT_CAP_DROPPED)},
          {"would-drop", 0, nullptr, "packets dry run passed that enforcing would drop",
           verdict_into(&o->verdicts, DT_CAP_WOULD_DROP)},
          {"passed", 0, nullptr, "packets passed", verdict_into(&o->verdicts, DT_CAP_PASSED)},
          {"rule", 0, "NAME",
           "only packets decided by rule NAME (@ban, @deny-list and @allow-list\n"
           "name the bans and lists; default: the default rule)",
           store(&o->rule)},
          {"source", 0, "PREFIX", "only packets from PREFIX (an address, or ADDR/LEN)", store(&o->source)},
          {"count", 'c', "N", "stop after N packets, 1 to 1000000 (default 100)", count_into(&o->count, 1, 1'000'000)},
          {"duration", 0, "D", "stop after D, 1s to 24h (default: no limit)",
           duration_into(&o->duration_ns, 1'000'000'000ull, 86'400'000'000'000ull, "from 1s to 24h")},
          {"snaplen", 0, "N", "bytes of each packet to keep, 1 to 512 (default 128)",
           count_into(&o->snaplen, 1, DT_CAPTURE_MAX_SNAPLEN)},
          {"per-cpu-rate", 0, "K", "at most K packets per second on each CPU, 1 to 100000 (default 100)",
           count_into(&o->per_cpu_rate, 1, DT_CAPTURE_MAX_RATE)},
          {"format", 0, "FORMAT", "pcapng (default: verdict and rule as comments) or pcap (none)",
           format_into(&o->format)},
      },
      "capture on IFACE's throttle (/sys/fs/bpf/dthrottle/IFACE)", "capture on the throttle pinned in DIR");
  const CommandSpec spec(command_name("capture"), kCaptureUsage, std::move(options), 0, kCaptureExamples);
  return parse_subcommand(spec, argc, argv, [o](const std::vector<std::string> &, std::string *err) {
    if (o->output.empty())
      return *err = "say where to write the packets: -w FILE (\"-\" for standard output)", ParseOutcome::Error;
    if (!o->verdicts) o->verdicts = DT_CAP_DROPPED | DT_CAP_WOULD_DROP;
    return resolve_pin_dir(o->iface, &o->pin_dir, "capture on", err);
  });
}

}  // namespace dt
