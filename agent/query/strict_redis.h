// strict_redis.h - strict shared tag limits, decided by one Redis server.
//
// A tag rule with `strict = true` is not answered from the agent's own bucket (which
// peers only debit after the fact, so a cluster may briefly overshoot) but by Redis,
// the single source of truth for every agent that names the same server: one key per
// tag, "dthrottle:" + tag, whose value is the tag's GCRA state (its theoretical
// arrival time, TAT, in microseconds of Redis's clock).
//
// The decision is one atomic Lua script (kScript) run with EVALSHA (SCRIPT LOAD at
// connect; EVAL when the server answers NOSCRIPT, e.g. after a restart or SCRIPT FLUSH).
// It reads the time with redis.call('TIME'): only Redis's clock is ever compared with
// the TAT, so the hosts' clocks (and their skew) play no part. Arguments: interval_us
// (1e6 / rate), burst, max_wait_us (0 for a plain query). With base = max(TAT, now):
//   base + interval <= now + burst*interval   -> a token now: TAT = base + interval, 0
//   else wait = base + interval - burst*interval - now (the time that token accrues):
//     wait <= max_wait_us                     -> a reserved permit: TAT moves on as for
//                                                a token now; returns wait (us)
//     wait > max_wait_us                      -> denied, nothing changes; returns -1
// The key expires (PX) when the TAT is reached: from then on the bucket is full, which
// is exactly what a missing key means, so unused tags cost Redis nothing.
//
// Bound on reserved permits: a permit is reserved only if its time is at most max_wait
// away, and the permits of one tag are at least one interval apart, so at any moment a
// tag has at most ceil(max_wait / interval) reservations outstanding, over all agents
// (e.g. --query-max-wait 1s at 5/s: at most 5). No counter is needed for that bound.
//
// Where it runs: each query-server thread owns one StrictRedis (hiredis is not
// thread-safe, and one client per thread needs no lock). The strict queries of a batch
// (one read's worth of pipelined queries) are sent together (redisAppendCommandArgv for
// all, then one reply each): one round trip per batch, whatever its size. While the
// thread waits for Redis, its other connections wait too, at most the command timeout
// (--redis-timeout, default 50 ms) per batch; after a failure the client does not try
// again before a backoff (100 ms, doubling up to 5 s) has passed, and in between every
// strict query fails at once without I/O, so an unreachable Redis costs the non-strict
// queries one timeout per backoff period, not one per batch.
//
// Failure (no connection, timeout, an error reply) is per query StrictResult::Error;
// the caller applies the rule's on_redis_error (deny, or the local bucket).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/no_copy.h"

struct redisContext;

namespace dt {

// The decision script (also what SCRIPT LOAD loads). KEYS[1] the tag's key; ARGV
// interval_us, burst, max_wait_us. Returns 0 (now), > 0 (wait us), -1 (denied).
extern const char *const kStrictScript;

struct StrictRedisConfig {
  std::string address;               // "host:port", "[v6]:port" or a unix socket path
  uint64_t timeout_ns = 50'000'000;  // connect and each read/write
  uint64_t backoff_min_ns = 100'000'000;
  uint64_t backoff_max_ns = 5'000'000'000;
  std::string key_prefix = "dthrottle:";
};

enum class StrictResult : uint8_t { Ok, Wait, No, Error };

struct StrictRequest {
  std::string_view tag;                       // in
  uint64_t interval_us = 0;                   // in: 1e6 / rate (at least 1)
  uint64_t burst = 0;                         // in
  uint64_t max_wait_us = 0;                   // in: 0 for a plain query
  StrictResult result = StrictResult::Error;  // out
  uint64_t wait_us = 0;                       // out, with Wait
};

struct StrictCounters {
  uint64_t round_trips = 0;  // batches sent (EVAL retries included)
  uint64_t decided = 0;      // requests Redis answered
  uint64_t errors = 0;       // requests that got Error
  uint64_t connects = 0;     // successful connections
  uint64_t connect_failures = 0;
  uint64_t noscript = 0;  // batches re-sent with EVAL
};

class StrictRedis : NoCopy {
 public:
  explicit StrictRedis(StrictRedisConfig cfg);
  ~StrictRedis();

  // Blocks SIGPIPE in the calling thread (hiredis uses write(); see the .cpp).
  // Decides every request in one pipelined round trip (connecting first if needed and
  // the backoff allows). Returns false if the batch failed (results Error; the
  // reason is in last_error(); requests Redis had already answered keep their result).
  bool decide(std::span<StrictRequest> reqs, uint64_t now_ns);

  bool connected() const { return ctx_ != nullptr; }
  const std::string &last_error() const { return last_error_; }
  const StrictCounters &counters() const { return c_; }

 private:
  bool connect(uint64_t now_ns);
  void fail(const std::string &why, uint64_t now_ns);
  bool send_batch(std::span<StrictRequest> reqs, bool use_eval, bool *noscript);

  StrictRedisConfig cfg_;
  std::string host_;
  int port_ = 0;
  redisContext *ctx_ = nullptr;
  std::string sha_;  // of kStrictScript, from SCRIPT LOAD
  uint64_t next_attempt_ns_ = 0;
  uint64_t backoff_ns_ = 0;
  std::string last_error_;
  StrictCounters c_;
};

}  // namespace dt
