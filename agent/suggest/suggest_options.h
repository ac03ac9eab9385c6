// suggest_options.h - `agent suggest`'s command line (docs/rules.md "Suggested limits").
#pragma once

#include <cstdint>
#include <string>

namespace dt {

// agent suggest (--iface IFACE | --pin-dir DIR) [--for D] [--rules FILE] [--quantile P]
//   [--headroom X] [--max-sources N] [--json]
struct SuggestOptions {
  std::string iface, pin_dir;
  uint64_t for_ns = 60'000'000'000ull;  // how long to measure
  std::string rules_file;               // the rules file to propose a diff of ("": none)
  double quantile = 0.99;               // --quantile P (percent on the command line)
  double headroom = 2.0;
  uint64_t max_sources = 10'000;  // series kept (the rest counted, left out)
  bool json = false;              // one JSON document instead of the text and diff
};

// The most source-seconds a measurement may keep (4 bytes each: 200 MB).
inline constexpr uint64_t kSuggestMaxSourceSeconds = 50'000'000;

// Parses argv (argv[0] is "suggest"): -1 to go on, else the exit code (help, or the error).
int parse_suggest_command(int argc, char **argv, SuggestOptions *o);

}  // namespace dt
