// strict_bench.cpp - build/strict_bench: strict tags (decided by Redis) next to local
// tags, through one real QueryServer + TagTable in this process and a real
// redis-server it starts on 127.0.0.1 (a free port, no persistence) and stops after.
//
// Throughput: one client connection on the query unix socket pipelines windows of W
// queries (so the server answers batches; a batch's strict queries are one pipelined
// round trip to Redis), for at most S seconds. Latency: one query at a time, every
// round trip timed (a strict query: client -> agent -> Redis -> agent -> client).
// Tags: one hot tag, and 10,000 distinct tags (one Redis key / local bucket each).
// Every answer is checked to be "OK\n" or "NO\n". Exit codes: 0 ok, 1 error.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "cli/option_values.h"
#include "cli/options.h"
#include "common/clock.h"
#include "common/parse_values.h"
#include "query/query_server.h"
#include "query/strict_redis.h"
#include "redis/redis_server.h"
#include "rules/tags.h"

namespace {

[[noreturn]] void die(const std::string &why) {
  fprintf(stderr, "strict_bench: %s\n", why.c_str());
  exit(1);
}

int connect_unix(const std::string &path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0) die("cannot connect to " + path);
  return fd;
}

// Reads n answers; returns how many were OK (dies on anything but OK/NO).
uint64_t read_answers(int fd, uint64_t n) {
  static std::string pending;
  char buf[65536];
  uint64_t got = 0, ok = 0;
  while (got < n) {
    size_t nl;
    while (got < n && (nl = pending.find('\n')) != std::string::npos) {
      if (nl != 2 || (pending.compare(0, 2, "OK") != 0 && pending.compare(0, 2, "NO") != 0))
        die("unexpected answer '" + pending.substr(0, nl) + "'");
      ok += pending[0] == 'O';
      pending.erase(0, nl + 1);
      got++;
    }
    if (got == n) break;
    const ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r <= 0) die("the server closed the connection");
    pending.append(buf, static_cast<size_t>(r));
  }
  return ok;
}

void send_all(int fd, const std::string &s) {
  for (size_t off = 0; off < s.size();) {
    const ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) die("send failed");
    off += static_cast<size_t>(n);
  }
}

std::vector<std::string> tags_of(const std::string &prefix, size_t n) {
  std::vector<std::string> v;
  for (size_t i = 0; i < n; i++) v.push_back(n == 1 ? prefix + "hot" : prefix + "u" + std::to_string(i));
  return v;
}

struct Result {
  double qps = 0, ok_pct = 0, p50 = 0, p99 = 0;
  uint64_t queries = 0, latency_queries = 0;
};

Result measure(const std::string &sock, const std::vector<std::string> &tags, uint64_t window, double seconds) {
  Result r;
  const int fd = connect_unix(sock);
  uint64_t ok = 0, i = 0;
  const uint64_t t0 = dt::mono_now_ns(), stop = t0 + static_cast<uint64_t>(seconds * 1e9);
  while (dt::mono_now_ns() < stop && r.queries < 5'000'000) {
    std::string batch;
    for (uint64_t k = 0; k < window; k++) batch += tags[i++ % tags.size()] + "\n";
    send_all(fd, batch);
    ok += read_answers(fd, window);
    r.queries += window;
  }
  r.qps = static_cast<double>(r.queries) / (static_cast<double>(dt::mono_now_ns() - t0) / 1e9);
  r.ok_pct = 100.0 * static_cast<double>(ok) / static_cast<double>(r.queries);
  std::vector<uint64_t> rtt;
  const uint64_t lstop = dt::mono_now_ns() + static_cast<uint64_t>(seconds * 1e9);
  while (dt::mono_now_ns() < lstop && rtt.size() < 200'000) {
    const uint64_t a = dt::mono_now_ns();
    send_all(fd, tags[i++ % tags.size()] + "\n");
    read_answers(fd, 1);
    rtt.push_back(dt::mono_now_ns() - a);
  }
  close(fd);
  std::sort(rtt.begin(), rtt.end());
  r.latency_queries = rtt.size();
  r.p50 = static_cast<double>(rtt[rtt.size() / 2]) / 1e3;
  r.p99 = static_cast<double>(rtt[static_cast<size_t>(0.99 * static_cast<double>(rtt.size() - 1))]) / 1e3;
  return r;
}

// --seconds S (at most 60; "2", "1.5s", "500ms") and --window W. Returns -1 to go on, else
// the exit code (help printed, or the error).
int parse_strict_bench_args(int argc, char **argv, double *seconds, uint64_t *window) {
  const dt::CommandSpec spec(
      "strict_bench",
      "Usage: strict_bench [--seconds S] [--window W]\n\n"
      "Strict tags (decided by a redis-server it starts) next to local tags, through one\n"
      "QueryServer in this process: throughput and latency.\n\n",
      {
          {"seconds", 0, "S", "longest time of each run, 1ms to 60s (default 2)",
           [seconds](const std::string &v, std::string *why) {
             uint64_t ns = 0;
             if (!dt::duration_into(&ns, 1'000'000, 60'000'000'000ull, "from 1ms to 60s")(v, why)) return false;
             return *seconds = static_cast<double>(ns) / 1e9, true;
           }},
          {"window", 0, "W", "queries in flight per pipelined window, 1 to 1000000 (default 256)",
           dt::count_into(window, 1, 1'000'000)},
      });
  return dt::parse_subcommand(spec, argc, argv);
}

}  // namespace

int main(int argc, char **argv) {
  double seconds = 2;
  uint64_t window = 256;
  if (int code = parse_strict_bench_args(argc, argv, &seconds, &window); code >= 0) return code;

  dt::tools::RedisServer redis(dt::tools::RedisServer::Listen::Loopback);
  if (!redis.start())
    die("redis-server did not come up on " + redis.address() + " (see " + redis.dir() + "/redis.log)");
  const std::string addr = redis.address(), sock = redis.dir() + "/query.sock";

  // The same rate and burst for both kinds; strict ones are decided by Redis.
  dt::TagTable table;
  std::vector<dt::TagRule> rules(2);
  std::string err;
  if (!dt::parse_tag_rule("local:=1000/100", &rules[0], &err) ||
      !dt::parse_tag_rule("strict:=1000/100!strict", &rules[1], &err) || !table.replace_rules(rules, &err))
    die(err);
  dt::QueryServerConfig qc;
  qc.unix_path = sock;
  qc.redis_address = addr;
  auto server = dt::QueryServer::start(qc, table, &err);
  if (!server) die(err);

  printf(
      "strict_bench: QueryServer in-process, redis-server %s (loopback TCP); rules local: and strict: "
      "1000/s burst 100; unix query socket; each run at most %.1f s\n",
      addr.c_str(), seconds);
  printf("%-8s %-14s %12s %12s %7s %10s %9s %9s\n", "kind", "tags", "queries", "queries/s", "OK %", "lat. n", "p50 us",
         "p99 us");
  for (const char *kind : {"local:", "strict:"}) {
    for (size_t n : {size_t{1}, size_t{10'000}}) {
      const Result r = measure(sock, tags_of(kind, n), window, seconds);
      printf("%-8s %-14s %12llu %12.0f %7.1f %10llu %9.1f %9.1f\n", kind, n == 1 ? "1 hot tag" : "10000 tags",
             static_cast<unsigned long long>(r.queries), r.qps, r.ok_pct,
             static_cast<unsigned long long>(r.latency_queries), r.p50, r.p99);
    }
  }
  const dt::QueryCounters c = server->counters();
  printf(
      "server: %llu strict decisions in %llu Redis round trips (%.1f per round trip), "
      "%llu denied and %llu local on Redis errors\n",
      static_cast<unsigned long long>(c.strict_decided), static_cast<unsigned long long>(c.strict_round_trips),
      static_cast<double>(c.strict_decided) / static_cast<double>(std::max<uint64_t>(c.strict_round_trips, 1)),
      static_cast<unsigned long long>(c.strict_denied_on_error),
      static_cast<unsigned long long>(c.strict_local_on_error));
  server.reset();
  return 0;
}
