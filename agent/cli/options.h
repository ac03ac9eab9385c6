// options.h - one table-driven command-line parser (getopt_long): agent, subcommands, tools.
// Each option is one entry of a table: its names, its --help text, what its value does.
//
// The table is the only place an option is written down: the parser reads argv with it,
// --help is printed from it, the --config file's setting names come from it, and every
// error is worded the same way ("--NAME: what is wrong", "unexpected argument 'X'").
// Adding an option is one entry, e.g.
//
//   {"top", 0, "N", "show N sources (default 10; 0 shows every source)", count_into(&o->top, 0, UINT32_MAX)},
#pragma once

#include <getopt.h>

#include <functional>
#include <string>
#include <vector>

namespace dt {

// Outcome of parsing: go on, print help, or fail with a message (exit code 2).
enum class ParseOutcome { Ok, Help, Error };

// Takes an option's value ("" for a switch): false with *why saying what is wrong with it
// (the parser puts "--NAME: " in front).
using OptionHandler = std::function<bool(const std::string &value, std::string *why)>;

struct OptionSpec {
  const char *name = nullptr;   // long name without "--"; nullptr: a line of --help text only
  char short_name = 0;          // 'i' for -i; 0: long only
  const char *value = nullptr;  // the value's name in --help ("IFACE"); nullptr: a switch
  const char *help = "";        // its --help text; each '\n' starts a continuation line
  OptionHandler apply;          // empty for "help" (and text lines)
};

// A command: what --help says around the options, the options, its operands.
struct CommandSpec {
  CommandSpec() = default;
  CommandSpec(std::string command_, std::string usage_, std::vector<OptionSpec> options_, size_t max_operands_ = 0,
              std::string epilogue_ = "")
      : command(std::move(command_)),
        usage(std::move(usage_)),
        options(std::move(options_)),
        max_operands(max_operands_),
        epilogue(std::move(epilogue_)) {}
  std::string command;              // "agent stats": errors start with it
  std::string usage;                // --help above "Options:" (the Usage: lines and what it does)
  std::vector<OptionSpec> options;  // --help is added at the end unless an entry is named "help"
  size_t max_operands = 0;          // non-option arguments it takes (ADDR, NAME); more is an error
  std::string epilogue;             // --help after the options (examples)
};

// The table as getopt_long wants it (ending with a zero entry, --help included): each
// option's `val` is its short name, or 256 + its index in `options` when it has none.
std::vector<option> getopt_options(const std::vector<OptionSpec> &options);
// The `val` getopt_options gives the option `name` (0 if there is none).
int option_id(const std::vector<OptionSpec> &options, const std::string &name);

// Reads argv (argv[0] is the command) against spec: each option's handler, in order, then
// the operands into *operands (at most spec.max_operands). *arg_index (if not null): the
// argv index an error is about, -1 for an extra operand. Help as soon as --help is met.
ParseOutcome parse_command_line(const CommandSpec &spec, int argc, char **argv, std::vector<std::string> *operands,
                                std::string *err, int *arg_index = nullptr);

// The options given in argv, as (id, value) in order, with no handler run and no error
// (those are left to parse_command_line): for a look ahead such as --config's.
std::vector<std::pair<int, std::string>> scan_command_line(const std::vector<OptionSpec> &options, int argc,
                                                           char **argv);

// The --help text: usage, "Options:" and one entry per option, epilogue.
std::string command_help(const CommandSpec &spec);

// What a subcommand does with the outcome: Help prints command_help to stdout and gives 0;
// Error prints "COMMAND: ERR\nTry 'COMMAND --help'." to stderr and gives 2; Ok gives -1 (go on).
int exit_code_of(ParseOutcome outcome, const CommandSpec &spec, const std::string &err);

// The checks after the last option: the operands, what is required, defaults that depend
// on other options.
using FinishParse = std::function<ParseOutcome(const std::vector<std::string> &operands, std::string *err)>;
// parse_command_line, then finish (when the parse is Ok), then exit_code_of: -1 to go on
// with the options the handlers filled, else the exit code (help printed, or the error).
int parse_subcommand(const CommandSpec &spec, int argc, char **argv, const FinishParse &finish = {});

}  // namespace dt
