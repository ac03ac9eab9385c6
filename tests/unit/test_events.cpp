// test_events.cpp - the events (docs/events.md) without the kernel: the JSON of schema 1,
// the bus's bounds (the command's queue, a subscriber's buffer, the subscriber cap), the
// --on-event command's words, its children (at most N at once, failures and timeouts
// counted, no capability and no descriptor of the parent), and the attack detector's
// threshold and hysteresis.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/json.h"
#include "events/attack_watch.h"
#include "events/ban_events.h"
#include "events/command_runner.h"
#include "events/event_bus.h"
#include "temp_dir.h"

namespace {

constexpr uint64_t kSec = 1'000'000'000ull;

std::vector<dt::Json> lines_of(const std::string &text) {
  std::vector<dt::Json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(dt::Json::parse(line));
  return out;
}

TEST(EventBus, EveryEventIsOneVersionedJsonLine) {
  dt::EventBus bus({"h1", true, 8, 4});
  bus.emit(dt::kEventBan, {{"prefix", "198.18.0.7"}, {"origin", "query"}}, 1'764'780'000'123ull);
  bus.emit(dt::kEventUnban, {{"prefix", "198.18.0.7"}, {"why", "lifted"}}, 1'764'780'001'000ull);
  std::string line;
  ASSERT_TRUE(bus.pop_command_event(&line));
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line per event: " << line;
  const dt::Json j = dt::Json::parse(line);
  EXPECT_EQ(j["v"], 1);
  EXPECT_EQ(j["type"], "ban");
  EXPECT_EQ(j["time"], "2025-12-03T16:40:00.123Z");
  EXPECT_EQ(j["unix_ms"], 1'764'780'000'123ull);
  EXPECT_EQ(j["node"], "h1");
  EXPECT_EQ(j["seq"], 1);
  EXPECT_EQ(j["prefix"], "198.18.0.7");
  ASSERT_TRUE(bus.pop_command_event(&line));
  EXPECT_EQ(dt::Json::parse(line)["seq"], 2) << "seq counts the node's events";
  EXPECT_FALSE(bus.pop_command_event(&line));
}

TEST(EventBus, TheCommandQueueIsBoundedAndCountsWhatItDrops) {
  dt::EventBus bus({"h1", true, 3, 4});
  int woken = 0;
  bus.set_command_notify([&] { woken++; });
  for (int i = 0; i < 10; i++) bus.emit(dt::kEventBan, {{"i", i}}, 0);
  const dt::EventCounters c = bus.counters();
  EXPECT_EQ(c.emitted, 10u);
  EXPECT_EQ(c.command_queued, 3u);
  EXPECT_EQ(c.command_dropped, 7u);
  EXPECT_EQ(c.queued, 3u);
  EXPECT_EQ(woken, 3);
  std::string line;
  ASSERT_TRUE(bus.pop_command_event(&line));
  EXPECT_EQ(dt::Json::parse(line)["i"], 0) << "the oldest first; the newest are the ones dropped";
}

TEST(EventBus, WithoutACommandNothingIsQueued) {
  dt::EventBus bus({"h1", false, 3, 4});
  bus.emit(dt::kEventBan, {}, 0);
  std::string line;
  EXPECT_FALSE(bus.pop_command_event(&line));
  EXPECT_EQ(bus.counters().command_dropped, 0u);
}

TEST(EventBus, SubscribersGetEveryLineUpToTheCap) {
  dt::EventBus bus({"h1", false, 3, 2});
  int notified = 0;
  auto a = bus.subscribe([&] { notified++; });
  auto b = bus.subscribe(nullptr);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(bus.subscribe(nullptr), nullptr) << "a third subscriber is over the cap of 2";
  EXPECT_EQ(bus.counters().stream_refused, 1u);
  bus.emit(dt::kEventPeerDown, {{"peer", "h2"}}, 0);
  bus.emit(dt::kEventPeerUp, {{"peer", "h2"}}, 0);
  std::string got;
  EXPECT_TRUE(a->take(&got));
  const auto lines = lines_of(got);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["type"], "peer_down");
  EXPECT_EQ(lines[1]["type"], "peer_up");
  EXPECT_EQ(notified, 2);
  EXPECT_EQ(bus.counters().stream_delivered, 4u);
  bus.unsubscribe(b, false);
  EXPECT_NE(bus.subscribe(nullptr), nullptr) << "a place freed by a leaving subscriber is taken again";
}

TEST(EventBus, ASubscriberThatDoesNotReadIsCutOffNotWaitedFor) {
  dt::EventBus bus({"h1", false, 3, 4});
  auto sub = bus.subscribe(nullptr);
  const std::string reason(900, 'x');
  size_t emitted = 0;
  for (; emitted < 1000; emitted++) bus.emit(dt::kEventBan, {{"reason", reason}}, 0);
  std::string got;
  EXPECT_FALSE(sub->take(&got)) << "over " << dt::kSubscriberBufferBytes << " bytes unread: cut off";
  EXPECT_TRUE(got.empty()) << "a cut-off subscriber's lines are dropped";
  bus.unsubscribe(sub, true);
  const dt::EventCounters c = bus.counters();
  EXPECT_EQ(c.stream_slow, 1u);
  EXPECT_EQ(c.subscribers, 0u);
  EXPECT_LT(c.stream_delivered, emitted);
}

TEST(EventBus, AnOversizedEventIsDroppedAndCounted) {
  dt::EventBus bus({"h1", true, 3, 4});
  bus.emit(dt::kEventBan, {{"reason", std::string(dt::kMaxEventBytes, 'x')}}, 0);
  std::string line;
  EXPECT_FALSE(bus.pop_command_event(&line));
  EXPECT_EQ(bus.counters().oversized, 1u);
}

TEST(EventBus, StatusNamesEveryCounter) {
  dt::EventBus bus({"h1", true, 3, 4});
  bus.emit(dt::kEventBan, {}, 0);
  const dt::Json j = dt::Json::parse(dt::events_status_json(bus.counters()));
  for (const auto &row : dt::kEventCounterRows) EXPECT_TRUE(j.contains(row.name)) << row.name;
  EXPECT_EQ(j["emitted"], 1);
  EXPECT_EQ(j["queued"], 1);
  EXPECT_NE(dt::events_status_text(bus.counters()).find("1 emitted"), std::string::npos);
}

TEST(SplitCommand, WordsQuotesAndAbsolutePaths) {
  std::vector<std::string> argv;
  std::string err;
  ASSERT_TRUE(dt::split_command("/bin/sh -c 'cat >> \"/tmp/a b\"' x", &argv, &err)) << err;
  EXPECT_EQ(argv, (std::vector<std::string>{"/bin/sh", "-c", "cat >> \"/tmp/a b\"", "x"}));
  ASSERT_TRUE(dt::split_command("  /usr/bin/logger   -t dthrottle ", &argv, &err)) << err;
  EXPECT_EQ(argv, (std::vector<std::string>{"/usr/bin/logger", "-t", "dthrottle"}));
  EXPECT_FALSE(dt::split_command("logger -t x", &argv, &err));
  EXPECT_NE(err.find("absolute path"), std::string::npos) << err;
  EXPECT_FALSE(dt::split_command("/bin/sh -c 'unclosed", &argv, &err));
  EXPECT_NE(err.find("unclosed"), std::string::npos) << err;
  EXPECT_FALSE(dt::split_command("   ", &argv, &err));
  EXPECT_FALSE(dt::split_command("/bin/echo a\nb", &argv, &err));
}

// Runs the runner as the agent's loop does (poll its descriptors, then poll()) until
// `done` or 10 s.
template <class Done>
bool run_until(dt::CommandRunner &runner, Done done) {
  const uint64_t end = dt::mono_now_ns() + 10 * kSec;
  while (!done()) {
    if (dt::mono_now_ns() > end) return false;
    std::vector<pollfd> fds;
    for (const auto &p : runner.poll_fds()) fds.push_back({p.fd, static_cast<short>(p.out ? POLLOUT : POLLIN), 0});
    const uint64_t now = dt::mono_now_ns(), due = runner.deadline();
    const int ms =
        due == UINT64_MAX ? 50 : static_cast<int>(std::min<uint64_t>(50, (due > now ? due - now : 0) / 1'000'000));
    poll(fds.data(), fds.size(), ms);
    runner.poll(dt::mono_now_ns());
  }
  return true;
}

class CommandRunnerTest : public ::testing::Test {
 protected:
  dt::test::TempDir dir{"dthrottle-events"};
  std::string read(const std::string &name) {
    std::ifstream in(dir.file(name));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

TEST_F(CommandRunnerTest, EachEventReachesOneChildOnItsStdin) {
  dt::EventBus bus({"h1", true, 64, 4});
  dt::CommandRunnerConfig cfg;
  std::string err;
  // Each child appends its stdin and how many siblings were running (files present).
  ASSERT_TRUE(dt::split_command("/bin/sh -c 'cat >> " + dir.file("events") + "'", &cfg.argv, &err)) << err;
  cfg.jobs = 2;
  dt::CommandRunner runner(cfg, bus);
  for (int i = 0; i < 5; i++) bus.emit(dt::kEventBan, {{"i", i}}, 0);
  size_t most = 0;
  ASSERT_TRUE(run_until(runner,
                        [&] {
                          most = std::max(most, runner.running());
                          return bus.counters().command_ok == 5;
                        }))
      << "5 children exiting 0; counters: " << dt::events_status_text(bus.counters());
  EXPECT_LE(most, 2u) << "at most --on-event-jobs children at once";
  const auto lines = lines_of(read("events"));
  ASSERT_EQ(lines.size(), 5u);
  std::set<int> seen;
  for (const auto &j : lines) seen.insert(j["i"].get<int>());
  EXPECT_EQ(seen.size(), 5u) << "every event once";
}

TEST_F(CommandRunnerTest, FailuresAndTimeoutsAreCounted) {
  dt::EventBus bus({"h1", true, 64, 4});
  dt::CommandRunnerConfig fail_cfg;
  fail_cfg.argv = {"/bin/sh", "-c", "exit 3"};
  dt::CommandRunner failing(fail_cfg, bus);
  bus.emit(dt::kEventBan, {}, 0);
  ASSERT_TRUE(run_until(failing, [&] { return bus.counters().command_failed == 1; }));

  dt::EventBus bus2({"h1", true, 64, 4});
  dt::CommandRunnerConfig slow_cfg;
  slow_cfg.argv = {"/bin/sh", "-c", "sleep 30 & sleep 30"};  // its own child is killed with it (a group)
  slow_cfg.timeout_ns = 200'000'000;
  dt::CommandRunner slow(slow_cfg, bus2);
  const uint64_t t0 = dt::mono_now_ns();
  bus2.emit(dt::kEventBan, {}, 0);
  ASSERT_TRUE(run_until(slow, [&] { return bus2.counters().command_timeouts == 1 && slow.running() == 0; }));
  EXPECT_LT(dt::mono_now_ns() - t0, 5 * kSec) << "killed at the timeout, reaped at once";
  EXPECT_EQ(bus2.counters().command_failed, 0u) << "a timeout is counted once, as a timeout";

  dt::EventBus bus3({"h1", true, 64, 4});
  dt::CommandRunnerConfig missing;
  missing.argv = {"/nonexistent/dthrottle-hook"};
  dt::CommandRunner none(missing, bus3);
  bus3.emit(dt::kEventBan, {}, 0);
  ASSERT_TRUE(run_until(none, [&] { return bus3.counters().command_failures() == 1; }));
}

TEST_F(CommandRunnerTest, ChildrenHaveNoCapabilityAndNoDescriptorOfTheAgent) {
  const int leak = open("/dev/null", O_RDONLY);  // without O_CLOEXEC: the child must not see it
  ASSERT_GE(leak, 3);
  dt::EventBus bus({"h1", true, 64, 4});
  dt::CommandRunnerConfig cfg;
  cfg.argv = {"/bin/sh", "-c",
              "grep -E '^Cap(Eff|Prm|Inh|Amb)|^NoNewPrivs' /proc/self/status > " + dir.file("status") +
                  "; ls /proc/self/fd > " + dir.file("fds")};
  dt::CommandRunner runner(cfg, bus);
  bus.emit(dt::kEventBan, {}, 0);
  ASSERT_TRUE(run_until(runner, [&] { return bus.counters().command_ok == 1; }))
      << dt::events_status_text(bus.counters());
  close(leak);
  const std::string status = read("status");
  for (const char *set : {"CapEff", "CapPrm", "CapInh", "CapAmb"})
    EXPECT_NE(status.find(std::string(set) + ":\t0000000000000000"), std::string::npos) << set << " in:\n" << status;
  EXPECT_NE(status.find("NoNewPrivs:\t1"), std::string::npos) << status;
  std::istringstream fds(read("fds"));
  for (std::string fd; std::getline(fds, fd);)
    EXPECT_LE(std::stoi(fd), 3) << "the child holds descriptor " << fd << " (only 0-2 and ls's own directory)";
}

TEST(AttackDetector, StartsAtTheThresholdAndEndsOnlyAfterAQuietSpell) {
  dt::AttackConfig cfg;
  cfg.drops_per_s = 1000;
  cfg.quiet_ns = 3 * kSec;
  dt::AttackDetector d(cfg);
  uint64_t dropped = 0, t = 0;
  auto step = [&](uint64_t per_s) {
    dropped += per_s, t += kSec;
    return d.update(1, "web", dropped, t);
  };
  EXPECT_EQ(step(0), dt::AttackChange::None) << "the first reading is a baseline";
  EXPECT_EQ(step(999), dt::AttackChange::None);
  EXPECT_EQ(step(1000), dt::AttackChange::Started);
  EXPECT_EQ(d.state(1)->rate, 1000);
  // Around the threshold and down to half of it: still the same attack.
  for (uint64_t r : {600, 1200, 500, 900}) EXPECT_EQ(step(r), dt::AttackChange::None) << r;
  // Under half: quiet for 3 s ends it, a burst in between starts the quiet spell again.
  EXPECT_EQ(step(100), dt::AttackChange::None);
  EXPECT_EQ(step(100), dt::AttackChange::None);
  EXPECT_EQ(step(800), dt::AttackChange::None);
  EXPECT_EQ(step(0), dt::AttackChange::None);
  EXPECT_EQ(step(0), dt::AttackChange::None);
  EXPECT_EQ(step(0), dt::AttackChange::Ended);
  EXPECT_EQ(d.state(1)->peak, 1200);
  EXPECT_EQ(step(0), dt::AttackChange::None) << "ended once";
}

TEST(AttackDetector, PerRuleThresholdsAndOff) {
  dt::AttackConfig cfg;
  cfg.drops_per_s = 1000;
  cfg.per_rule = {{"quiet", 0}, {"touchy", 10}};
  dt::AttackDetector d(cfg);
  EXPECT_EQ(d.update(1, "quiet", 0, kSec), dt::AttackChange::None);
  EXPECT_EQ(d.update(1, "quiet", 1'000'000, 2 * kSec), dt::AttackChange::None) << "0: never an attack";
  EXPECT_EQ(d.update(2, "touchy", 0, kSec), dt::AttackChange::None);
  EXPECT_EQ(d.update(2, "touchy", 10, 2 * kSec), dt::AttackChange::Started);
  EXPECT_EQ(d.update(3, "other", 0, kSec), dt::AttackChange::None);
  EXPECT_EQ(d.update(3, "other", 999, 2 * kSec), dt::AttackChange::None);
  EXPECT_EQ(d.update(3, "other", 50, 3 * kSec), dt::AttackChange::None) << "a counter that went back: a new baseline";
}

TEST(BanEventFields, PrefixTimesAndOrigin) {
  dt::Ban b;
  std::string err;
  ASSERT_TRUE(dt::parse_ban_prefix("198.18.7.0/24", &b.prefix, &err));
  b.expires_ns = 100 * kSec + 600 * kSec;
  b.set_unix_ms = 1'000;
  b.reason = "stuffing";
  b.origin = "query";
  b.who = "uid 0 (query socket)";
  const dt::Json j = dt::ban_event_fields(b, 100 * kSec, 5'000'000);
  EXPECT_EQ(j["prefix"], "198.18.7.0/24");
  EXPECT_EQ(j["duration_s"], 600);
  EXPECT_EQ(j["expires_unix_ms"], 5'000'000 + 600'000);
  EXPECT_EQ(j["origin"], "query");
  EXPECT_EQ(j["remote"], false);
}

TEST(BanEvents, APeersBanInstalledIsToldOnceAtOnce) {
  dt::EventBus bus({"h2", true, 8, 4});
  dt::BanEvents events(bus);
  dt::Ban b;
  std::string err, line;
  ASSERT_TRUE(dt::parse_ban_prefix("198.18.7.1", &b.prefix, &err));
  b.expires_ns = 100 * kSec;
  b.set_unix_ms = 1'000;
  b.reason = "3834 dropped in 2s over budget, offence 1";
  b.origin = "h1/auto";
  b.who = "rule flood";
  b.remote = true;
  events.installed(b, 97 * kSec);
  ASSERT_TRUE(bus.pop_command_event(&line)) << "the installed ban was not told";
  EXPECT_EQ(dt::Json::parse(line)["origin"], "h1/auto");
  b.expires_ns = 101 * kSec;  // the peer's re-announcement renews it: not a new ban
  events.installed(b, 98 * kSec);
  EXPECT_FALSE(bus.pop_command_event(&line)) << "a renewal was told again: " << line;
  b.set_unix_ms = 9'000;  // set anew (its next offence)
  b.reason = "3810 dropped in 2s over budget, offence 2";
  events.installed(b, 99 * kSec);
  EXPECT_TRUE(bus.pop_command_event(&line)) << "a ban set anew was not told";
}

}  // namespace
