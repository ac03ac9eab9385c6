// test_options.cpp - the table-driven parser (cli/options.h) and the subcommands' parsers
// built on it: values, operands, errors worded one way, --help written from the table.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agent_args.h"
#include "cli/cli.h"
#include "cli/option_values.h"
#include "cli/options.h"
#include "common/program_name.h"
#include "rules/config_file.h"

namespace {

struct Parsed {
  std::string name;
  uint64_t count = 5;
  bool on = false;
};

dt::CommandSpec demo_command(Parsed *p) {
  return dt::CommandSpec("demo", "Usage: demo [options] [WORD]\n\n",
                         {
                             {"name", 'n', "NAME", "who\nsecond line", dt::store(&p->name)},
                             {"count", 0, "N", "how many (1 to 9)", dt::count_into(&p->count, 1, 9)},
                             {"on", 0, nullptr, "a switch", dt::turn_on(&p->on)},
                         },
                         1);
}

// parse_command_line on argv "demo ARGS...".
dt::ParseOutcome parse(std::vector<std::string> args, Parsed *p, std::vector<std::string> *operands, std::string *err) {
  dt::ArgvList a;
  a.push("demo");
  for (auto &x : args) a.push(x);
  return dt::parse_command_line(demo_command(p), a.argc(), a.argv(), operands, err);
}

TEST(Options, ValuesSwitchesAndOperands) {
  Parsed p;
  std::vector<std::string> ops;
  std::string err;
  ASSERT_EQ(parse({"word", "-n", "x", "--count=3", "--on"}, &p, &ops, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_EQ(p.name, "x");
  EXPECT_EQ(p.count, 3u);
  EXPECT_TRUE(p.on);
  EXPECT_EQ(ops, std::vector<std::string>{"word"}) << "an operand before the options is still an operand";
}

TEST(Options, ErrorsNameTheOptionOrArgument) {
  struct Case {
    std::vector<std::string> args;
    const char *expect;
  } cases[] = {
      {{"--count", "0"}, "--count: invalid value '0'"},
      {{"--bogus"}, "unknown option --bogus"},
      {{"--name"}, "option --name needs a value"},
      {{"a", "b"}, "unexpected argument 'b'"},
  };
  for (auto &c : cases) {
    Parsed p;
    std::vector<std::string> ops;
    std::string err;
    EXPECT_EQ(parse(c.args, &p, &ops, &err), dt::ParseOutcome::Error) << c.expect;
    EXPECT_EQ(err.rfind(c.expect, 0), 0u) << "got: " << err;
  }
}

TEST(Options, HelpIsWrittenFromTheTable) {
  Parsed p;
  std::vector<std::string> ops;
  std::string err;
  EXPECT_EQ(parse({"--count", "3", "--help", "--bogus"}, &p, &ops, &err), dt::ParseOutcome::Help);
  const std::string help = dt::command_help(demo_command(&p));
  EXPECT_EQ(help,
            "Usage: demo [options] [WORD]\n\n"
            "Options:\n"
            "  -n, --name NAME   who\n"
            "                    second line\n"
            "      --count N     how many (1 to 9)\n"
            "      --on          a switch\n"
            "  -h, --help        show this help\n");
}

TEST(Options, IdsMatchTheGetoptTable) {
  Parsed p;
  const dt::CommandSpec spec = demo_command(&p);
  const std::vector<option> table = dt::getopt_options(spec.options);
  ASSERT_EQ(table.size(), 5u) << "three options, --help, the zero entry";
  EXPECT_EQ(dt::option_id(spec.options, "name"), 'n');
  EXPECT_EQ(table[1].val, dt::option_id(spec.options, "count"));
  EXPECT_EQ(table[2].has_arg, no_argument);
  EXPECT_EQ(dt::option_id(spec.options, "help"), 'h');
  EXPECT_EQ(dt::option_id(spec.options, "nothing"), 0);
}

// The subcommands: exit code -1 (go on), 0 (help) or 2 (error) from their parse.
template <class Options, class Parse>
int subcommand(Parse parse, std::vector<std::string> args, Options *o) {
  return dt::test::run_captured([&](int argc, char **argv) { return parse(argc, argv, o); }, args, nullptr);
}

TEST(Options, ReloadTakesOnlyItsOwnOptions) {
  dt::ReloadOptions o;
  EXPECT_EQ(subcommand(dt::parse_reload_command, {"reload", "--pin-dir", "/x", "--json"}, &o), 2)
      << "--json is stats' option, not reload's";
  dt::ReloadOptions by_iface;
  EXPECT_EQ(subcommand(dt::parse_reload_command, {"reload", "-i", "eth0"}, &by_iface), -1);
  EXPECT_EQ(by_iface.pin_dir, "/sys/fs/bpf/dthrottle/eth0");
}

TEST(Options, KeygenNameAndItsOptions) {
  dt::KeygenOptions o;
  ASSERT_EQ(subcommand(dt::parse_keygen_command, {"keygen", "--dir", "/k", "h1", "--endpoint", "198.18.1.2:7700"}, &o),
            -1);
  EXPECT_EQ(o.name, "h1");
  EXPECT_EQ(o.dir, "/k");
  EXPECT_EQ(o.endpoint, "tcp://198.18.1.2:7700");
  dt::KeygenOptions bad;
  EXPECT_EQ(subcommand(dt::parse_keygen_command, {"keygen", "a/b"}, &bad), 2);
  EXPECT_EQ(subcommand(dt::parse_keygen_command, {"keygen"}, &bad), 2);
  EXPECT_EQ(subcommand(dt::parse_keygen_command, {"keygen", "a", "b"}, &bad), 2);
  EXPECT_EQ(subcommand(dt::parse_keygen_command, {"keygen", "a", "--endpoint", "nope"}, &bad), 2);
  EXPECT_EQ(subcommand(dt::parse_keygen_command, {"keygen", "a", "--role", "relay"}, &bad), 2);
  dt::KeygenOptions hub;
  ASSERT_EQ(subcommand(dt::parse_keygen_command, {"keygen", "hub", "--role", "hub", "--node-id", "hub-1"}, &hub), -1);
  EXPECT_EQ(hub.role, "hub");
  EXPECT_EQ(hub.node_id, "hub-1");
  EXPECT_EQ(hub.dir, "") << "no --dir: cmd_keygen picks --from's directory or the current one";
  EXPECT_EQ(subcommand(dt::parse_keygen_command, {"keygen", "--help"}, &bad), 0);
}

TEST(Options, ExplainNeedsAnAddress) {
  dt::ExplainOptions o;
  EXPECT_EQ(subcommand(dt::parse_explain_command, {"explain", "-i", "eth0"}, &o), 2);
  ASSERT_EQ(subcommand(dt::parse_explain_command, {"explain", "-i", "eth0", "198.18.0.1", "--watch", "0"}, &o), -1);
  EXPECT_EQ(o.address, "198.18.0.1");
  EXPECT_EQ(o.watch_ns, 0u);
}

// The stats error with the program invoked as argv0.
std::string stats_error_as(const char *argv0) {
  dt::set_program_name(argv0);
  dt::StatsOptions o;
  dt::ArgvList a;
  for (const char *x : {"stats", "-i", "eth0", "stray"}) a.push(x);
  testing::internal::CaptureStderr();
  EXPECT_EQ(dt::parse_stats_command(a.argc(), a.argv(), &o), 2);
  std::string err = testing::internal::GetCapturedStderr();
  dt::set_program_name("dthrottle-agent");  // the default, for the other tests
  return err;
}

TEST(Options, ErrorStyleIsOneForEveryCommand) {
  EXPECT_EQ(stats_error_as("build/agent"), "agent stats: unexpected argument 'stray'\nTry 'agent stats --help'.\n");
}

// Installed, the messages and --help name dthrottle-agent: the advice can be pasted back.
TEST(Options, MessagesNameTheProgramAsInvoked) {
  EXPECT_EQ(stats_error_as("/usr/sbin/dthrottle-agent"),
            "dthrottle-agent stats: unexpected argument 'stray'\nTry 'dthrottle-agent stats --help'.\n");
  dt::set_program_name("/usr/sbin/dthrottle-agent");
  const std::string help = dt::run_usage();
  dt::set_program_name("dthrottle-agent");
  EXPECT_EQ(help.rfind("Usage: dthrottle-agent --iface IFACE", 0), 0u) << help;
  EXPECT_EQ(help.find("%prog"), std::string::npos) << "a placeholder left in --help:\n" << help;
  EXPECT_EQ(help.find(" agent stats"), std::string::npos) << "--help still names 'agent':\n" << help;
  EXPECT_EQ(dt::with_program_name("%prog keygen; %prog hub"), "dthrottle-agent keygen; dthrottle-agent hub");
}

}  // namespace
