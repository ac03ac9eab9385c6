// test_strict_redis.cpp - strict tags against a real redis-server: the GCRA script
// (burst, refusals, reserved permits and their bound, key expiry), EVALSHA's NOSCRIPT
// fallback, failure and reconnection with backoff, one budget for two clients, the
// rules' strict options, and the query server answering strict tags through Redis
// (deny / local when Redis is gone). Each test starts its own redis-server on a unix
// socket in a temporary directory and stops it (by PID) afterwards.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/endpoint.h"
#include "query/query_server.h"
#include "query/strict_redis.h"
#include "redis/redis_server.h"
#include "rules/rules.h"
#include "rules/tags.h"

namespace {

using dt::StrictRequest;
using dt::StrictResult;

using dt::tools::RedisServer;

dt::StrictRedisConfig config_for(const RedisServer &srv) {
  dt::StrictRedisConfig c;
  c.address = srv.address();
  c.timeout_ns = 200'000'000;
  return c;
}

// n requests for one tag: rate 5/s (interval 200 ms), the given burst and max wait.
std::vector<StrictRequest> requests(std::string_view tag, size_t n, uint64_t burst, uint64_t max_wait_us = 0) {
  std::vector<StrictRequest> v(n);
  for (auto &r : v) {
    r.tag = tag;
    r.interval_us = 200'000;
    r.burst = burst;
    r.max_wait_us = max_wait_us;
  }
  return v;
}

std::vector<StrictResult> results(const std::vector<StrictRequest> &v) {
  std::vector<StrictResult> out;
  for (const auto &r : v) out.push_back(r.result);
  return out;
}

constexpr StrictResult kOk = StrictResult::Ok, kNo = StrictResult::No, kWait = StrictResult::Wait,
                       kErr = StrictResult::Error;

// One request for `tag` (burst `burst`) decided at `now`: its result (kErr if Redis failed).
StrictResult decide_one(dt::StrictRedis &r, std::string_view tag, uint64_t burst, uint64_t now = dt::mono_now_ns()) {
  auto one = requests(tag, 1, burst);
  r.decide(one, now);
  return one[0].result;
}

TEST(StrictRedis, BurstThenDeniedInOneRoundTrip) {
  RedisServer srv;
  ASSERT_TRUE(srv.start()) << "redis-server did not start";
  dt::StrictRedis r(config_for(srv));
  auto batch = requests("t:burst", 5, 3);
  EXPECT_TRUE(r.decide(batch, dt::mono_now_ns())) << r.last_error();
  EXPECT_EQ(results(batch), (std::vector<StrictResult>{kOk, kOk, kOk, kNo, kNo}));
  EXPECT_EQ(r.counters().round_trips, 1u) << "a batch must be one pipelined round trip";
  EXPECT_EQ(r.counters().decided, 5u);
  // The key holds the TAT and expires when it is reached (<= 3 intervals + 1 ms).
  const long long pttl = srv.integer("PTTL %s", "dthrottle:t:burst");
  EXPECT_GT(pttl, 0) << "the key must have an expiry";
  EXPECT_LE(pttl, 601);
  // Another tag has its own budget.
  EXPECT_EQ(decide_one(r, "t:other", 1), kOk) << r.last_error();
}

// Redis's own clock (TIME) decides, so the test cannot drive it: it counts the tokens
// that accrued and bounds them both ways by the time measured around the two batches.
TEST(StrictRedis, RefillsAtTheRate) {
  RedisServer srv;
  ASSERT_TRUE(srv.start());
  dt::StrictRedis r(config_for(srv));
  constexpr uint64_t kBurst = 5, kIntervalNs = 200'000'000;  // requests(): 5/s
  auto first = requests("t:refill", kBurst + 1, kBurst);
  const uint64_t first_start = dt::mono_now_ns();
  ASSERT_TRUE(r.decide(first, first_start));
  const uint64_t first_end = dt::mono_now_ns();
  EXPECT_EQ(results(first), (std::vector<StrictResult>{kOk, kOk, kOk, kOk, kOk, kNo})) << "burst 5 spent";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // 1.5 intervals: one token, at full speed
  auto again = requests("t:refill", kBurst + 1, kBurst);
  const uint64_t again_start = dt::mono_now_ns();
  ASSERT_TRUE(r.decide(again, again_start));
  const uint64_t again_end = dt::mono_now_ns();
  // The server spent the burst within [first_start, first_end] and answered again within
  // [again_start, again_end]: floor(elapsed / interval) tokens accrued, capped at the burst.
  const uint64_t least = std::min<uint64_t>(kBurst, (again_start - first_end) / kIntervalNs);
  const uint64_t most = std::min<uint64_t>(kBurst, (again_end - first_start) / kIntervalNs);
  const std::vector<StrictResult> got_results = results(again);
  const auto got = static_cast<uint64_t>(std::count(got_results.begin(), got_results.end(), kOk));
  std::vector<StrictResult> want(kBurst + 1, kNo);
  std::fill_n(want.begin(), got, kOk);
  EXPECT_EQ(got_results, want) << "the tokens that accrued, then refusals";
  EXPECT_GE(got, least) << "tokens after at least " << (again_start - first_end) / 1000000 << " ms";
  EXPECT_LE(got, most) << "tokens after at most " << (again_end - first_start) / 1000000 << " ms";
  EXPECT_GE(got, 1u) << "300 ms is more than one interval (200 ms)";
}

TEST(StrictRedis, ReservedPermitsUpToMaxWait) {
  RedisServer srv;
  ASSERT_TRUE(srv.start());
  dt::StrictRedis r(config_for(srv));
  // Burst 1, 200 ms apart, at most 500 ms of wait: now, ~200 ms, ~400 ms, then refused
  // (ceil(500 / 200) = 3 permits, 2 of them reserved).
  auto batch = requests("t:reserve", 5, 1, 500'000);
  ASSERT_TRUE(r.decide(batch, dt::mono_now_ns())) << r.last_error();
  EXPECT_EQ(results(batch), (std::vector<StrictResult>{kOk, kWait, kWait, kNo, kNo}));
  EXPECT_GT(batch[1].wait_us, 150'000u);
  EXPECT_LE(batch[1].wait_us, 200'000u);
  EXPECT_GT(batch[2].wait_us, batch[1].wait_us + 150'000);
  EXPECT_LE(batch[2].wait_us, 400'000u);
  // A plain query sees no token either: the reserved ones are spent.
  EXPECT_EQ(decide_one(r, "t:reserve", 1), kNo) << r.last_error();
}

TEST(StrictRedis, TwoClientsShareOneBudget) {
  RedisServer srv;
  ASSERT_TRUE(srv.start());
  dt::StrictRedis a(config_for(srv)), b(config_for(srv));
  auto on_a = requests("t:shared", 2, 3);
  auto on_b = requests("t:shared", 2, 3);
  ASSERT_TRUE(a.decide(on_a, dt::mono_now_ns()));
  ASSERT_TRUE(b.decide(on_b, dt::mono_now_ns()));
  EXPECT_EQ(results(on_a), (std::vector<StrictResult>{kOk, kOk}));
  EXPECT_EQ(results(on_b), (std::vector<StrictResult>{kOk, kNo})) << "burst 3 over both clients";
}

TEST(StrictRedis, NoscriptFallsBackToEval) {
  RedisServer srv;
  ASSERT_TRUE(srv.start());
  dt::StrictRedis r(config_for(srv));
  ASSERT_EQ(decide_one(r, "t:flush", 2), kOk) << r.last_error();
  redisReply *flushed = srv.command("SCRIPT FLUSH");
  ASSERT_NE(flushed, nullptr);
  freeReplyObject(flushed);
  auto two = requests("t:flush", 2, 2);
  EXPECT_TRUE(r.decide(two, dt::mono_now_ns())) << r.last_error();
  EXPECT_EQ(results(two), (std::vector<StrictResult>{kOk, kNo}));
  EXPECT_EQ(r.counters().noscript, 1u);
  EXPECT_EQ(r.counters().round_trips, 3u) << "the EVALSHA batch, then the same batch with EVAL";
}

TEST(StrictRedis, FailsFastWhileDownThenReconnects) {
  RedisServer srv;
  ASSERT_TRUE(srv.start());
  dt::StrictRedis r(config_for(srv));
  uint64_t now = dt::mono_now_ns();
  ASSERT_EQ(decide_one(r, "t:down", 5, now), kOk) << r.last_error();
  srv.stop();
  auto down = requests("t:down", 3, 5);
  EXPECT_FALSE(r.decide(down, now));
  EXPECT_EQ(results(down), (std::vector<StrictResult>{kErr, kErr, kErr}));
  EXPECT_FALSE(r.connected());
  EXPECT_FALSE(r.last_error().empty());
  // Within the backoff (100 ms) nothing is tried: no new connection attempt.
  const uint64_t failures = r.counters().connect_failures;
  EXPECT_FALSE(r.decide(down, now + 50'000'000));
  EXPECT_EQ(r.counters().connect_failures, failures);
  // After it a connection is tried (and fails: the server is still down).
  EXPECT_FALSE(r.decide(down, now + 150'000'000));
  EXPECT_EQ(r.counters().connect_failures, failures + 1);
  // Back up (empty: the data was not persisted): a connection after the next backoff.
  ASSERT_TRUE(srv.start());
  EXPECT_EQ(decide_one(r, "t:down", 5, now + 10'000'000'000ull), kOk) << r.last_error();
  EXPECT_EQ(r.counters().connects, 2u);
}

TEST(StrictRedis, ParsesAddresses) {
  std::string host, err;
  int port = 0;
  EXPECT_TRUE(dt::parse_redis_address("127.0.0.1:6379", &host, &port, &err));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 6379);
  EXPECT_TRUE(dt::parse_redis_address("[::1]:7000", &host, &port, &err));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 7000);
  EXPECT_TRUE(dt::parse_redis_address("/run/redis/redis.sock", &host, &port, &err));
  EXPECT_EQ(port, 0);
  EXPECT_FALSE(dt::parse_redis_address("localhost", &host, &port, &err));
  EXPECT_FALSE(dt::parse_redis_address("localhost:0", &host, &port, &err));
  EXPECT_FALSE(dt::parse_redis_address("localhost:99999", &host, &port, &err));
}

TEST(StrictRules, TagRuleSuffixAndToml) {
  dt::TagRule t;
  std::string err;
  ASSERT_TRUE(dt::parse_tag_rule("api:=5/2!strict", &t, &err)) << err;
  EXPECT_TRUE(t.strict);
  EXPECT_FALSE(t.strict_fallback_local);
  EXPECT_EQ(t.prefix, "api:");
  EXPECT_EQ(t.burst, 2u);
  ASSERT_TRUE(dt::parse_tag_rule("api:=5/2!strict-local", &t, &err)) << err;
  EXPECT_TRUE(t.strict_fallback_local);
  ASSERT_TRUE(dt::parse_tag_rule("api:=5/2", &t, &err));
  EXPECT_FALSE(t.strict);
  EXPECT_FALSE(dt::parse_tag_rule("api:=5/2!lax", &t, &err));

  dt::RuleSet rs = dt::default_rules(0, 0);
  ASSERT_TRUE(
      dt::parse_rules("version = 1\n[[tag]]\nprefix = \"a:\"\nrate = 5\nburst = 1\nstrict = true\n"
                      "on_redis_error = \"local\"\n[[tag]]\nprefix = \"b:\"\nrate = 5\nburst = 1\n"
                      "strict = true\n",
                      "t.toml", &rs, &err))
      << err;
  ASSERT_EQ(rs.tags.size(), 2u);
  EXPECT_TRUE(rs.tags[0].strict && rs.tags[0].strict_fallback_local);
  EXPECT_TRUE(rs.tags[1].strict && !rs.tags[1].strict_fallback_local) << "deny is the default";
  EXPECT_FALSE(
      dt::parse_rules("version = 1\n[[tag]]\nprefix = \"a:\"\nrate = 5\nburst = 1\nstrict = true\n"
                      "on_redis_error = \"allow\"\n",
                      "t.toml", &rs, &err));
  EXPECT_NE(err.find("on_redis_error"), std::string::npos) << err;
  EXPECT_FALSE(dt::parse_rules(
      "version = 1\n[[tag]]\nprefix = \"a:\"\nrate = 5\nburst = 1\non_redis_error = \"deny\"\n", "t.toml", &rs, &err))
      << "on_redis_error without strict is a mistake";
  EXPECT_FALSE(
      dt::parse_rules("version = 1\n[[tag]]\nprefix = \"a:\"\nrate = 5\nburst = 1\nstrict = 1\n", "t.toml", &rs, &err));
}

// Pipelined lines on one unix connection; the answers joined by ','.
std::string ask(const std::string &path, const std::vector<std::string> &lines) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0) {
    close(fd);
    return "connect failed";
  }
  std::string req, got;
  for (const auto &l : lines) req += l + "\n";
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) req.clear();
  char buf[4096];
  while (static_cast<size_t>(std::count(got.begin(), got.end(), '\n')) < lines.size()) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  for (char &ch : got) ch = ch == '\n' ? ',' : ch;
  if (!got.empty()) got.pop_back();
  return got;
}

TEST(StrictQueryServer, StrictTagsAskRedisAndFollowOnRedisError) {
  RedisServer srv;
  ASSERT_TRUE(srv.start());
  dt::TagTable table;
  std::vector<dt::TagRule> rules(3);
  std::string err;
  ASSERT_TRUE(dt::parse_tag_rule("s:=5/1!strict", &rules[0], &err));
  ASSERT_TRUE(dt::parse_tag_rule("l:=5/1!strict-local", &rules[1], &err));
  ASSERT_TRUE(dt::parse_tag_rule("p:=5/1", &rules[2], &err));
  ASSERT_TRUE(table.replace_rules(rules, &err)) << err;
  dt::QueryServerConfig qc;
  qc.unix_path = srv.address() + ".q";
  qc.redis_address = srv.address();
  qc.redis_timeout_ns = 200'000'000;
  qc.max_reserve_wait_ns = 300'000'000;
  auto qs = dt::QueryServer::start(qc, table, &err);
  ASSERT_TRUE(qs) << err;

  // Strict and plain tags in one batch; RESERVE on a strict tag waits ~200 ms, then NO.
  EXPECT_EQ(ask(qc.unix_path, {"s:a", "p:a", "s:a", "p:a", "RESERVE s:b", "RESERVE s:b", "RESERVE s:b", "other"}),
            "OK,OK,NO,NO,OK,WAIT 200,NO,OK");
  EXPECT_EQ(srv.integer("EXISTS %s", "dthrottle:s:a"), 1) << "the strict tag's state lives in Redis";
  EXPECT_EQ(srv.integer("EXISTS %s", "dthrottle:p:a"), 0) << "plain tags never reach Redis";
  EXPECT_FALSE(table.tokens_milli("s:a", dt::mono_now_ns())) << "strict tags leave the local table alone";
  dt::QueryCounters c = qs->counters();
  EXPECT_EQ(c.strict_decided, 5u);
  EXPECT_EQ(c.strict_round_trips, 1u) << "one round trip for the batch's five strict queries";

  // Redis gone: deny refuses, local answers from the agent's own bucket (burst 1).
  srv.stop();
  EXPECT_EQ(ask(qc.unix_path, {"s:c", "l:c", "l:c", "p:c"}), "NO,OK,NO,OK");
  c = qs->counters();
  EXPECT_EQ(c.strict_denied_on_error, 1u);
  EXPECT_EQ(c.strict_local_on_error, 2u);
}

}  // namespace
