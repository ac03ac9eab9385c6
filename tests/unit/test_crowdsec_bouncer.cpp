// test_crowdsec_bouncer.cpp - the CrowdSec bouncer's loop (crowdsec/bouncer.h) against a
// LAPI stand-in (cpp-httplib server on 127.0.0.1) serving recorded answers: the key is
// sent, startup then deltas, an outage keeps the bans and is followed by a startup pull,
// and a body over the size limit is refused.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <map>
#include <mutex>
#include <thread>

#include "agent_args.h"
#include "cli/cli.h"
#include "common/clock.h"
#include "crowdsec/bouncer.h"
#include "rules/config_file.h"

namespace {

using namespace std::chrono_literals;

// The bans a bouncer set, as a test reads them (the product's target is the agent's maps).
class RecordingTarget : public dt::BanTarget {
 public:
  bool set_ban(const dt::BanPrefix &p, int64_t duration_ns, const std::string &reason, std::string *) override {
    std::lock_guard lock(mu_);
    bans_[dt::ban_prefix_text(p)] = reason + " " + std::to_string(duration_ns / 1'000'000'000) + "s";
    return true;
  }
  bool lift_ban(const dt::BanPrefix &p, bool *lifted, std::string *) override {
    std::lock_guard lock(mu_);
    *lifted = bans_.erase(dt::ban_prefix_text(p)) > 0;
    return true;
  }
  std::vector<Current> current_bans() override { return {}; }
  std::map<std::string, std::string> bans() {
    std::lock_guard lock(mu_);
    return bans_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> bans_;
};

// The LAPI stand-in: answers each GET with what the test queued for it (startup or delta).
class FakeLapi {
 public:
  FakeLapi() {
    server_.Get("/v1/decisions/stream", [this](const httplib::Request &req, httplib::Response &res) {
      std::lock_guard lock(mu_);
      const bool startup = req.get_param_value("startup") == "true";
      (startup ? startups_ : deltas_)++;
      if (req.get_header_value("X-Api-Key") != "k3y") {
        res.status = 403;
        res.set_content(R"({"message":"access forbidden"})", "application/json");
        return;
      }
      res.status = status_;
      res.set_content(startup ? startup_body_ : delta_body_, "application/json");
      delta_body_ = R"({"deleted":null,"new":null})";
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeLapi() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void answer(int status, const std::string &startup, const std::string &delta) {
    std::lock_guard lock(mu_);
    status_ = status, startup_body_ = startup, delta_body_ = delta;
  }
  int startups() {
    std::lock_guard lock(mu_);
    return startups_;
  }
  int deltas() {
    std::lock_guard lock(mu_);
    return deltas_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  int status_ = 200, startups_ = 0, deltas_ = 0;
  std::string startup_body_, delta_body_;
};

const char kStartup[] =
    R"({"deleted":null,"new":[{"duration":"59.6s","id":1,"origin":"cscli","scenario":"ssh-bf","scope":"Ip",)"
    R"("type":"ban","value":"198.18.0.77"},{"duration":"1h59m59.6s","id":2,"origin":"cscli","scenario":"test reason",)"
    R"("scope":"Range","type":"ban","value":"198.18.5.0/24"}]})";
const char kDeleteOne[] =
    R"({"deleted":[{"duration":"-19.77807ms","id":1,"origin":"cscli","scenario":"ssh-bf","scope":"Ip","type":"ban",)"
    R"("value":"198.18.0.77"}],"new":null})";

// A bouncer on its own thread, stopped (by its flag, as a signal would) when it goes.
struct RunningBouncer {
  volatile std::sig_atomic_t stop = 0;
  std::thread thread;
  RunningBouncer(const std::string &url, const std::string &key, dt::BanTarget &target, size_t max_body = 1 << 20) {
    dt::BouncerConfig c;
    std::string err;
    EXPECT_TRUE(dt::parse_lapi_url(url, &c.lapi, &err)) << err;
    c.api_key = key;
    c.timing = {50'000'000, 200'000'000};  // poll 50 ms, back off to 200 ms
    c.lapi_limits.max_body_bytes = max_body;
    c.lapi_limits.connect_timeout_ns = c.lapi_limits.read_timeout_ns = 1'000'000'000;
    thread = std::thread([c, &target, this] { dt::run_bouncer(c, target, &stop); });
  }
  ~RunningBouncer() {
    stop = 1;
    thread.join();
  }
};

// Polls `cond` every 10 ms for up to 5 s.
template <class Cond>
bool eventually(Cond cond) {
  for (int i = 0; i < 500; i++, std::this_thread::sleep_for(10ms))
    if (cond()) return true;
  return cond();
}

TEST(CrowdsecBouncer, StartupThenDeltasFromTheLapi) {
  FakeLapi lapi;
  lapi.answer(200, kStartup, R"({"deleted":null,"new":null})");
  RecordingTarget target;
  RunningBouncer bouncer(lapi.url(), "k3y", target);
  ASSERT_TRUE(eventually([&] { return target.bans().size() == 2; })) << "the startup pull's two bans";
  EXPECT_EQ(target.bans()["198.18.5.0/24"], "test reason 7199s");
  EXPECT_EQ(target.bans()["198.18.0.77"], "ssh-bf 59s");
  ASSERT_TRUE(eventually([&] { return lapi.deltas() >= 2; })) << "deltas follow";
  EXPECT_EQ(lapi.startups(), 1);
  lapi.answer(200, kStartup, kDeleteOne);
  ASSERT_TRUE(eventually([&] { return target.bans().size() == 1; })) << "the deleted decision lifts its ban";
  EXPECT_EQ(target.bans().count("198.18.5.0/24"), 1u);
}

TEST(CrowdsecBouncer, OutageKeepsBansAndResyncsWithAStartupPull) {
  FakeLapi lapi;
  lapi.answer(200, kStartup, R"({"deleted":null,"new":null})");
  RecordingTarget target;
  RunningBouncer bouncer(lapi.url(), "k3y", target);
  ASSERT_TRUE(eventually([&] { return target.bans().size() == 2 && lapi.deltas() >= 1; }));
  lapi.answer(503, "", "");  // the LAPI fails (its database is down, say)
  const int deltas = lapi.deltas();
  ASSERT_TRUE(eventually([&] { return lapi.startups() >= 3; })) << "retried, as startup pulls";
  EXPECT_EQ(lapi.deltas(), deltas + 1) << "after the failed delta, only startup pulls";
  EXPECT_EQ(target.bans().size(), 2u) << "an outage keeps every ban";
  // Back, without 198.18.0.77 (deleted meanwhile): the startup pull lifts it.
  lapi.answer(200,
              R"({"deleted":null,"new":[{"duration":"1h","scope":"Range","type":"ban",)"
              R"("value":"198.18.5.0/24","scenario":"test reason"}]})",
              R"({"deleted":null,"new":null})");
  ASSERT_TRUE(eventually([&] { return target.bans().size() == 1; }));
  EXPECT_EQ(target.bans().count("198.18.5.0/24"), 1u);
}

TEST(CrowdsecBouncer, WrongKeyOrOversizedAnswerSetsNothing) {
  FakeLapi lapi;
  lapi.answer(200, kStartup, "");
  RecordingTarget target;
  {
    RunningBouncer bouncer(lapi.url(), "wrong", target);
    ASSERT_TRUE(eventually([&] { return lapi.startups() >= 2; }));
  }
  EXPECT_TRUE(target.bans().empty()) << "a 403 is a failure, not an empty list";
  {
    RunningBouncer bouncer(lapi.url(), "k3y", target, 100);  // the answer is ~300 bytes
    ASSERT_TRUE(eventually([&] { return lapi.startups() >= 4; }));
  }
  EXPECT_TRUE(target.bans().empty()) << "an answer over the limit is refused whole";
}

TEST(CrowdsecBouncer, NoLapiAtAllIsRetriedAndStopsPromptly) {
  RecordingTarget target;
  const uint64_t t0 = dt::mono_now_ns();
  {
    RunningBouncer bouncer("http://127.0.0.1:1", "k3y", target);  // nothing listens on port 1
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_LT(dt::mono_now_ns() - t0, 1'500'000'000u) << "a stop waits for no backoff";
}

TEST(CrowdsecBouncer, LapiUrls) {
  dt::LapiUrl u;
  std::string err;
  ASSERT_TRUE(dt::parse_lapi_url("http://127.0.0.1:8080/", &u, &err)) << err;
  EXPECT_EQ(u.scheme_host_port, "http://127.0.0.1:8080");
  EXPECT_EQ(u.path_prefix, "");
  ASSERT_TRUE(dt::parse_lapi_url("https://lapi.example/crowdsec/", &u, &err)) << err;
  EXPECT_EQ(u.scheme_host_port, "https://lapi.example");
  EXPECT_EQ(u.path_prefix, "/crowdsec");
  for (const char *bad : {"127.0.0.1:8080", "ftp://x", "http://", "http:///v1", "http://h/x?y=1", "http://u@h"})
    EXPECT_FALSE(dt::parse_lapi_url(bad, &u, &err)) << bad;
}

// parse_crowdsec_command on "crowdsec ARGS..."; *err: its stderr.
int parse_options(std::vector<std::string> args, dt::CrowdsecOptions *o, std::string *err) {
  args.insert(args.begin(), "crowdsec");
  return dt::test::run_captured([o](int argc, char **argv) { return dt::parse_crowdsec_command(argc, argv, o); }, args,
                                err);
}

TEST(CrowdsecBouncer, Options) {
  dt::CrowdsecOptions o;
  std::string err;
  ASSERT_EQ(parse_options({"--lapi", "http://127.0.0.1:8080", "--key-file", "/k", "--iface", "eth0", "--poll", "2s"},
                          &o, &err),
            -1)
      << err;
  EXPECT_EQ(o.pin_dir, "/sys/fs/bpf/dthrottle/eth0");
  EXPECT_EQ(o.poll_ns, 2'000'000'000u);
  struct Case {
    std::vector<std::string> args;
    const char *error;
  } cases[] = {
      {{"--key-file", "/k", "--iface", "eth0"}, "say where the Local API is: --lapi URL"},
      {{"--lapi", "http://127.0.0.1:1", "--iface", "eth0"}, "give the bouncer's API key: --key-file FILE"},
      {{"--lapi", "http://127.0.0.1:1", "--key-file", "/k"},
       "say which throttle to set bans on: --iface IFACE or --pin-dir DIR"},
      {{"--lapi", "127.0.0.1:8080", "--key-file", "/k", "--iface", "eth0"}, "--lapi: '127.0.0.1:8080' is not an http"},
      {{"--lapi", "http://127.0.0.1:1", "--key-file", "/k", "--iface", "eth0", "--poll", "10ms"},
       "--poll: '10ms' must be"},
  };
  for (const auto &c : cases) {
    dt::CrowdsecOptions bad;
    EXPECT_EQ(parse_options(c.args, &bad, &err), 2) << c.error;
    EXPECT_NE(err.find(c.error), std::string::npos) << "expected '" << c.error << "' in: " << err;
  }
}

}  // namespace

namespace {

// A target whose never-ban set is one address (as the agent's pins would give it).
class GuardedTarget : public RecordingTarget {
 public:
  bool never_ban(const dt::BanPrefix &p, std::string *what) override {
    std::string err;
    dt::BanPrefix peer;
    EXPECT_TRUE(dt::parse_ban_prefix("198.18.0.2", &peer, &err));
    if (!dt::ban_prefix_covers(p, peer.addr)) return false;
    *what = "peer or hub 198.18.0.2";
    return true;
  }
};

const char kWideAndPeer[] =
    R"({"deleted":null,"new":[{"duration":"1h","id":1,"origin":"cscli","scenario":"wide","scope":"Range",)"
    R"("type":"ban","value":"0.0.0.0/1"},{"duration":"1h","id":2,"origin":"cscli","scenario":"wide6",)"
    R"("scope":"Range","type":"ban","value":"2001::/16"},{"duration":"1h","id":3,"origin":"cscli",)"
    R"("scenario":"peer","scope":"Range","type":"ban","value":"198.18.0.0/24"},{"duration":"1h","id":4,)"
    R"("origin":"cscli","scenario":"ok","scope":"Range","type":"ban","value":"198.18.5.0/24"}]})";

TEST(CrowdsecBouncer, RefusesWideRangesAndTheNeverBanSet) {
  FakeLapi lapi;
  lapi.answer(200, kWideAndPeer, R"({"deleted":null,"new":null})");
  GuardedTarget target;
  RunningBouncer bouncer(lapi.url(), "k3y", target);
  ASSERT_TRUE(eventually([&] { return lapi.deltas() >= 1; })) << "the startup pull was made";
  const auto bans = target.bans();
  EXPECT_EQ(bans.size(), 1u) << "only 198.18.5.0/24 is narrow enough and covers no peer";
  EXPECT_EQ(bans.count("198.18.5.0/24"), 1u);
  EXPECT_EQ(bans.count("0.0.0.0/1"), 0u) << "a /1 range was set";
  EXPECT_EQ(bans.count("2001::/16"), 0u) << "an IPv6 /16 range was set";
  EXPECT_EQ(bans.count("198.18.0.0/24"), 0u) << "a range covering a peer was set";
}

}  // namespace
