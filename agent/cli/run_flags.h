// run_flags.h - the options of `agent` (run) and `agent check`. Their table and the
// checks made once every option is read; parse_run_options (cli.h) puts them together.
#pragma once

#include <string>

#include "cli/cli.h"
#include "cli/options.h"

namespace dt {

// What the run options note for finish_run_options while the argv is read.
struct RunFlagsSeen {
  bool rate = false, burst = false;
  bool rate_bytes = false, burst_bytes = false;  // given with byte units
  std::string rate_text, burst_text;             // as given, for messages
  bool xdp_mode = false;                         // --xdp-mode given
};

// The run options, filling *o and *seen. `subcommand`: "" (run) or "check" (its errors
// and --help name it, after the program's name). Every option but --help and --config is also a --config setting.
CommandSpec run_command(RunOptions *o, RunFlagsSeen *seen, const std::string &subcommand = "");
// Settings that add up when repeated in a --config file.
extern const std::vector<std::string> kRunListSettings;

// After the last option: what is required, the defaults that depend on other options, and
// the options that make sense only together.
ParseOutcome finish_run_options(const RunFlagsSeen &seen, RunOptions *o, std::string *err);

}  // namespace dt
