// cli.h - command line of the agent: subcommands, flags, --help text.
#pragma once

#include <cstdint>
#include <string>

#include "dataplane.h"
#include "log.h"

namespace dt {

struct RunOptions {
  std::string iface;
  double rate = 0;
  uint64_t burst = 0;
  std::string pin_dir;  // empty: default_pin_dir(iface)
  XdpMode mode = XdpMode::Auto;
  uint32_t max_sources = 0;
  bool max_sources_explicit = false;
  bool keep = false;
  uint64_t stats_interval_ns = 10'000'000'000ull;
  LogLevel log_level = LogLevel::Info;
};

struct StatsOptions {
  std::string iface;
  std::string pin_dir;
  bool json = false;
  uint64_t top = 10;  // 0: every source
};

// Outcome of parsing: run, print help, or fail with a message (exit code 2).
enum class ParseOutcome { Ok, Help, Error };

ParseOutcome parse_run_options(int argc, char **argv, RunOptions *out, std::string *err);
ParseOutcome parse_stats_options(int argc, char **argv, StatsOptions *out, std::string *err);

const char *run_usage();
const char *stats_usage();

}  // namespace dt
