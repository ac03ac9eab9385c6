// test_peers_file.cpp - the peers file (--peers-file), peers re-read from --config, and
// peer list changes in words (the reload outcome).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "agent_args.h"
#include "cli/cli.h"
#include "common/peers_file.h"
#include "daemon/run_config.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace dt {
namespace {

using Eps = std::vector<std::string>;

TEST(PeersFile, OnePerLineWithCommentsAndRepeatsDropped) {
  Eps out;
  std::string err;
  ASSERT_TRUE(
      parse_peers_text("# rack 3\n198.18.1.2:7700\n\n  tcp://198.18.1.3:7700   # h3\n"
                       "[2001:2::5]:7700\nedge-4.example.net:7700\n198.18.1.2:7700\n",
                       "peers.txt", &out, &err))
      << err;
  EXPECT_EQ(out, (Eps{"tcp://198.18.1.2:7700", "tcp://198.18.1.3:7700", "tcp://[2001:2::5]:7700",
                      "tcp://edge-4.example.net:7700"}));
}

TEST(PeersFile, ErrorsNameTheFileAndLine) {
  Eps out;
  std::string err;
  EXPECT_FALSE(parse_peers_text("198.18.1.2:7700\n# fine\n198.18.1.3\n", "peers.txt", &out, &err));
  EXPECT_EQ(err.rfind("peers.txt:3: ", 0), 0u) << err;
  EXPECT_FALSE(parse_peers_text("198.18.1.2:7700, 198.18.1.3:7700\n", "p", &out, &err));
  EXPECT_NE(err.find("p:1: "), std::string::npos) << err;
  EXPECT_NE(err.find("one HOST:PORT a line"), std::string::npos) << err;
  EXPECT_FALSE(parse_peers_text("198.18.1.2:99999\n", "p", &out, &err));
  EXPECT_EQ(err.rfind("p:1: ", 0), 0u) << err;
  EXPECT_FALSE(read_peers_file("/nonexistent/peers", &out, &err));
  EXPECT_NE(err.find("cannot read the peers file /nonexistent/peers"), std::string::npos) << err;
}

TEST(PeersFile, ChangeInWords) {
  const Eps a = {"tcp://198.18.1.2:7700", "tcp://198.18.1.3:7700"};
  const Eps b = {"tcp://198.18.1.2:7700", "tcp://198.18.1.4:7700", "tcp://198.18.1.5:7700"};
  PeersChange c = diff_peers(a, b);
  EXPECT_EQ(c.added, (Eps{"tcp://198.18.1.4:7700", "tcp://198.18.1.5:7700"}));
  EXPECT_EQ(c.removed, (Eps{"tcp://198.18.1.3:7700"}));
  EXPECT_EQ(describe_peers_change(c),
            "peers: 2 added (198.18.1.4:7700, 198.18.1.5:7700), 1 removed (198.18.1.3:7700); 3 peers");
  EXPECT_EQ(describe_peers_change(diff_peers(a, a)), "peers: unchanged; 2 peers");
  EXPECT_EQ(describe_peers_change(diff_peers(a, {"tcp://198.18.1.2:7700"})),
            "peers: 1 removed (198.18.1.3:7700); 1 peer");
}

class PeersReload : public dt::test::TempDirTest {
 protected:
  void write(const std::string &name, const std::string &text) { std::ofstream(dir_ + "/" + name) << text; }
  ParseOutcome parse(std::vector<std::string> args, RunOptions *o, std::string *err) {
    return dt::test::parse_agent_args(args, o, err);
  }
  const std::string dir_ = tmp_.path();
};

TEST_F(PeersReload, PeersFileAndConfigPeersAreReadAgain) {
  write("agent.conf", "rate = 10\nburst = 5\npeers = 198.18.1.2:7700\ninsecure-cluster = yes\n");
  write("peers", "198.18.1.3:7700\n");
  RunOptions o;
  std::string err;
  ASSERT_EQ(parse({"--config", dir_ + "/agent.conf", "--iface", "lo", "--peers-file", dir_ + "/peers"}, &o, &err),
            ParseOutcome::Ok)
      << err;
  EXPECT_TRUE(o.cluster());
  EXPECT_EQ(o.listen, "tcp://*:7700");
  EXPECT_TRUE(o.config_peers);
  Eps peers;
  ASSERT_TRUE(load_peers(o, false, &peers, &err)) << err;
  EXPECT_EQ(peers, (Eps{"tcp://198.18.1.2:7700", "tcp://198.18.1.3:7700"}));
  // Both files change: a reload sees both.
  write("agent.conf", "rate = 10\nburst = 5\npeers = 198.18.1.4:7700\n");
  write("peers", "198.18.1.3:7700\n198.18.1.5:7700\n");
  ASSERT_TRUE(load_peers(o, true, &peers, &err)) << err;
  EXPECT_EQ(peers, (Eps{"tcp://198.18.1.4:7700", "tcp://198.18.1.3:7700", "tcp://198.18.1.5:7700"}));
  // A broken peers file: an error naming the line, nothing returned to use.
  write("peers", "198.18.1.3:7700\nnot a peer\n");
  EXPECT_FALSE(load_peers(o, true, &peers, &err));
  EXPECT_NE(err.find(dir_ + "/peers:2: "), std::string::npos) << err;
  write("peers", "198.18.1.3:7700\n");
  write("agent.conf", "rate = 10\nburst = 5\npeers = 198.18.1.4:99999\n");
  EXPECT_FALSE(load_peers(o, true, &peers, &err));
  EXPECT_NE(err.find(dir_ + "/agent.conf:3: peers: "), std::string::npos) << err;
}

TEST_F(PeersReload, CommandLinePeersAreNotReadFromTheConfig) {
  write("agent.conf", "rate = 10\nburst = 5\npeers = 198.18.1.2:7700\ninsecure-cluster = yes\n");
  RunOptions o;
  std::string err;
  ASSERT_EQ(parse({"--config", dir_ + "/agent.conf", "--iface", "lo", "--peers", "198.18.1.9:7700"}, &o, &err),
            ParseOutcome::Ok)
      << err;
  EXPECT_FALSE(o.config_peers);
  Eps peers;
  ASSERT_TRUE(load_peers(o, true, &peers, &err)) << err;
  EXPECT_EQ(peers, (Eps{"tcp://198.18.1.9:7700"}));
}

TEST_F(PeersReload, ConfigPeerVerifiedIsReadAgain) {
  write("agent.conf", "rate = 10\nburst = 5\npeers = 198.18.1.2:7700\ninsecure-cluster = yes\npeer-verified = h1\n");
  RunOptions o;
  std::string err;
  ASSERT_EQ(parse({"--config", dir_ + "/agent.conf", "--iface", "lo"}, &o, &err), ParseOutcome::Ok) << err;
  EXPECT_TRUE(o.config_peer_verified);
  EXPECT_EQ(o.peer_verified.text(), "h1") << "at start, from the file";
  PeerSet v;
  write("agent.conf", "rate = 10\nburst = 5\npeers = 198.18.1.2:7700\npeer-verified = h1,h2\n");
  ASSERT_TRUE(load_peer_verified(o, &v, &err)) << err;
  EXPECT_EQ(v.text(), "h1,h2") << "the file's new value";
  write("agent.conf", "rate = 10\nburst = 5\npeers = 198.18.1.2:7700\n");
  ASSERT_TRUE(load_peer_verified(o, &v, &err)) << err;
  EXPECT_EQ(v.text(), "all") << "the setting removed: the default";
  write("agent.conf", "rate = 10\nburst = 5\npeer-verified = h1,,h2\n");
  EXPECT_FALSE(load_peer_verified(o, &v, &err)) << "a bad value refuses the reload";
  EXPECT_EQ(err.rfind(dir_ + "/agent.conf:3: peer-verified: ", 0), 0u) << err;
  EXPECT_EQ(v.text(), "all") << "left as it was";
}

TEST_F(PeersReload, CommandLinePeerVerifiedIsNotReadFromTheConfig) {
  write("agent.conf", "rate = 10\nburst = 5\npeers = 198.18.1.2:7700\ninsecure-cluster = yes\npeer-verified = h1\n");
  RunOptions o;
  std::string err;
  ASSERT_EQ(parse({"--config", dir_ + "/agent.conf", "--iface", "lo", "--peer-verified", "none"}, &o, &err),
            ParseOutcome::Ok)
      << err;
  EXPECT_FALSE(o.config_peer_verified);
  write("agent.conf", "rate = 10\nburst = 5\npeers = 198.18.1.2:7700\npeer-verified = h2\n");
  PeerSet v;
  ASSERT_TRUE(load_peer_verified(o, &v, &err)) << err;
  EXPECT_EQ(v.text(), "none") << "the command line wins, as at start";
}

TEST_F(PeersReload, CheckRefusesABrokenPeersFile) {
  write("peers", "198.18.1.3\n");
  RunOptions o;
  std::string err;
  ASSERT_EQ(
      parse({"--iface", "lo", "--rate", "1", "--burst", "1", "--peers-file", dir_ + "/peers", "--insecure-cluster"}, &o,
            &err),
      ParseOutcome::Ok)
      << err;
  RunConfig config;
  EXPECT_FALSE(load_run_config(o, &config, &err));
  EXPECT_EQ(err.rfind(dir_ + "/peers:1: ", 0), 0u) << err;
}

}  // namespace
}  // namespace dt
