// config_file.h - `agent --config FILE`: the run flags, written in a file.
//
// Format: one setting per line, named exactly like the long flag without its dashes
// (so `agent --help` documents the file too), `name = value`; `#` starts a comment
// (at the start of a line or after a space); blank lines are ignored. Switches
// (`keep`) take true/false, yes/no, on/off or 1/0, or stand alone to mean true.
// Lists (`peers`, `hub`) may be split over several lines and take `a, b` as well as `a,b`.
//
//   rate  = 100                                 # per source
//   burst = 50
//   peers = 198.18.1.2:7700, 198.18.1.3:7700
//
// Why not TOML or YAML: the settings are flat, and with the flags' own names and
// values the file needs no library, no second set of names to document, and its
// values are checked by the very parsers the flags use (cli/run_options.cpp turns each line
// into "--name=value" ahead of the command line).
#pragma once

#include <getopt.h>

#include <string>
#include <vector>

namespace dt {

// One line of a config file, as the flag it stands for.
struct ConfigSetting {
  int opt = 0;      // `val` of its entry in the option table
  std::string arg;  // "--rate=100"; "--keep" for a switch that is on
  int line = 0;     // 1-based
};

// Parses the text of a config file against the option table `longopts` (every long
// option but "help" and "config" is a setting). Names in `lists` may be given on
// several lines (their values add up, like repeated flags); any other name once.
// Switches set to false produce no setting. Values are not checked here: the flag
// parser does that. On error: false, *err = "PATH:LINE: what is wrong".
bool parse_config_text(const std::string &text, const std::string &path, const option *longopts,
                       const std::vector<std::string> &lists, std::vector<ConfigSetting> *out, std::string *err);

// Reads the file at `path`, then parse_config_text.
bool load_config_file(const std::string &path, const option *longopts, const std::vector<std::string> &lists,
                      std::vector<ConfigSetting> *out, std::string *err);

// An argv that owns its strings, for getopt_long.
class ArgvList {
 public:
  void push(std::string arg) { args_.push_back(std::move(arg)); }
  int argc() const { return static_cast<int>(args_.size()); }
  // Valid until the next push; getopt_long may permute the pointers, never the strings.
  char **argv();

 private:
  std::vector<std::string> args_;
  std::vector<char *> ptrs_;
};

}  // namespace dt
