// test_config_file.cpp - `--config FILE`: the format, line-precise errors, and how the
// file and the command line combine in parse_run_options.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "agent_args.h"
#include "cli/cli.h"
#include "rules/config_file.h"
#include "temp_dir.h"

namespace {

// A small option table in the shape of the agent's.
const option kOpts[] = {{"config", required_argument, nullptr, 'c'}, {"rate", required_argument, nullptr, 'r'},
                        {"burst", required_argument, nullptr, 'b'},  {"pin-dir", required_argument, nullptr, 1000},
                        {"keep", no_argument, nullptr, 1001},        {"peers", required_argument, nullptr, 'p'},
                        {"help", no_argument, nullptr, 'h'},         {nullptr, 0, nullptr, 0}};
const std::vector<std::string> kLists = {"peers"};

std::vector<std::string> args_of(const std::vector<dt::ConfigSetting> &s) {
  std::vector<std::string> out;
  for (const auto &x : s) out.push_back(x.arg);
  return out;
}

// parse_config_text on `text`; the error (or "") in *err.
std::vector<dt::ConfigSetting> parse(const std::string &text, std::string *err) {
  std::vector<dt::ConfigSetting> out;
  err->clear();
  if (!dt::parse_config_text(text, "/etc/dthrottle/eth0.conf", kOpts, kLists, &out, err)) out.clear();
  return out;
}

TEST(ConfigFile, SettingsBecomeFlags) {
  std::string err;
  auto s = parse(
      "# dthrottle\n"
      "\n"
      "  rate=100   # per source\r\n"
      "burst  =  50\n"
      "pin-dir = /sys/fs/bpf/a#b\n"
      "peers = 198.18.1.2:7700 , 198.18.1.3:7700\n"
      "peers = 198.18.1.4:7700\n"
      "keep\n",
      &err);
  ASSERT_EQ(err, "");
  EXPECT_EQ(args_of(s),
            (std::vector<std::string>{"--rate=100", "--burst=50", "--pin-dir=/sys/fs/bpf/a#b",
                                      "--peers=198.18.1.2:7700,198.18.1.3:7700", "--peers=198.18.1.4:7700", "--keep"}));
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0].line, 3);
  EXPECT_EQ(s[0].opt, 'r');
  EXPECT_EQ(s[5].line, 8);
  EXPECT_EQ(s[5].opt, 1001);
}

TEST(ConfigFile, SwitchValues) {
  std::string err;
  for (const char *on : {"keep = true", "keep = yes", "keep = on", "keep = 1", "keep"})
    EXPECT_EQ(args_of(parse(on, &err)), std::vector<std::string>{"--keep"}) << on << ": " << err;
  for (const char *off : {"keep = false", "keep = no", "keep = off", "keep = 0"})
    EXPECT_TRUE(parse(off, &err).empty() && err.empty()) << off << ": " << err;
}

// A config file's text and (a piece of) the error it must give.
struct TextAndError {
  const char *text, *expect;
};

TEST(ConfigFile, ErrorsNameFileAndLine) {
  const TextAndError cases[] = {
      {"rate = 1\n\n# x\n\n\n\nrat = 100\n",
       "/etc/dthrottle/eth0.conf:7: unknown setting 'rat' (did you mean 'rate'?)"},
      {"pin_dir = /x\n", "/etc/dthrottle/eth0.conf:1: unknown setting 'pin_dir' (did you mean 'pin-dir'?)"},
      {"colour = red\n",
       "/etc/dthrottle/eth0.conf:1: unknown setting 'colour' (see dthrottle-agent --help for the settings)"},
      {"--rate = 1\n", ":1: unknown setting '--rate' (write settings without the dashes: 'rate')"},
      {"help\n", ":1: unknown setting 'help'"},
      {"config = /etc/other.conf\n", ":1: 'config' cannot be set in a config file"},
      {"rate = 1\nburst = 2\nrate = 3\n", ":3: 'rate' is already set on line 1"},
      {"rate\n", ":1: 'rate' needs a value: rate = VALUE"},
      {"rate =   # later\n", ":1: 'rate' has no value"},
      {"= 5\n", ":1: expected 'setting = value'"},
      {"keep = maybe\n", ":1: 'keep' is a switch: expected true or false, not 'maybe'"},
      {"keep\nkeep = false\n", ":2: 'keep' is already set on line 1"},
  };
  for (const auto &c : cases) {
    std::string err;
    EXPECT_TRUE(parse(c.text, &err).empty()) << c.text;
    EXPECT_NE(err.find(c.expect), std::string::npos) << "text: " << c.text << "\ngot: " << err;
  }
}

TEST(ConfigFile, MissingFileIsReported) {
  std::vector<dt::ConfigSetting> out;
  std::string err;
  EXPECT_FALSE(dt::load_config_file("/nonexistent/dthrottle.conf", kOpts, kLists, &out, &err));
  EXPECT_EQ(err, "cannot open config file /nonexistent/dthrottle.conf: No such file or directory");
}

// --- through parse_run_options: one parser for the file and the command line ---------

// A config file in a private temporary directory, removed with the object.
class ConfigFileTest : public dt::test::TempDirTest {
 protected:
  void write(const std::string &text) { ASSERT_TRUE(tmp_.write("eth0.conf", text)) << "cannot write " << path_; }
  // parse_run_options on "agent --config PATH" followed by `extra`.
  dt::ParseOutcome run(std::vector<std::string> extra, dt::RunOptions *o, std::string *err) {
    extra.insert(extra.begin(), {"--config", path_});
    return dt::test::parse_agent_args(extra, o, err);
  }
  const std::string path_ = tmp_.file("eth0.conf");
};

TEST_F(ConfigFileTest, AttachTcFromTheFile) {
  write("iface = eth0\nrate = 10\nburst = 5\nattach = tc\n");
  dt::RunOptions o;
  std::string err;
  ASSERT_EQ(run({}, &o, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_EQ(o.hook, dt::AttachHook::Tc);
  // The command line overrides the file, as for every setting.
  dt::RunOptions x;
  ASSERT_EQ(run({"--attach", "xdp"}, &x, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_EQ(x.hook, dt::AttachHook::Xdp);
}

TEST_F(ConfigFileTest, FileAloneConfiguresTheAgent) {
  write(
      "iface = eth0\nrate = 10/m\nburst = 3\nxdp-mode = generic\nmax-sources = 4096\nkeep = yes\n"
      "stats-interval = 500ms\nlog-level = warn\npeers = 198.18.1.2:7700, 198.18.1.3:7700\nperiod = 1s\n"
      "node-id = edge-1\nreport-max-age = 2s\ninsecure-cluster = true\n");
  dt::RunOptions o;
  std::string err;
  ASSERT_EQ(run({}, &o, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_EQ(o.iface, "eth0");
  EXPECT_DOUBLE_EQ(o.rate, 10.0 / 60);
  EXPECT_EQ(o.burst, 3u);
  EXPECT_EQ(o.mode, dt::XdpMode::Generic);
  EXPECT_EQ(o.max_sources, 4096u);
  EXPECT_TRUE(o.keep);
  EXPECT_EQ(o.stats_interval_ns, 500000000u);
  EXPECT_EQ(o.log_level, dt::LogLevel::Warn);
  EXPECT_EQ(o.peers, (std::vector<std::string>{"tcp://198.18.1.2:7700", "tcp://198.18.1.3:7700"}));
  EXPECT_EQ(o.listen, "tcp://*:7700");
  EXPECT_EQ(o.period_ns, 1000000000u);
  EXPECT_EQ(o.node_id, "edge-1");
  EXPECT_EQ(o.report_max_age_ns, 2000000000u);
  EXPECT_TRUE(o.insecure_cluster);
  EXPECT_EQ(o.pin_dir, "/sys/fs/bpf/dthrottle/eth0");
}

TEST_F(ConfigFileTest, CommandLineOverridesTheFile) {
  write("rate = 100\nburst = 50\npeers = 198.18.1.2:7700\npeers = 198.18.1.3:7700\nperiod = 1s\ninsecure-cluster\n");
  dt::RunOptions o;
  std::string err;
  // The flags may come before or after --config: the command line wins either way.
  ASSERT_EQ(run({"--iface", "eth1", "-r", "7", "--peers", "198.18.1.9:7700"}, &o, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_EQ(o.iface, "eth1");
  EXPECT_DOUBLE_EQ(o.rate, 7.0);
  EXPECT_EQ(o.burst, 50u) << "not on the command line: from the file";
  EXPECT_EQ(o.peers, std::vector<std::string>{"tcp://198.18.1.9:7700"}) << "--peers replaces the file's list";
  EXPECT_EQ(o.period_ns, 1000000000u);

  dt::ArgvList a;
  for (const char *x : {"agent", "--rate=3", "--config", path_.c_str(), "--iface=eth2"}) a.push(x);
  dt::RunOptions o2;
  ASSERT_EQ(dt::parse_run_options(a.argc(), a.argv(), &o2, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_DOUBLE_EQ(o2.rate, 3.0);
  EXPECT_EQ(o2.iface, "eth2");
}

TEST_F(ConfigFileTest, BadValuesAreReportedWithTheirLine) {
  const TextAndError cases[] = {
      {"rate = 100\nburst = 0\n", ":2: burst: invalid value '0'"},
      {"# rate\n\nrate = fast\nburst = 1\n", ":3: rate: invalid rate 'fast'"},
      {"rate = 1\nburst = 1\nxdp-mode = turbo\n", ":3: xdp-mode: 'turbo' is not one of auto, native, generic"},
      {"rate = 1\nburst = 1\npeers = 198.18.1.2:7700, 198.18.1.3\n", ":3: peers: '198.18.1.3': expected HOST:PORT"},
      {"rate = 1\nburst = 1\npin-dir = relative\n", ":3: pin-dir: 'relative' must be an absolute path"},
      {"rate = 1\nburst = 1\nperiod = 1ms\n", ":3: period: '1ms' must be from 10ms to 60s"},
      {"rate = 1\nburst = 1\nreport-max-age = 2h\n", ":3: report-max-age: '2h' must be at most 1h (or off)"},
      {"rate = 1\nburst = 1\nreport-max-age = soon\n", ":3: report-max-age: "},
      {"rate = 1\nburst = 1\nbrust = 2\n", ":3: unknown setting 'brust' (did you mean 'burst'?)"},
  };
  for (const auto &c : cases) {
    write(c.text);
    dt::RunOptions o;
    std::string err;
    EXPECT_EQ(run({"--iface", "eth0"}, &o, &err), dt::ParseOutcome::Error) << c.text;
    EXPECT_EQ(err.rfind(path_, 0), 0u) << "the error starts with the file name: " << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << "text: " << c.text << "\ngot: " << err;
  }
}

TEST_F(ConfigFileTest, OverriddenLinesAreCheckedToo) {
  // The command line replaces `rate`, but the file would not work without it: say so.
  write("rate = fast\nburst = 1\n");
  dt::RunOptions o;
  std::string err;
  EXPECT_EQ(run({"--iface", "eth0", "--rate", "5"}, &o, &err), dt::ParseOutcome::Error);
  EXPECT_NE(err.find(":1: rate: invalid rate 'fast'"), std::string::npos) << err;
}

TEST_F(ConfigFileTest, ChecksOfTheWholeSetSeeBothSources) {
  write("rate = 1\nburst = 1\ncurve-key = /etc/dthrottle/edge1.key\n");
  dt::RunOptions o;
  std::string err;
  EXPECT_EQ(run({"--iface", "eth0"}, &o, &err), dt::ParseOutcome::Error);
  EXPECT_NE(err.find("--curve-key only makes sense with --peers"), std::string::npos) << err;
  dt::RunOptions o2;
  EXPECT_EQ(run({"--iface", "eth0", "--peers", "198.18.1.2:7700"}, &o2, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_EQ(o2.curve_key, "/etc/dthrottle/edge1.key");

  write("rate = 1\n");
  dt::RunOptions o3;
  EXPECT_EQ(run({"--iface", "eth0"}, &o3, &err), dt::ParseOutcome::Error);
  EXPECT_EQ(err, "--burst is required (or --rules FILE)");
}

TEST_F(ConfigFileTest, CommandLineErrorsStayCommandLineErrors) {
  write("rate = 1\nburst = 1\n");
  dt::RunOptions o;
  std::string err;
  EXPECT_EQ(run({"--iface", "eth0", "--burst", "0"}, &o, &err), dt::ParseOutcome::Error);
  EXPECT_EQ(err.rfind("--burst: invalid value '0'", 0), 0u) << err;
  EXPECT_EQ(run({"--iface", "eth0", "stray"}, &o, &err), dt::ParseOutcome::Error);
  EXPECT_EQ(err, "unexpected argument 'stray'");
}

TEST_F(ConfigFileTest, MissingFileAndHelp) {
  dt::RunOptions o;
  std::string err;
  EXPECT_EQ(run({"--iface", "eth0"}, &o, &err), dt::ParseOutcome::Error);
  EXPECT_NE(err.find("cannot open config file " + path_), std::string::npos) << err;
  EXPECT_EQ(run({"--help"}, &o, &err), dt::ParseOutcome::Help) << "--help works even if the file does not";
  dt::ArgvList a;
  for (const char *x : {"agent", "--config=", "--iface", "eth0", "--rate", "1", "--burst", "1"}) a.push(x);
  EXPECT_EQ(dt::parse_run_options(a.argc(), a.argv(), &o, &err), dt::ParseOutcome::Error);
  EXPECT_EQ(err, "--config: needs a file name");
  EXPECT_NE(std::string(dt::run_usage()).find("--config FILE"), std::string::npos);
}

TEST_F(ConfigFileTest, EveryDocumentedFlagIsASetting) {
  // Every flag of the options part of --help, as a line of a file, is known by name
  // (its dummy value may well be refused; that error names the line, not the setting).
  const std::string help = dt::run_usage();
  const size_t from = help.find("Options:"), to = help.find("Examples:");
  ASSERT_NE(from, std::string::npos);
  int flags = 0;
  for (size_t at = help.find("--", from); at < to; at = help.find("--", at + 2)) {
    size_t end = help.find_first_not_of("abcdefghijklmnopqrstuvwxyz-", at + 2);
    const std::string name = help.substr(at + 2, end - at - 2);
    if (name == "help" || name == "config") continue;
    write(name + " = x\n");
    dt::RunOptions o;
    std::string err;
    run({"--iface", "eth0", "--rate", "1", "--burst", "1"}, &o, &err);
    EXPECT_EQ(err.find("unknown setting"), std::string::npos) << name << ": " << err;
    flags++;
  }
  EXPECT_GE(flags, 16) << "the options part of --help was not found";
}

}  // namespace
