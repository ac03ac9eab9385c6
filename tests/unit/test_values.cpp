// test_values.cpp - command-line value parsing and policy validation.
#include <gtest/gtest.h>

#include "agent_args.h"
#include "cli/cli.h"
#include "cluster/cluster.h"
#include "common/endpoint.h"
#include "common/parse_values.h"
#include "dataplane/policy.h"

namespace {

TEST(ParseRate, AcceptsIntegersFractionsAndUnits) {
  const struct {
    const char *text;
    double per_second;
  } cases[] = {{"100", 100}, {"0.1666", 0.1666}, {"10/m", 10.0 / 60}, {"3600/h", 1}, {"5/s", 5}};
  for (const auto &c : cases) {
    double r = 0;
    std::string err;
    ASSERT_TRUE(dt::parse_rate(c.text, &r, &err)) << c.text << ": " << err;
    EXPECT_DOUBLE_EQ(r, c.per_second) << c.text;
  }
}

TEST(ParseRate, RejectsGarbageWithTheValueInTheMessage) {
  double r = 0;
  for (const char *bad : {"", "-1", "0", "abc", "1e3", "nan", "inf", "10/x", "1..2", " 5", "0x10"}) {
    std::string err;
    EXPECT_FALSE(dt::parse_rate(bad, &r, &err)) << "accepted '" << bad << "'";
    EXPECT_NE(err.find(std::string("'") + bad + "'"), std::string::npos) << err;
  }
}

TEST(ParseDuration, Units) {
  const struct {
    const char *text;
    uint64_t ns;
  } cases[] = {{"200ms", 200000000u}, {"1.5s", 1500000000u}, {"2", 2000000000u},
               {"2m", 120000000000u}, {"500us", 500000u},    {"1h", 3600000000000u}};
  uint64_t ns = 0;
  std::string err;
  for (const auto &c : cases) {
    ASSERT_TRUE(dt::parse_duration(c.text, &ns, &err)) << c.text << ": " << err;
    EXPECT_EQ(ns, c.ns) << c.text;
  }
  for (const char *bad : {"", "ms", "0", "0s", "-1s", "1d", "1 s", "abc", "1e9"}) {
    EXPECT_FALSE(dt::parse_duration(bad, &ns, &err)) << "accepted '" << bad << "'";
  }
}

TEST(ParseCount, Bounds) {
  uint64_t v = 0;
  std::string err;
  EXPECT_TRUE(dt::parse_count("50", 1, 100, &v, &err));
  EXPECT_EQ(v, 50u);
  EXPECT_FALSE(dt::parse_count("0", 1, 100, &v, &err));
  EXPECT_NE(err.find("from 1 to 100"), std::string::npos) << err;
  EXPECT_FALSE(dt::parse_count("101", 1, 100, &v, &err));
  EXPECT_FALSE(dt::parse_count("-5", 1, 100, &v, &err));
  EXPECT_FALSE(dt::parse_count("99999999999999999999999", 1, UINT64_MAX, &v, &err));
}

TEST(Policy, IntervalAndBurstInNanoseconds) {
  dt_policy p{};
  std::string err;
  ASSERT_TRUE(dt::make_policy(100, 50, &p, &err)) << err;
  EXPECT_EQ(p.interval_ns, 10000000u);
  EXPECT_EQ(p.burst_ns, 500000000u);
  EXPECT_DOUBLE_EQ(dt::policy_rate(p), 100);
  EXPECT_EQ(dt::policy_burst(p), 50u);
  ASSERT_TRUE(dt::make_policy(3, 1, &p, &err)) << err;
  EXPECT_EQ(p.interval_ns, 333333333u) << "rounded to the nearest ns";
}

TEST(Policy, RejectsOutOfRangeWithReason) {
  dt_policy p{};
  std::string err;
  EXPECT_FALSE(dt::make_policy(0, 10, &p, &err));
  EXPECT_FALSE(dt::make_policy(2e6, 10, &p, &err));
  EXPECT_FALSE(dt::make_policy(1, 0, &p, &err));
  EXPECT_FALSE(dt::make_policy(0.000001, 1000000, &p, &err));
  EXPECT_NE(err.find("146 years"), std::string::npos) << err;
}

struct Argv {
  std::vector<std::string> s;
  std::vector<char *> p;
  explicit Argv(std::initializer_list<const char *> a) {
    for (auto x : a) s.emplace_back(x);
    for (auto &x : s) p.push_back(x.data());
    p.push_back(nullptr);
  }
  explicit Argv(const std::vector<std::string> &a) : s(a) {
    for (auto &x : s) p.push_back(x.data());
    p.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(s.size()); }
  char **argv() { return p.data(); }
};

// A command line parse_run_options must refuse, and a piece of the message it must give.
struct RunOptionsErrorCase {
  std::initializer_list<const char *> args;
  const char *expect;
};

template <size_t N>
void expect_run_options_errors(const RunOptionsErrorCase (&cases)[N]) {
  for (auto &c : cases) {
    Argv a(c.args);
    dt::RunOptions o;
    std::string err;
    EXPECT_EQ(dt::parse_run_options(a.argc(), a.argv(), &o, &err), dt::ParseOutcome::Error) << c.expect;
    EXPECT_NE(err.find(c.expect), std::string::npos) << "got: " << err;
  }
}

TEST(Cli, RunOptionsDefaultsAndFlags) {
  Argv a{"agent",      "--iface", "eth0",          "--rate", "0.1666", "--burst",          "3",
         "--xdp-mode", "generic", "--max-sources", "2048",   "--keep", "--stats-interval", "500ms"};
  dt::RunOptions o;
  std::string err;
  ASSERT_EQ(dt::parse_run_options(a.argc(), a.argv(), &o, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_EQ(o.iface, "eth0");
  EXPECT_DOUBLE_EQ(o.rate, 0.1666);
  EXPECT_EQ(o.burst, 3u);
  EXPECT_EQ(o.mode, dt::XdpMode::Generic);
  EXPECT_EQ(o.max_sources, 2048u);
  EXPECT_TRUE(o.keep);
  EXPECT_EQ(o.stats_interval_ns, 500000000u);
  EXPECT_EQ(o.pin_dir, "/sys/fs/bpf/dthrottle/eth0");
  EXPECT_EQ(o.hook, dt::AttachHook::Xdp) << "XDP unless --attach tc";
}

TEST(Cli, AttachTc) {
  Argv a{"agent", "--iface", "eth0", "--rate", "10", "--burst", "5", "--attach", "tc"};
  dt::RunOptions o;
  std::string err;
  ASSERT_EQ(dt::parse_run_options(a.argc(), a.argv(), &o, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_EQ(o.hook, dt::AttachHook::Tc);
  EXPECT_STREQ(dt::attach_hook_name(o.hook), "tc");
  Argv x{"agent", "--iface", "eth0", "--rate", "10", "--burst", "5", "--attach", "xdp", "--xdp-mode", "native"};
  dt::RunOptions ox;
  ASSERT_EQ(dt::parse_run_options(x.argc(), x.argv(), &ox, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_EQ(ox.hook, dt::AttachHook::Xdp);
  EXPECT_EQ(ox.mode, dt::XdpMode::Native);
  Argv m{"agent", "--iface", "eth0", "--rate", "10", "--burst", "5", "--attach", "xdp-multi"};
  dt::RunOptions om;
  ASSERT_EQ(dt::parse_run_options(m.argc(), m.argv(), &om, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_EQ(om.hook, dt::AttachHook::XdpMulti);
  EXPECT_STREQ(dt::attach_hook_name(om.hook), "xdp-multi");
}

TEST(Cli, RunOptionsErrorsNameTheFlag) {
  const RunOptionsErrorCase cases[] = {
      {{"agent", "--rate", "1", "--burst", "1"}, "--iface is required"},
      {{"agent", "--iface", "x", "--burst", "1"}, "--rate is required"},
      {{"agent", "--iface", "x", "--rate", "1"}, "--burst is required"},
      {{"agent", "--iface", "x", "--rate", "-1", "--burst", "1"}, "--rate: invalid rate '-1'"},
      {{"agent", "--iface", "x", "--rate", "1", "--burst", "0"}, "--burst: invalid value '0'"},
      {{"agent", "--iface", "x", "--rate", "1", "--burst", "1", "--xdp-mode", "fast"}, "--xdp-mode"},
      {{"agent", "--iface", "x", "--rate", "1", "--burst", "1", "--attach", "tcx"},
       "--attach: 'tcx' is not one of xdp, xdp-multi, tc"},
      {{"agent", "--iface", "x", "--rate", "1", "--burst", "1", "--attach", "tc", "--xdp-mode", "generic"},
       "--xdp-mode is for --attach xdp"},
      {{"agent", "--iface", "x", "--rate", "1", "--burst", "1", "--attach", "xdp-multi", "--xdp-mode", "native"},
       "--attach xdp-multi is native mode only"},
      {{"agent", "--iface", "x", "--rate", "1", "--burst", "1", "--stats-interval", "soon"},
       "--stats-interval: invalid duration 'soon'"},
      {{"agent", "--iface", "x", "--rate", "1", "--burst", "1", "--pin-dir", "rel"}, "absolute"},
      {{"agent", "--iface", "x", "--rate", "1", "--burst", "1", "--bogus"}, "unknown option --bogus"},
      {{"agent", "--iface"}, "needs a value"},
  };
  expect_run_options_errors(cases);
}

TEST(Cli, HelpDocumentsEveryFlag) {
  const std::string help = dt::run_usage();
  for (const char *flag : {"--iface", "--rate", "--burst", "--pin-dir", "--xdp-mode", "--attach", "--max-sources",
                           "--keep", "--stats-interval", "--log-level", "--help"})
    EXPECT_NE(help.find(flag), std::string::npos) << flag << " missing from --help";
}

}  // namespace

namespace {

TEST(Cli, ClusterFlags) {
  Argv a{"agent",
         "-i",
         "eth0",
         "-r",
         "100",
         "-b",
         "50",
         "--peers",
         "198.18.1.2:7700,tcp://198.18.1.3:7700",
         "-p",
         "[2001:2::3]:7700",
         "--period",
         "200ms",
         "--node-id",
         "edge-1",
         "--insecure-cluster"};
  dt::RunOptions o;
  std::string err;
  ASSERT_EQ(dt::parse_run_options(a.argc(), a.argv(), &o, &err), dt::ParseOutcome::Ok) << err;
  ASSERT_EQ(o.peers.size(), 3u);
  EXPECT_EQ(o.peers[0], "tcp://198.18.1.2:7700");
  EXPECT_EQ(o.peers[1], "tcp://198.18.1.3:7700");
  EXPECT_EQ(o.peers[2], "tcp://[2001:2::3]:7700");
  EXPECT_EQ(o.listen, "tcp://*:7700") << "default listen port with --peers";
  EXPECT_EQ(o.period_ns, 200000000u);
  EXPECT_EQ(o.node_id, "edge-1");
  EXPECT_TRUE(o.cluster());
  EXPECT_TRUE(o.insecure_cluster);
}

TEST(Cli, ClusterFlagErrors) {
  const RunOptionsErrorCase cases[] = {
      {{"agent", "-i", "x", "-r", "1", "-b", "1", "--peers", "198.18.1.2"},
       "--peers: '198.18.1.2': expected HOST:PORT"},
      {{"agent", "-i", "x", "-r", "1", "-b", "1", "--peers", ":7700"}, "needs a host"},
      {{"agent", "-i", "x", "-r", "1", "-b", "1", "--peers", "udp://h:1"}, "only tcp://"},
      {{"agent", "-i", "x", "-r", "1", "-b", "1", "--listen", "h:99999"}, "--listen"},
      {{"agent", "-i", "x", "-r", "1", "-b", "1", "--period", "1ms"}, "from 10ms to 60s"},
      {{"agent", "-i", "x", "-r", "1", "-b", "1", "--node-id", "a b"}, "--node-id"},
      {{"agent", "-i", "x", "-r", "1", "-b", "1", "--curve-key", "k"}, "--curve-key only makes sense"},
      {{"agent", "-i", "x", "-r", "1", "-b", "1", "--peers", "h:1", "--curve-peers", "d"},
       "--curve-peers needs --curve-key"},
  };
  expect_run_options_errors(cases);
}

// Secure is the default: every way into a cluster (mesh, peers file, listen only, hub, and
// `agent hub` itself) without --curve-key is refused, naming both ways out; with
// --insecure-cluster it runs; the flag is refused where it means nothing or contradicts.
TEST(Cli, KeylessClusterNeedsInsecureClusterByName) {
  const char *kWhy = "a cluster without keys lets anyone on the network forge, read or silence reports";
  for (const char *flag : {"--peers", "--peers-file", "--listen", "--hub"}) {
    const char *value = std::string(flag) == "--peers-file" ? "/etc/dthrottle/peers" : "198.18.1.2:7700";
    Argv keyless{"agent", "-i", "x", "-r", "1", "-b", "1", flag, value};
    dt::RunOptions o;
    std::string err;
    EXPECT_EQ(dt::parse_run_options(keyless.argc(), keyless.argv(), &o, &err), dt::ParseOutcome::Error) << flag;
    EXPECT_NE(err.find(kWhy), std::string::npos) << flag << ": " << err;
    EXPECT_NE(err.find("--curve-key FILE --curve-peers DIR"), std::string::npos) << err;
    EXPECT_NE(err.find("agent keygen NAME"), std::string::npos) << err;
    EXPECT_NE(err.find("--insecure-cluster"), std::string::npos) << err;
    Argv insecure{"agent", "-i", "x", "-r", "1", "-b", "1", flag, value, "--insecure-cluster"};
    dt::RunOptions o2;
    EXPECT_EQ(dt::parse_run_options(insecure.argc(), insecure.argv(), &o2, &err), dt::ParseOutcome::Ok) << err;
    EXPECT_TRUE(o2.insecure_cluster);
    Argv keyed{"agent", "-i", "x", "-r", "1", "-b", "1", flag, value, "--curve-key", "k", "--curve-peers", "d"};
    dt::RunOptions o3;
    EXPECT_EQ(dt::parse_run_options(keyed.argc(), keyed.argv(), &o3, &err), dt::ParseOutcome::Ok) << err;
    EXPECT_FALSE(o3.insecure_cluster);
  }
  const RunOptionsErrorCase refused[] = {
      {{"agent", "-i", "x", "-r", "1", "-b", "1", "--insecure-cluster"}, "--insecure-cluster only makes sense with"},
      {{"agent", "-i", "x", "-r", "1", "-b", "1", "--peers", "h:1", "--curve-key", "k", "--insecure-cluster"},
       "--insecure-cluster and --curve-key contradict each other"},
  };
  expect_run_options_errors(refused);
  EXPECT_NE(std::string(dt::run_usage()).find("--insecure-cluster"), std::string::npos);
}

// `agent hub`'s parse: its exit code (-1: go on) and what it printed on stderr.
int parse_hub(std::vector<std::string> args, dt::HubOptions *o, std::string *err) {
  return dt::test::run_captured([o](int argc, char **argv) { return dt::parse_hub_command(argc, argv, o); }, args, err);
}

TEST(Cli, KeylessHubNeedsInsecureClusterByName) {
  std::string err;
  dt::HubOptions o;
  EXPECT_EQ(parse_hub({"hub", "--listen", "198.18.1.1:7701"}, &o, &err), 2);
  EXPECT_NE(err.find("a cluster without keys lets anyone on the network forge, read or silence reports"),
            std::string::npos)
      << err;
  dt::HubOptions o2;
  EXPECT_EQ(parse_hub({"hub", "--insecure-cluster"}, &o2, &err), -1) << err;
  EXPECT_TRUE(o2.insecure_cluster);
  dt::HubOptions o3;
  EXPECT_EQ(parse_hub({"hub", "--curve-key", "hub.key", "--curve-peers", "agents"}, &o3, &err), -1) << err;
  dt::HubOptions o4;
  EXPECT_EQ(parse_hub({"hub", "--curve-key", "hub.key", "--curve-peers", "agents", "--insecure-cluster"}, &o4, &err),
            2);
  EXPECT_NE(err.find("contradict"), std::string::npos) << err;
  dt::HubOptions help;
  testing::internal::CaptureStdout();
  Argv h{"hub", "--help"};
  EXPECT_EQ(dt::parse_hub_command(h.argc(), h.argv(), &help), 0);
  EXPECT_NE(testing::internal::GetCapturedStdout().find("--insecure-cluster"), std::string::npos);
}

TEST(Cli, ListenAcceptsBarePortAndAnyAddress) {
  std::string ep, err;
  ASSERT_TRUE(dt::normalize_endpoint("7700", true, &ep, &err)) << err;
  EXPECT_EQ(ep, "tcp://*:7700");
  ASSERT_TRUE(dt::normalize_endpoint("0.0.0.0:7701", true, &ep, &err)) << err;
  EXPECT_EQ(ep, "tcp://*:7701");
  ASSERT_TRUE(dt::normalize_endpoint("198.18.0.1:7700", true, &ep, &err)) << err;
  EXPECT_EQ(ep, "tcp://198.18.0.1:7700");
}

}  // namespace
