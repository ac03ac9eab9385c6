// test_curve.cpp - CurveZMQ between agents on loopback: an allowed subscriber hears
// the publisher (encrypted), a subscriber whose key is not allowed hears nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <zmq.hpp>

#include "cluster/curve.h"
#include "commands/commands.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace {

class CurveTest : public dt::test::TempDirTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(TempDirTest::SetUp());
    fs::create_directories(dir_ + "/allowed");
    fs::create_directories(dir_ + "/pub-side");
    for (const char *n : {"pub", "good", "evil"}) keygen(n);
    port_ = 20000 + getpid() % 20000;
    // The publisher allows only "good"; subscribers know the publisher's endpoint.
    fs::copy_file(dir_ + "/good.pub", dir_ + "/pub-side/good.pub");
    set_endpoint(dir_ + "/allowed/pub.pub", "127.0.0.1:" + std::to_string(port_));
  }

  // The .pub file's one `endpoint = ...` line becomes `endpoint`.
  static void set_endpoint(const std::string &pub_file, const std::string &endpoint) {
    std::ifstream in(pub_file);
    std::string line, text;
    while (std::getline(in, line))
      if (line.rfind("endpoint", 0) != 0) text += line + "\n";
    in.close();
    std::ofstream(pub_file, std::ios::trunc) << text << "endpoint = " << endpoint << "\n";
  }

  void keygen(const char *name) {
    std::string d = dir_;
    std::vector<std::string> args = {"keygen", name, "--dir", d};
    std::vector<char *> argv;
    for (auto &a : args) argv.push_back(a.data());
    testing::internal::CaptureStdout();
    ASSERT_EQ(dt::cmd_keygen(static_cast<int>(argv.size()), argv.data()), 0);
    testing::internal::GetCapturedStdout();
    if (std::string(name) == "pub") fs::copy_file(d + "/pub.pub", d + "/allowed/pub.pub");
  }

  // Subscribes as `who` and returns how many of `n` published messages arrived.
  int exchange(const char *who, int n) {
    // Two agents: two contexts (each has its own ZAP handler, as in the agent).
    zmq::context_t ctx(1), ctx2(1);
    zmq::socket_t pub(ctx, zmq::socket_type::pub), pub_sub(ctx, zmq::socket_type::sub);
    zmq::socket_t sub(ctx2, zmq::socket_type::sub), sub_pub(ctx2, zmq::socket_type::pub);
    for (auto *s : {&pub, &sub, &sub_pub, &pub_sub}) s->set(zmq::sockopt::linger, 0);
    std::vector<dt::CurvePeer> pub_peers, sub_peers;
    std::string err;
    auto pub_auth = dt::configure_curve(dir_ + "/pub.key", dir_ + "/pub-side", ctx, pub, pub_sub, &pub_peers, &err);
    EXPECT_TRUE(pub_auth) << err;
    auto sub_auth =
        dt::configure_curve(dir_ + "/" + who + ".key", dir_ + "/allowed", ctx2, sub_pub, sub, &sub_peers, &err);
    EXPECT_TRUE(sub_auth) << err;
    pub.bind("tcp://127.0.0.1:" + std::to_string(port_));
    sub.set(zmq::sockopt::subscribe, "");
    EXPECT_TRUE(
        dt::connect_curve_peer(sub, "tcp://127.0.0.1:" + std::to_string(port_), sub_peers, dir_ + "/allowed", &err))
        << err;
    int got = 0;
    for (int i = 0; i < 30 && got < n; i++) {  // bounded: 30 x 100 ms
      pub.send(zmq::str_buffer("report"), zmq::send_flags::dontwait);
      zmq::message_t m;
      zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) > 0 && sub.recv(m, zmq::recv_flags::dontwait)) got++;
    }
    pub.close();
    sub.close();
    sub_pub.close();
    pub_sub.close();
    pub_auth.reset();
    sub_auth.reset();
    return got;
  }

  const std::string dir_ = tmp_.path();
  int port_ = 0;
};

TEST_F(CurveTest, AllowedPeerReceivesAndUnknownKeyIsRefused) {
  EXPECT_GE(exchange("good", 3), 3) << "a subscriber whose key is in --curve-peers must receive reports";
  EXPECT_EQ(exchange("evil", 3), 0) << "a subscriber whose key is not allowed must receive nothing";
}

TEST_F(CurveTest, KeyFileErrorsAreClear) {
  std::string err;
  dt::KeyPairFile key;
  EXPECT_FALSE(dt::read_key_pair_file(dir_ + "/good.pub", &key, &err));
  EXPECT_NE(err.find("no 'secret = KEY' line"), std::string::npos) << err;
  std::ofstream(dir_ + "/bad.key") << "public = tooshort\n";
  EXPECT_FALSE(dt::read_key_pair_file(dir_ + "/bad.key", &key, &err));
  EXPECT_NE(err.find("bad.key:1: 'public' is not a 40-character Z85 key"), std::string::npos) << err;
  std::vector<dt::CurvePeer> peers;
  EXPECT_FALSE(dt::read_curve_peers(dir_ + "/missing", &peers, &err));
  EXPECT_NE(err.find("cannot read --curve-peers directory"), std::string::npos) << err;
}

// The hub's side: a CURVE server with an allowlist (make_curve_server, start_curve_auth)
// and clients that connect with connect_curve_client; the allowlist replaced at run time.
TEST_F(CurveTest, HubServerAdmitsAllowedClientsAndReloadsItsAllowlist) {
  const std::string ep = "tcp://127.0.0.1:" + std::to_string(port_ + 1);
  set_endpoint(dir_ + "/allowed/pub.pub", "127.0.0.1:" + std::to_string(port_ + 1));
  zmq::context_t hub_ctx(1);
  zmq::socket_t hub(hub_ctx, zmq::socket_type::pub);
  hub.set(zmq::sockopt::linger, 0);
  dt::CurveKeys hub_keys;
  std::string err;
  ASSERT_TRUE(dt::load_curve_keys(dir_ + "/pub.key", dir_ + "/pub-side", &hub_keys, &err)) << err;
  auto auth = dt::start_curve_auth(hub_ctx, hub_keys.peers, "an agent");
  dt::make_curve_server(hub, hub_keys);
  hub.bind(ep);
  // Messages `who` receives as a client of the hub, out of up to 30 sent.
  auto receive = [&](const char *who) {
    zmq::context_t ctx(1);
    zmq::socket_t sub(ctx, zmq::socket_type::sub);
    sub.set(zmq::sockopt::linger, 0);
    sub.set(zmq::sockopt::subscribe, "");
    dt::CurveKeys keys;
    std::string e;
    EXPECT_TRUE(dt::load_curve_keys(dir_ + "/" + who + ".key", dir_ + "/allowed", &keys, &e)) << e;
    EXPECT_TRUE(dt::check_curve_endpoints(keys, {}, {ep}, &e)) << e;
    EXPECT_TRUE(dt::connect_curve_client(sub, ep, ep, keys, &e)) << e;
    int got = 0;
    for (int i = 0; i < 30 && got < 3; i++) {  // bounded: 30 x 100 ms
      hub.send(zmq::str_buffer("report"), zmq::send_flags::dontwait);
      zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
      zmq::message_t m;
      if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) > 0 && sub.recv(m, zmq::recv_flags::dontwait)) got++;
    }
    sub.close();
    return got;
  };
  EXPECT_GE(receive("good"), 3) << "an allowed agent must hear the hub";
  EXPECT_EQ(receive("evil"), 0) << "an agent whose key the hub does not know must hear nothing";
  fs::copy_file(dir_ + "/evil.pub", dir_ + "/pub-side/evil.pub");
  ASSERT_TRUE(dt::load_curve_keys(dir_ + "/pub.key", dir_ + "/pub-side", &hub_keys, &err)) << err;
  dt::update_curve_allowed(auth.get(), hub_keys.peers);
  EXPECT_GE(receive("evil"), 3) << "a key added to the allowlist by a reload must be admitted";
  hub.close();
  auth.reset();
}

TEST_F(CurveTest, EveryPeerAndHubNeedsAKey) {
  dt::CurveKeys keys;
  std::string err;
  ASSERT_TRUE(dt::load_curve_keys(dir_ + "/good.key", dir_ + "/allowed", &keys, &err)) << err;
  const std::string known = "tcp://127.0.0.1:" + std::to_string(port_);
  EXPECT_TRUE(dt::check_curve_endpoints(keys, {known}, {}, &err)) << err;
  EXPECT_FALSE(dt::check_curve_endpoints(keys, {known, "tcp://198.18.1.9:7700"}, {}, &err));
  EXPECT_NE(err.find("no public key for peer tcp://198.18.1.9:7700"), std::string::npos) << err;
  EXPECT_NE(err.find("'endpoint = 198.18.1.9:7700'"), std::string::npos) << err;
  EXPECT_FALSE(dt::check_curve_endpoints(keys, {}, {"tcp://198.19.0.100:7701"}, &err));
  EXPECT_NE(err.find("no public key for hub 198.19.0.100:7701"), std::string::npos) << err;
}

}  // namespace
