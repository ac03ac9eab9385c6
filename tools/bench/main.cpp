// main.cpp - `make bench`: what dthrottle costs per packet, and what the agent pays per
// period. `bench NAME` runs one part only (packet, hook, flood, lists, match, capture, ablate, cookies,
// multi, period, report, attack).
//
//   Part 1   per packet (packet.cpp): dt_xdp passing and dropping against an LRU baseline,
//            1 to 1,000,000 sources, through the bench wrapper dt_bench_rotate
//   Part 1b  the hook (hook.cpp): dt_xdp and dt_tc (--attach tc) side by side, one source
//   Part 1c  a random-source flood with prefix budgets (flood.cpp)
//   Part 1d  a 1,000,000-prefix deny list: its load time, memory and per-packet cost (lists.cpp)
//   Part 1e  rule matching: no rules, the old conditions, the new ones (match.cpp)
//   Part 1f  agent capture: the drop path with no capture and with one running (capture.cpp)
//   Part 1g  the admitted path with each of its parts left out in turn (ablate.cpp)
//   Part 1h  SYN cookies: a SYN answered, a handshake ACK checked, beside a SYN's PASS and DROP (cookie.cpp)
//   Part 1i  libxdp's dispatcher (--attach xdp-multi): dt_xdp alone and inside it (multi.cpp)
//   Part 2   per agent period (period.cpp): read_stats, apply_debits, a full bucket walk,
//            Collector::end_period, adaptive limits
//   Part 3   the peer report codec (report.cpp)
//   Part 4   under attack (attack.cpp): measured paths side by side with a reference
//
// Time is the thread's CPU time (measure.h): it leaves out whatever else ran on the CPU while
// the test run yielded it (the wall clock would not), and unlike the kernel's own per-run
// figure it is not rounded to whole nanoseconds. The programs under test: programs.h.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>

#include "bench/parts.h"
#include "cli/options.h"

namespace {

// The parts of `bench`, in the order `bench` runs them; `bench NAME` runs one.
struct BenchPart {
  const char *name;
  void (*run)();
};
const BenchPart kParts[] = {
    {"packet", dt::bench::per_packet_part},   {"hook", dt::bench::hook_part},
    {"flood", dt::bench::prefix_flood_part},  {"lists", dt::bench::lists_part},
    {"match", dt::bench::match_part},         {"capture", dt::bench::capture_part},
    {"ablate", dt::bench::ablate_part},       {"cookies", dt::bench::syncookie_part},
    {"multi", dt::bench::multi_part},         {"period", dt::bench::per_period_part},
    {"report", dt::bench::report_codec_part}, {"attack", dt::bench::under_attack_part},
};

// The part named on the command line ("" for all) into *only. Returns -1 to go on, else
// the exit code (help printed, or the error).
int parse_bench_args(int argc, char **argv, std::string *only) {
  std::string names;
  for (const BenchPart &p : kParts) names += std::string(names.empty() ? "" : "|") + p.name;
  const dt::CommandSpec spec(
      "bench", "Usage: bench [" + names + "]\n\nRuns every part of the benchmark, or the one named.\n\n", {}, 1);
  return dt::parse_subcommand(spec, argc, argv, [&](const std::vector<std::string> &operands, std::string *err) {
    *only = operands.empty() ? "" : operands[0];
    const bool known =
        std::any_of(std::begin(kParts), std::end(kParts), [&](const BenchPart &p) { return *only == p.name; });
    if (only->empty() || known) return dt::ParseOutcome::Ok;
    return *err = "unknown part '" + *only + "' (one of " + names + ")", dt::ParseOutcome::Error;
  });
}

}  // namespace

int main(int argc, char **argv) {
  std::string only;
  if (int code = parse_bench_args(argc, argv, &only); code >= 0) return code;
  setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows, and stays ordered with errors
  dt::bench::print_machine();
  for (const BenchPart &p : kParts)
    if (only == "" || only == p.name) p.run();
  return 0;
}
