// run_options.cpp - the command line of `agent` (run) and `agent check`, with its --config
// file. One parse for both, with the table of run_flags.h.
#include <functional>
#include <set>

#include "cli/cli.h"
#include "cli/option_values.h"
#include "cli/run_flags.h"
#include "rules/config_file.h"

namespace dt {
namespace {

// The run table for its names and its --help: its handlers, never run, would write to scratch.
CommandSpec run_table(const std::string &subcommand = "") {
  static RunOptions scratch;
  static RunFlagsSeen scratch_seen;
  return run_command(&scratch, &scratch_seen, subcommand);
}

// The options table as getopt_long and the --config reader want it.
std::vector<option> run_getopt_table() { return getopt_options(run_table().options); }

// One parse of an argv, then the checks of the set. *arg_index: the argv index of the
// argument an error is about, or -1 for errors about the whole set (a required flag missing...).
ParseOutcome parse_run_argv(int argc, char **argv, RunOptions *o, std::string *err, int *arg_index) {
  RunFlagsSeen seen;
  std::vector<std::string> operands;
  const ParseOutcome r = parse_command_line(run_command(o, &seen), argc, argv, &operands, err, arg_index);
  return r == ParseOutcome::Ok ? finish_run_options(seen, o, err) : r;
}

int run_option_id(const char *name) { return option_id(run_table().options, name); }

}  // namespace

// --config FILE: every setting becomes "--name=value" ahead of the command line, so one
// parse checks both and the command line, parsed last, wins. An option given on the
// command line drops the file's lines for it (--peers replaces the file's list rather
// than adding to it), but every line of the file is first parsed on its own, so that a
// bad line is reported as FILE:LINE even when the command line overrides it.
ParseOutcome parse_run_options(int argc, char **argv, RunOptions *o, std::string *err) {
  std::string config;
  std::set<int> given;
  for (const auto &[id, value] : scan_command_line(run_table().options, argc, argv)) {
    given.insert(id);
    if (id == run_option_id("config")) config = value;
  }
  int at = -1;
  if (config.empty() || given.count('h')) return parse_run_argv(argc, argv, o, err, &at);

  std::vector<ConfigSetting> settings;
  if (!load_config_file(config, run_getopt_table().data(), kRunListSettings, &settings, err))
    return ParseOutcome::Error;
  ArgvList file_only, merged;
  file_only.push(argv[0]);
  merged.push(argv[0]);
  for (const auto &s : settings) {
    file_only.push(s.arg);
    if (!given.count(s.opt)) merged.push(s.arg);
  }
  RunOptions scratch;
  std::string e;
  if (parse_run_argv(file_only.argc(), file_only.argv(), &scratch, &e, &at) == ParseOutcome::Error && at > 0) {
    // "--rate: invalid rate 'x'" -> "FILE:LINE: rate: invalid rate 'x'"
    *err = config + ":" + std::to_string(settings[at - 1].line) + ": " + (e.rfind("--", 0) == 0 ? e.substr(2) : e);
    return ParseOutcome::Error;
  }
  for (int i = 1; i < argc; i++) merged.push(argv[i]);
  const ParseOutcome r = parse_run_argv(merged.argc(), merged.argv(), o, err, &at);
  o->config_file = config;
  o->config_peers = !given.count(run_option_id("peers"));
  o->config_peer_verified = !given.count(run_option_id("peer-verified"));
  return r;
}

namespace {
// Every value of --NAME in the --config file, through parse(value, &why); an error names
// FILE:LINE.
bool read_config_values(const std::string &config_file, const std::string &name,
                        const std::function<bool(const std::string &, std::string *)> &parse, std::string *err) {
  std::vector<ConfigSetting> settings;
  if (!load_config_file(config_file, run_getopt_table().data(), kRunListSettings, &settings, err)) return false;
  const std::string prefix = "--" + name + "=";
  for (const auto &s : settings) {
    if (s.arg.rfind(prefix, 0) != 0) continue;
    std::string e;
    if (!parse(s.arg.substr(prefix.size()), &e))
      return *err = config_file + ":" + std::to_string(s.line) + ": " + name + ": " + e, false;
  }
  return true;
}
}  // namespace

bool read_config_peers(const std::string &config_file, std::vector<std::string> *out, std::string *err) {
  return read_config_values(
      config_file, "peers", [out](const std::string &v, std::string *e) { return add_endpoints(v, false, out, e); },
      err);
}

bool read_config_peer_verified(const std::string &config_file, PeerSet *out, std::string *err) {
  PeerSet found;  // all, without the setting
  if (!read_config_values(
          config_file, "peer-verified",
          [&found](const std::string &v, std::string *e) { return parse_peer_set(v, &found, e); }, err))
    return false;
  *out = std::move(found);
  return true;
}

// `agent` and `agent check` parse alike; only their name in errors and --help differs.
int parse_run_command(int argc, char **argv, RunOptions *o, const char *subcommand) {
  std::string err;
  const ParseOutcome r = parse_run_options(argc, argv, o, &err);
  return exit_code_of(r, run_table(subcommand), err);
}

std::string run_usage() { return command_help(run_table()); }

}  // namespace dt
