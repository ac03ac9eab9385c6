// strict_redis.cpp - the Redis client of strict tag rules (see strict_redis.h).
#include "query/strict_redis.h"

#include <hiredis/hiredis.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common/endpoint.h"

namespace dt {

// Microseconds fit a Lua double exactly (now is ~2^51 us since 1970); numbers are
// written back with %.0f so that no exponent form ever reaches the key.
const char *const kStrictScript =
    "local interval = tonumber(ARGV[1])\n"
    "local burst = tonumber(ARGV[2])\n"
    "local max_wait = tonumber(ARGV[3])\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
    "local tat = tonumber(redis.call('GET', KEYS[1]) or 0) or 0\n"
    "local base = tat > now and tat or now\n"
    "local next = base + interval\n"
    "local wait = next - burst * interval - now\n"
    "if wait > max_wait then return -1 end\n"
    "local ttl_ms = math.floor((next - now) / 1000) + 1\n"
    "redis.call('SET', KEYS[1], string.format('%.0f', next), 'PX', ttl_ms)\n"
    "if wait <= 0 then return 0 end\n"
    "return wait\n";

namespace {

timeval to_timeval(uint64_t ns) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  tv.tv_usec = static_cast<suseconds_t>((ns % 1'000'000'000) / 1000);
  if (tv.tv_sec == 0 && tv.tv_usec == 0) tv.tv_usec = 1000;
  return tv;
}

struct ReplyFree {
  void operator()(redisReply *r) const {
    if (r) freeReplyObject(r);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

// hiredis writes with write(), not send(MSG_NOSIGNAL): a server gone away would kill
// the process with SIGPIPE. Blocked in the calling thread (once), the signal stays
// pending there harmlessly and the write fails with EPIPE instead.
void block_sigpipe_in_this_thread() {
  thread_local bool blocked = false;
  if (blocked) return;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  blocked = true;
}

}  // namespace

StrictRedis::StrictRedis(StrictRedisConfig cfg) : cfg_(std::move(cfg)) {
  std::string err;
  // A bad address: connect() fails with this error.
  if (!parse_redis_address(cfg_.address, &host_, &port_, &err)) last_error_ = "redis address " + err;
}

StrictRedis::~StrictRedis() {
  if (ctx_) redisFree(ctx_);
}

void StrictRedis::fail(const std::string &why, uint64_t now_ns) {
  last_error_ = why;
  if (ctx_) {
    redisFree(ctx_);
    ctx_ = nullptr;
  }
  backoff_ns_ = backoff_ns_ ? std::min(backoff_ns_ * 2, cfg_.backoff_max_ns) : cfg_.backoff_min_ns;
  next_attempt_ns_ = now_ns + backoff_ns_;
}

bool StrictRedis::connect(uint64_t now_ns) {
  if (ctx_) return true;
  if (now_ns < next_attempt_ns_) return false;  // backing off: last_error_ stays
  if (host_.empty()) {
    next_attempt_ns_ = UINT64_MAX;  // a bad address never gets better
    return false;
  }
  const timeval tv = to_timeval(cfg_.timeout_ns);
  ctx_ = port_ ? redisConnectWithTimeout(host_.c_str(), port_, tv) : redisConnectUnixWithTimeout(host_.c_str(), tv);
  if (!ctx_ || ctx_->err) {
    c_.connect_failures++;
    fail(std::string("cannot connect to redis ") + cfg_.address + ": " + (ctx_ ? ctx_->errstr : "out of memory"),
         now_ns);
    return false;
  }
  if (redisSetTimeout(ctx_, tv) != REDIS_OK) {
    c_.connect_failures++;
    fail("redis " + cfg_.address + ": cannot set the socket timeout", now_ns);
    return false;
  }
  Reply r(static_cast<redisReply *>(redisCommand(ctx_, "SCRIPT LOAD %s", kStrictScript)));
  if (!r || r->type != REDIS_REPLY_STRING) {
    c_.connect_failures++;
    fail("redis " + cfg_.address + ": SCRIPT LOAD failed: " +
             (r && r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : std::string(ctx_->errstr)),
         now_ns);
    return false;
  }
  sha_.assign(r->str, r->len);
  c_.connects++;
  backoff_ns_ = 0;
  return true;
}

// Appends one command per request, then reads one reply each. False on an I/O error
// (the connection is then unusable); *noscript if the server did not know the script.
bool StrictRedis::send_batch(std::span<StrictRequest> reqs, bool use_eval, bool *noscript) {
  *noscript = false;
  std::string key;
  for (StrictRequest &q : reqs) {
    key.assign(cfg_.key_prefix).append(q.tag);
    const std::string iv = std::to_string(std::max<uint64_t>(q.interval_us, 1));
    const std::string burst = std::to_string(q.burst);
    const std::string wait = std::to_string(q.max_wait_us);
    const char *argv[] = {use_eval ? "EVAL" : "EVALSHA",
                          use_eval ? kStrictScript : sha_.c_str(),
                          "1",
                          key.data(),
                          iv.c_str(),
                          burst.c_str(),
                          wait.c_str()};
    const size_t len[] = {
        use_eval ? 4u : 7u, use_eval ? strlen(kStrictScript) : sha_.size(), 1, key.size(), iv.size(), burst.size(),
        wait.size()};
    if (redisAppendCommandArgv(ctx_, 7, argv, len) != REDIS_OK) return false;
  }
  c_.round_trips++;
  for (StrictRequest &q : reqs) {
    void *raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK) return false;
    Reply r(static_cast<redisReply *>(raw));
    q.result = StrictResult::Error;
    if (r->type == REDIS_REPLY_INTEGER) {
      if (r->integer == 0) q.result = StrictResult::Ok;
      else if (r->integer < 0) q.result = StrictResult::No;
      else {
        q.result = StrictResult::Wait;
        q.wait_us = static_cast<uint64_t>(r->integer);
      }
    } else if (r->type == REDIS_REPLY_ERROR) {
      if (std::string_view(r->str, r->len).starts_with("NOSCRIPT")) *noscript = true;
      else last_error_ = "redis: " + std::string(r->str, r->len);
    }
  }
  return true;
}

bool StrictRedis::decide(std::span<StrictRequest> reqs, uint64_t now_ns) {
  for (StrictRequest &q : reqs) q.result = StrictResult::Error;
  if (reqs.empty()) return true;
  block_sigpipe_in_this_thread();
  bool ok = connect(now_ns);
  if (ok) {
    bool noscript = false;
    ok = send_batch(reqs, false, &noscript);
    if (ok && noscript) {
      // The server lost its scripts (restart, SCRIPT FLUSH): the whole batch again with
      // the script's text, which also caches it for the next EVALSHA.
      c_.noscript++;
      ok = send_batch(reqs, true, &noscript);
    }
    if (!ok) fail("redis " + cfg_.address + ": " + (ctx_->errstr[0] ? ctx_->errstr : "I/O error"), now_ns);
  }
  uint64_t errors = 0;
  for (const StrictRequest &q : reqs) errors += q.result == StrictResult::Error;
  c_.errors += errors;
  c_.decided += reqs.size() - errors;
  return ok && errors == 0;
}

}  // namespace dt
