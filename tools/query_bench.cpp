// query_bench.cpp - build/query_bench: what the query socket answers per second and
// how fast it answers one query, against the real QueryServer and TagTable running
// in this process (server thread pinned to one CPU, the client on another when there
// are two), over a unix socket in a temporary directory and over 127.0.0.1.
//
// Throughput: one client connection pipelines windows of W queries (the next window
// is sent before the answers of the previous one are read), for a bounded number of
// queries and time. The server's CPU time per query is the process CPU time minus the
// client thread's. Latency: one query at a time (send, wait for the 3-byte answer),
// every round trip timed. Workloads: one hot tag (throttled: mostly NO) and many
// distinct tags (one bucket each). Every answer is checked to be "OK\n" or "NO\n".
// For scale, the same unpipelined loop against a bare echo server on a unix socket in the
// same run (EchoServer: one blocking thread, recv then send "OK\n" per line): the goal is
// the query socket's p50 within 1.5x of the echo's, whatever the machine's load.
// Exit codes: 0 success, 1 runtime error, 2 usage error.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/option_values.h"
#include "cli/options.h"
#include "common/clock.h"
#include "common/no_copy.h"
#include "common/parse_values.h"
#include "query/query_server.h"
#include "rules/tags.h"

namespace {

[[noreturn]] __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("query_bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

uint64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);  // best effort: unpinned figures are still valid
}

// Lets every thread of this process (the server's too) run on any CPU again.
void unpin_all_threads(long cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (long c = 0; c < cpus && c < CPU_SETSIZE; c++) CPU_SET(c, &set);
  if (DIR *d = opendir("/proc/self/task")) {
    while (dirent *e = readdir(d)) {
      uint64_t tid = 0;
      std::string not_a_thread;  // ".", "..": no thread id
      if (dt::parse_count(e->d_name, 1, INT32_MAX, &tid, &not_a_thread))
        sched_setaffinity(static_cast<pid_t>(tid), sizeof set, &set);
    }
    closedir(d);
  }
}

int connect_to(const std::string &unix_path, uint16_t tcp_port) {
  int fd;
  if (!unix_path.empty()) {
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", unix_path.c_str());
    if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0)
      die("connect %s: %s", unix_path.c_str(), strerror(errno));
  } else {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(tcp_port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0)
      die("connect 127.0.0.1:%u: %s", tcp_port, strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  timeval tv{5, 0};  // a stuck server ends the bench instead of hanging it
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return fd;
}

void send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) die("send: %s", w < 0 ? strerror(errno) : "closed");
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Reads `lines` answers; returns how many were "OK\n". Dies on anything but OK/NO.
uint64_t read_answers(int fd, size_t lines, std::vector<char> *buf) {
  const size_t n = lines * 3;
  buf->resize(n);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = recv(fd, buf->data() + got, n - got, 0);
    if (r <= 0) die("recv: %s", r < 0 ? strerror(errno) : "the server closed the connection");
    got += static_cast<size_t>(r);
  }
  uint64_t ok = 0;
  for (size_t i = 0; i < n; i += 3) {
    const char *a = buf->data() + i;
    if (a[2] != '\n' || !((a[0] == 'O' && a[1] == 'K') || (a[0] == 'N' && a[1] == 'O')))
      die("unexpected answer bytes '%.3s' at answer %zu", a, i / 3);
    ok += a[0] == 'O';
  }
  return ok;
}

// Queries as fixed-width lines, so that window k is the byte range [k*W*len, ...).
struct Workload {
  std::string label;
  std::string lines;  // n lines of `len` bytes each, '\n' included
  size_t len = 0;
  size_t n = 0;
};

Workload hot_tag() {
  Workload w{"1 hot tag", "", 4, 1};
  w.lines = "hot\n";
  return w;
}

Workload distinct_tags(size_t count) {
  Workload w;
  char label[64];
  snprintf(label, sizeof label, "%zu distinct tags", count);
  w.label = label;
  w.len = 13;  // "user:0000042\n"
  w.n = count;
  w.lines.reserve(count * w.len);
  char line[32];
  for (size_t i = 0; i < count; i++) {
    snprintf(line, sizeof line, "user:%07zu\n", i);
    w.lines += line;
  }
  return w;
}

// W consecutive lines of the workload starting at line `first` (wrapping around).
void fill_window(const Workload &w, size_t first, size_t count, std::string *out) {
  out->clear();
  for (size_t i = 0; i < count;) {
    const size_t at = (first + i) % w.n;
    const size_t take = std::min(count - i, w.n - at);
    out->append(w.lines, at * w.len, take * w.len);
    i += take;
  }
}

struct Throughput {
  uint64_t queries = 0, ok = 0;
  double seconds = 0, server_cpu_ns_per_query = 0;
};

Throughput pipelined(int fd, const Workload &w, size_t window, uint64_t max_queries, double max_seconds) {
  std::string cur, next;
  std::vector<char> answers;
  Throughput t;
  const uint64_t proc0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), self0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  const uint64_t start = clock_ns(CLOCK_MONOTONIC);
  const uint64_t stop_at = start + static_cast<uint64_t>(max_seconds * 1e9);
  size_t line = 0;
  fill_window(w, line, window, &cur);
  line += window;
  send_all(fd, cur.data(), cur.size());
  uint64_t in_flight = window, sent = window;
  while (in_flight > 0) {
    // Keep the next window in flight while the answers of this one are read.
    size_t next_count = 0;
    if (sent < max_queries && clock_ns(CLOCK_MONOTONIC) < stop_at) {
      next_count = window;
      fill_window(w, line, next_count, &next);
      line += next_count;
      send_all(fd, next.data(), next.size());
      sent += next_count;
    }
    t.ok += read_answers(fd, window, &answers);
    t.queries += window;
    in_flight = next_count;
  }
  t.seconds = static_cast<double>(clock_ns(CLOCK_MONOTONIC) - start) / 1e9;
  const uint64_t server_cpu =
      (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - proc0) - (clock_ns(CLOCK_THREAD_CPUTIME_ID) - self0);
  t.server_cpu_ns_per_query = static_cast<double>(server_cpu) / static_cast<double>(t.queries);
  return t;
}

struct Latency {
  uint64_t queries = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
};

Latency unpipelined(int fd, const Workload &w, uint64_t max_queries, double max_seconds) {
  std::vector<uint64_t> rtt;
  rtt.reserve(max_queries);
  std::vector<char> answer;
  const uint64_t stop_at = clock_ns(CLOCK_MONOTONIC) + static_cast<uint64_t>(max_seconds * 1e9);
  for (uint64_t i = 0; i < max_queries; i++) {
    const char *q = w.lines.data() + (i % w.n) * w.len;
    const uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
    send_all(fd, q, w.len);
    read_answers(fd, 1, &answer);
    const uint64_t t1 = clock_ns(CLOCK_MONOTONIC);
    rtt.push_back(t1 - t0);
    if (t1 >= stop_at) break;
  }
  std::sort(rtt.begin(), rtt.end());
  auto pct = [&](double p) {
    return static_cast<double>(rtt[static_cast<size_t>(p * static_cast<double>(rtt.size() - 1))]) / 1e3;
  };
  return {rtt.size(), pct(0.50), pct(0.99), pct(0.999), static_cast<double>(rtt.back()) / 1e3};
}

// The floor of a unix-socket round trip: one thread, blocking accept, recv and send, "OK\n"
// per complete line received; no parsing, no table, no event loop. It serves one client,
// until that client closes its connection.
class EchoServer : dt::NoCopy {
 public:
  explicit EchoServer(const std::string &path) : path_(path) {
    lfd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
    if (lfd_ < 0 || bind(lfd_, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 || listen(lfd_, 4) != 0)
      die("echo server on %s: %s", path.c_str(), strerror(errno));
    thread_ = std::thread([this] { serve(); });
  }
  ~EchoServer() {
    thread_.join();  // the client has closed: the thread is done
    close(lfd_);
    unlink(path_.c_str());
  }

 private:
  void serve() {
    const int fd = accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    char buf[4096], out[3 * sizeof buf];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) {
      size_t lines = 0;
      for (ssize_t i = 0; i < n; i++) lines += buf[i] == '\n';
      for (size_t i = 0; i < lines; i++) memcpy(out + 3 * i, "OK\n", 3);
      if (lines && send(fd, out, 3 * lines, MSG_NOSIGNAL) < 0) break;
    }
    close(fd);
  }
  std::string path_;
  int lfd_ = -1;
  std::thread thread_;
};

// What the options set.
struct BenchOptions {
  double seconds = 2;
  uint64_t window = 4096, max_queries = 20'000'000;
  std::string pin = "auto";
};

// Returns -1 to go on, else the exit code (help printed, or the error).
int parse_query_bench_args(int argc, char **argv, BenchOptions *o) {
  const dt::CommandSpec spec(
      "query_bench", "Usage: query_bench [--seconds S] [--window W] [--queries N] [--cpus auto|split|same|none]\n\n",
      {
          {"seconds", 0, "S", "time cap of each measurement, 1 to 60 (default 2)",
           [o](const std::string &v, std::string *why) {
             uint64_t n = 0;
             return dt::parse_count(v, 1, 60, &n, why) && (o->seconds = static_cast<double>(n), true);
           }},
          {"window", 0, "W", "queries per pipelined window (default 4096)", dt::count_into(&o->window, 1, 100000)},
          {"queries", 0, "N", "query cap of each pipelined run (default 20000000; latency: 200000)",
           dt::count_into(&o->max_queries, 1000, 1'000'000'000)},
          {"cpus", 0, "MODE",
           "split: server thread on CPU 0, client on CPU 1; same: both on CPU 0;\nnone: no pinning; auto (default): "
           "split for throughput (one core for\nthe server), none for latency (a cross-CPU wakeup costs ~10 us in a "
           "VM)",
           [o](const std::string &v, std::string *why) {
             if (v != "auto" && v != "split" && v != "same" && v != "none")
               return *why = "'" + v + "' is not one of auto, split, same, none", false;
             return o->pin = v, true;
           }},
      });
  return dt::parse_subcommand(spec, argc, argv);
}

// Where the server thread and the client run, for the tables' headings.
const char *placement(const std::string &mode) {
  return mode == "split"  ? "server thread on CPU 0, client on CPU 1"
         : mode == "same" ? "server thread and client on CPU 0"
                          : "server thread and client unpinned";
}

struct Transport {
  const char *name;
  std::string path;
  uint16_t port;
};

// One connection per transport and workload pipelining windows of queries; prints a row each
// and returns the best queries/s.
double throughput_runs(const dt::QueryServer &server, const std::vector<Workload> &loads,
                       const std::vector<Transport> &transports, const BenchOptions &opt, const std::string &pin) {
  printf("Throughput, one connection pipelining windows of %llu queries (%s)\n",
         static_cast<unsigned long long>(opt.window), placement(pin));
  printf("%-9s %-22s %12s %8s %14s %16s %7s\n", "transport", "tags", "queries", "seconds", "queries/s",
         "server ns/query", "OK %");
  double best_qps = 0;
  for (const Transport &tr : transports) {
    for (const Workload &w : loads) {
      if (w.n == 1'000'000 && tr.port) continue;  // the 1M-tag table is measured once (unix)
      const int fd = connect_to(tr.path, tr.port);
      const dt::QueryCounters before = server.counters();
      const Throughput t = pipelined(fd, w, opt.window, opt.max_queries, opt.seconds);
      const dt::QueryCounters after = server.counters();
      close(fd);
      if (after.answers() - before.answers() != t.queries)
        die("the server counted %llu answers, the client read %llu",
            static_cast<unsigned long long>(after.answers() - before.answers()),
            static_cast<unsigned long long>(t.queries));
      const double qps = static_cast<double>(t.queries) / t.seconds;
      best_qps = std::max(best_qps, qps);
      printf("%-9s %-22s %12llu %8.2f %14.0f %16.0f %7.1f\n", tr.name, w.label.c_str(),
             static_cast<unsigned long long>(t.queries), t.seconds, qps, t.server_cpu_ns_per_query,
             100.0 * static_cast<double>(t.ok) / static_cast<double>(t.queries));
    }
  }
  return best_qps;
}

struct LatencyFigures {
  Latency echo, unix_hot;  // the bare echo server; the query server over unix, one hot tag
  double worst_p99 = 0;
};

void print_latency_row(const char *transport, const std::string &tags, const Latency &l) {
  printf("%-9s %-22s %10llu %8.1f %8.1f %8.1f %8.1f\n", transport, tags.c_str(),
         static_cast<unsigned long long>(l.queries), l.p50_us, l.p99_us, l.p999_us, l.max_us);
}

// One query at a time against a bare echo server (the floor), then against the query server
// with the first two workloads over each transport; prints a row each.
LatencyFigures latency_runs(const std::string &dir, const std::vector<Workload> &loads,
                            const std::vector<Transport> &transports, double seconds, const std::string &pin) {
  printf("\nLatency, one query at a time (send, wait for the answer), microseconds (%s)\n", placement(pin));
  printf("%-9s %-22s %10s %8s %8s %8s %8s\n", "transport", "tags", "queries", "p50", "p99", "p99.9", "max");
  LatencyFigures f;
  {
    EchoServer es(dir + "/echo.sock");
    const int fd = connect_to(dir + "/echo.sock", 0);
    f.echo = unpipelined(fd, loads[0], 200'000, seconds);
    close(fd);
  }
  print_latency_row("unix", "bare echo server", f.echo);
  for (const Transport &tr : transports) {
    for (size_t i = 0; i < 2; i++) {
      const Workload &w = loads[i];
      const int fd = connect_to(tr.path, tr.port);
      const Latency l = unpipelined(fd, w, 200'000, seconds);
      close(fd);
      f.worst_p99 = std::max(f.worst_p99, l.p99_us);
      if (i == 0 && !tr.port) f.unix_hot = l;
      print_latency_row(tr.name, w.label, l);
    }
  }
  return f;
}

// What the server and the table did over all runs, the peak memory, and the goals.
void print_summary(const dt::QueryCounters &q, const dt::TagCounters &tc, double best_qps, const LatencyFigures &f) {
  printf(
      "\nserver: %llu answers in %llu batches (%.0f queries per batch), %llu connections; "
      "table: %llu buckets, %llu evicted\n",
      static_cast<unsigned long long>(q.answers()), static_cast<unsigned long long>(q.batches),
      static_cast<double>(q.answers()) / static_cast<double>(std::max<uint64_t>(q.batches, 1)),
      static_cast<unsigned long long>(q.connections_accepted), static_cast<unsigned long long>(tc.buckets),
      static_cast<unsigned long long>(tc.evicted_full + tc.evicted_active));
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  printf("memory: %.0f MiB peak RSS (the table of %llu buckets, the workloads' query text, buffers)\n",
         static_cast<double>(ru.ru_maxrss) / 1024, static_cast<unsigned long long>(tc.buckets));
  const Latency &hot = f.unix_hot, &echo = f.echo;
  const double p50x = hot.p50_us / echo.p50_us, p99x = hot.p99_us / echo.p99_us;
  printf(
      "goals: pipelined > 1,000,000 queries/s: %s (best %.0f); unpipelined unix, 1 hot tag, against the bare echo\n"
      "  server: p50 %.2fx (%.1f / %.1f us, goal <= 1.5x: %s), p99 %.2fx (%.1f / %.1f us); worst p99 %.1f us\n",
      best_qps > 1e6 ? "met" : "NOT met", best_qps, p50x, hot.p50_us, echo.p50_us, p50x <= 1.5 ? "met" : "NOT met",
      p99x, hot.p99_us, echo.p99_us, f.worst_p99);
}

}  // namespace

int main(int argc, char **argv) {
  BenchOptions opt;
  if (int code = parse_query_bench_args(argc, argv, &opt); code >= 0) return code;
  std::string pin = opt.pin;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);

  char dir_tmpl[] = "/tmp/dthrottle-query-bench.XXXXXX";
  if (!mkdtemp(dir_tmpl)) die("mkdtemp: %s", strerror(errno));
  const std::string dir = dir_tmpl, sock = dir + "/query.sock";

  // Buckets: the hot tag is throttled (1000/s, burst 100), users get 10/s, burst 20.
  dt::TagTable::Options topt;
  topt.max_buckets = 2'000'000;
  dt::TagTable table(topt);
  std::string err;
  if (!table.replace_rules({{"hot", 1000, 100}, {"user:", 10, 20}}, &err)) die("%s", err.c_str());

  // auto: the throughput runs split, the latency runs unpinned.
  const bool auto_pin = pin == "auto";
  if (auto_pin) pin = cpus >= 2 ? "split" : "none";
  if (pin != "none") pin_to_cpu(0);  // the server thread inherits CPU 0
  dt::QueryServerConfig cfg;
  cfg.unix_path = sock;
  cfg.tcp_listen = "127.0.0.1:0";
  auto server = dt::QueryServer::start(cfg, table, &err);
  if (!server) die("%s", err.c_str());
  if (pin == "split") pin_to_cpu(1);

  const std::vector<Workload> loads = {hot_tag(), distinct_tags(100'000), distinct_tags(1'000'000)};
  const std::vector<Transport> transports = {{"unix", sock, 0}, {"tcp", "", server->tcp_port()}};

  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  printf("query_bench: QueryServer + TagTable in-process; %ld CPUs, load average %.2f before the runs\n", cpus,
         load[0]);
  printf("rules: hot = 1000/s burst 100, user: = 10/s burst 20; each run at most %.0f s\n\n", opt.seconds);
  const double best_qps = throughput_runs(*server, loads, transports, opt, pin);

  if (auto_pin && pin == "split") {
    unpin_all_threads(cpus);
    pin = "none";
  }
  const LatencyFigures lat = latency_runs(dir, loads, transports, opt.seconds, pin);

  const dt::QueryCounters q = server->counters();
  server.reset();
  rmdir(dir.c_str());
  print_summary(q, table.counters(dt::mono_now_ns()), best_qps, lat);
  return 0;
}
