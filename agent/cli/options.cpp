// options.cpp - the table-driven getopt_long parser and its --help writer (options.h).
#include "cli/options.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/program_name.h"

namespace dt {
namespace {

constexpr int kFirstLongOnlyId = 256;  // above every char a short option can be
constexpr size_t kMaxHelpColumn = 26;  // where descriptions start at the most

// The options with --help at the end, unless the table places it itself.
std::vector<OptionSpec> with_help(const std::vector<OptionSpec> &options) {
  std::vector<OptionSpec> all = options;
  const bool placed = std::any_of(options.begin(), options.end(),
                                  [](const OptionSpec &o) { return o.name && !strcmp(o.name, "help"); });
  if (!placed) all.push_back({"help", 'h', nullptr, "show this help", {}});
  return all;
}

int id_at(const std::vector<OptionSpec> &options, size_t i) {
  return options[i].short_name ? options[i].short_name : kFirstLongOnlyId + static_cast<int>(i);
}

// ":i:r:h": the short options, a leading ':' so that a missing value is told from an unknown option.
std::string short_options(const std::vector<OptionSpec> &options) {
  std::string s = ":";
  for (const OptionSpec &o : options) {
    if (!o.name || !o.short_name) continue;
    s += o.short_name;
    if (o.value) s += ':';
  }
  return s;
}

// One getopt_long pass over argv with the table of `options` (with_help applied).
class Getopt {
 public:
  Getopt(const std::vector<OptionSpec> &options, int argc, char **argv)
      : longopts_(getopt_options(options)), shorts_(short_options(options)), argc_(argc), argv_(argv) {
    // optind 0, not 1, makes glibc re-initialise fully (one process parses several argvs:
    // the --config look-ahead, the file, the command line); the errors are ours to word.
    optind = 0;
    opterr = 0;
  }
  // The next option's id, ':' for a missing value, '?' for an unknown option, -1 after the last.
  int next() { return getopt_long(argc_, argv_, shorts_.c_str(), longopts_.data(), nullptr); }
  const char *value() const { return optarg ? optarg : ""; }

 private:
  std::vector<option> longopts_;
  std::string shorts_;
  int argc_;
  char **argv_;
};

const OptionSpec *find_option(const std::vector<OptionSpec> &options, int id) {
  for (size_t i = 0; i < options.size(); i++)
    if (options[i].name && id_at(options, i) == id) return &options[i];
  return nullptr;
}

// getopt_long's own complaints (':' a missing value, '?' an unknown option), as a sentence.
std::string getopt_complaint(int c, char **argv) {
  return c == ':' ? std::string("option ") + argv[optind - 1] + " needs a value"
                  : std::string("unknown option ") + argv[optind - 1];
}

// "  -i, --iface IFACE": an option's names as --help shows them.
std::string help_names(const OptionSpec &o) {
  std::string s = o.short_name ? std::string("  -") + o.short_name + ", " : std::string("      ");
  s += std::string("--") + o.name;
  if (o.value) s += std::string(" ") + o.value;
  return s;
}

// One option's --help entry: its names, then its text from `column` on.
std::string help_entry(const OptionSpec &o, size_t column) {
  std::string names = help_names(o), out;
  out = names + (names.size() + 2 <= column ? std::string(column - names.size(), ' ') : std::string("  "));
  for (const char *p = o.help; *p; p++) {
    out += *p;
    if (*p == '\n') out += std::string(column, ' ');
  }
  return out + "\n";
}

}  // namespace

std::vector<option> getopt_options(const std::vector<OptionSpec> &options) {
  const std::vector<OptionSpec> all = with_help(options);
  std::vector<option> out;
  for (size_t i = 0; i < all.size(); i++)
    if (all[i].name)
      out.push_back({all[i].name, all[i].value ? required_argument : no_argument, nullptr, id_at(all, i)});
  out.push_back({nullptr, 0, nullptr, 0});
  return out;
}

int option_id(const std::vector<OptionSpec> &options, const std::string &name) {
  const std::vector<OptionSpec> all = with_help(options);
  for (size_t i = 0; i < all.size(); i++)
    if (all[i].name && name == all[i].name) return id_at(all, i);
  return 0;
}

ParseOutcome parse_command_line(const CommandSpec &spec, int argc, char **argv, std::vector<std::string> *operands,
                                std::string *err, int *arg_index) {
  int unused = -1;
  if (!arg_index) arg_index = &unused;
  const std::vector<OptionSpec> options = with_help(spec.options);
  Getopt getopt(options, argc, argv);
  for (int c; (c = getopt.next()) != -1;) {
    *arg_index = optind - 1;
    const OptionSpec *o = find_option(options, c);
    if (!o) return *err = getopt_complaint(c, argv), ParseOutcome::Error;
    if (!o->apply) return ParseOutcome::Help;
    if (std::string why; !o->apply(getopt.value(), &why))
      return *err = std::string("--") + o->name + ": " + why, ParseOutcome::Error;
  }
  *arg_index = -1;
  // Leftover arguments beyond the operands are a mistake (a typo of a subcommand, a value
  // without its option): the first one is named.
  for (int i = optind; i < argc; i++) {
    if (operands->size() >= spec.max_operands)
      return *err = std::string("unexpected argument '") + argv[i] + "'", ParseOutcome::Error;
    operands->push_back(argv[i]);
  }
  return ParseOutcome::Ok;
}

std::vector<std::pair<int, std::string>> scan_command_line(const std::vector<OptionSpec> &options, int argc,
                                                           char **argv) {
  std::vector<std::pair<int, std::string>> given;
  Getopt getopt(with_help(options), argc, argv);
  for (int c; (c = getopt.next()) != -1;)
    if (c != ':' && c != '?') given.emplace_back(c, getopt.value());
  return given;
}

std::string command_help(const CommandSpec &spec) {
  const std::vector<OptionSpec> options = with_help(spec.options);
  size_t column = 0;
  for (const OptionSpec &o : options)
    if (o.name) column = std::max(column, help_names(o).size() + 3);
  column = std::min(column, kMaxHelpColumn);
  std::string out = spec.usage + "Options:\n";
  for (const OptionSpec &o : options) out += o.name ? help_entry(o, column) : std::string(o.help) + "\n";
  return with_program_name(out + spec.epilogue);
}

int exit_code_of(ParseOutcome outcome, const CommandSpec &spec, const std::string &err) {
  switch (outcome) {
    case ParseOutcome::Ok: return -1;
    case ParseOutcome::Help: fputs(command_help(spec).c_str(), stdout); return 0;
    case ParseOutcome::Error: break;
  }
  fprintf(stderr, "%s: %s\nTry '%s --help'.\n", spec.command.c_str(), with_program_name(err).c_str(),
          spec.command.c_str());
  return 2;
}

int parse_subcommand(const CommandSpec &spec, int argc, char **argv, const FinishParse &finish) {
  std::vector<std::string> operands;
  std::string err;
  ParseOutcome r = parse_command_line(spec, argc, argv, &operands, &err);
  if (r == ParseOutcome::Ok && finish) r = finish(operands, &err);
  return exit_code_of(r, spec, err);
}

}  // namespace dt
