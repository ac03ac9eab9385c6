// cmd_sessions.cpp - the subcommands that parse their options and run one session:
// `agent capture` (samples of decided packets into a pcap file: agent/capture/,
// docs/capture.md), `agent suggest` (a rate and burst per rule from the traffic the buckets
// count: agent/suggest/, docs/rules.md "Suggested limits") and `agent fingerprint -r FILE`
// (the header values that tell an attack apart in a capture: agent/fingerprint/).
#include "capture/capture_options.h"
#include "capture/capture_session.h"
#include "commands/commands.h"
#include "fingerprint/fingerprint_options.h"
#include "fingerprint/fingerprint_session.h"
#include "suggest/suggest_options.h"
#include "suggest/suggest_session.h"

namespace dt {

namespace {

// The exit code of `parse` if it ended the command (--help, a usage error), else of `run`.
template <class Options>
int parse_and_run(int argc, char **argv, int (*parse)(int, char **, Options *), int (*run)(const Options &)) {
  Options opt;
  if (int code = parse(argc, argv, &opt); code >= 0) return code;
  return run(opt);
}

}  // namespace

int cmd_capture(int argc, char **argv) { return parse_and_run(argc, argv, parse_capture_command, run_capture); }

int cmd_suggest(int argc, char **argv) { return parse_and_run(argc, argv, parse_suggest_command, run_suggest); }

int cmd_fingerprint(int argc, char **argv) {
  return parse_and_run(argc, argv, parse_fingerprint_command, run_fingerprint);
}

}  // namespace dt
