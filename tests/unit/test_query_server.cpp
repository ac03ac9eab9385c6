// test_query_server.cpp - the query socket (agent/query/query_server.h) over real unix and
// loopback TCP sockets, byte for byte: answers, pipelining, errors, connection and
// backlog bounds; and the C++ client (include/dthrottle/client/client.hpp) against it,
// including its fail-safe behaviour with no server and with a server that never answers.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "dthrottle/client/client.hpp"
#include "query/query_server.h"
#include "rules/tags.h"
#include "temp_dir.h"
#include "test_sockets.h"

namespace {

using namespace std::chrono_literals;

constexpr double kNoRefill = 0.000001;

using dt::test::TempDir;  // a scratch directory for sockets

using dt::test::connect_tcp;
using dt::test::connect_unix;
using dt::test::read_n;
using dt::test::send_all;
using dt::test::set_timeouts;

// A unix listening socket that never accepts: connections complete in its backlog.
int listen_unix(const std::string &path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  if (bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 || listen(fd, 16) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `queries` and reads `n` bytes of answers: what came back, or a note that the
// queries could not be sent (the comparison with the answers wanted then fails).
std::string exchange(int fd, const std::string &queries, size_t n) {
  if (!send_all(fd, queries)) return "(cannot send '" + queries + "': " + strerror(errno) + ")";
  return read_n(fd, n);
}

using dt::test::at_eof;
using dt::test::eventually;  // polls for up to 2 s

std::string repeat(const std::string &s, int n) {
  std::string out;
  for (int i = 0; i < n; i++) out += s;
  return out;
}

class QueryServerTest : public ::testing::Test {
 protected:
  void start(const std::vector<dt::TagRule> &rules, dt::QueryServerConfig cfg = {}) {
    std::string err;
    ASSERT_FALSE(dir.path().empty()) << "mkdtemp failed";
    server.reset();  // a restart: a new agent, with new buckets
    table = std::make_unique<dt::TagTable>();
    ASSERT_TRUE(table->replace_rules(rules, &err)) << err;
    cfg.unix_path = sock();
    cfg.tcp_listen = "127.0.0.1:0";
    server = dt::QueryServer::start(cfg, *table, &err);
    ASSERT_TRUE(server) << "server did not start: " << err;
    ASSERT_NE(server->tcp_port(), 0) << "no TCP port bound";
  }
  std::string sock() const { return dir.file("query.sock"); }
  int client() {
    int fd = connect_unix(sock());
    EXPECT_GE(fd, 0) << "cannot connect to " << sock();
    fds.push_back(fd);
    return fd;
  }
  void TearDown() override {
    for (int fd : fds)
      if (fd >= 0) close(fd);
    server.reset();
  }

  TempDir dir{"dtquery-test"};
  std::unique_ptr<dt::TagTable> table;
  std::unique_ptr<dt::QueryServer> server;  // declared after the table it uses
  std::vector<int> fds;
};

TEST_F(QueryServerTest, AnswersOkThenNoOverUnixAndTcp) {
  start({{"", kNoRefill, 2}});
  int u = client();
  EXPECT_EQ(exchange(u, "a\n", 3), "OK\n");
  EXPECT_EQ(exchange(u, "a\n", 3), "OK\n");
  EXPECT_EQ(exchange(u, "a\n", 3), "NO\n") << "burst 2 is spent";
  int t = connect_tcp(server->tcp_port());
  ASSERT_GE(t, 0) << "cannot connect over TCP";
  fds.push_back(t);
  EXPECT_EQ(exchange(t, "a\nb\n", 6), "NO\nOK\n") << "TCP clients share the same buckets";
  const dt::QueryCounters c = server->counters();
  EXPECT_EQ(c.answered_ok, 3u);
  EXPECT_EQ(c.answered_no, 2u);
  EXPECT_EQ(c.connections_accepted, 2u);
  EXPECT_EQ(c.connections_open, 2u);
}

TEST_F(QueryServerTest, PipelinedQueriesAreAnsweredInOrder) {
  start({{"p:", kNoRefill, 600}});
  int fd = client();
  ASSERT_TRUE(send_all(fd, repeat("p:x\n", 1000)));
  const std::string got = read_n(fd, 3000);
  EXPECT_EQ(got, repeat("OK\n", 600) + repeat("NO\n", 400));
  // Interleaved tags: each has its own bucket.
  EXPECT_EQ(exchange(fd, "p:y\nnorule\np:x\np:y\n", 12), "OK\nOK\nNO\nOK\n");
  EXPECT_LE(server->counters().batches, 10u) << "pipelined queries are answered in batches, not one by one";
}

TEST_F(QueryServerTest, LargeWriteThenReadWithinSocketBuffersIsServed) {
  start({{"", 1, 1000000}});
  int fd = client();
  // 40,000 queries in one write before reading: 120 kB of answers, within what the
  // kernel buffers, so the client is not taken for one that never reads.
  EXPECT_EQ(exchange(fd, repeat("big\n", 40000), 120000), repeat("OK\n", 40000));
  EXPECT_EQ(server->counters().backlog_disconnects, 0u);
}

TEST_F(QueryServerTest, TagSplitAcrossWritesIsOneQuery) {
  start({{"", kNoRefill, 5}});
  int fd = client();
  ASSERT_TRUE(send_all(fd, "spl"));
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(send_all(fd, "it\nRESERVE sp"));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(exchange(fd, "lit\n", 6), "OK\nOK\n");
  EXPECT_EQ(table->tokens_milli("split", dt::mono_now_ns()).value_or(-1) / 1000, 3) << "two tokens of 'split' taken";
  EXPECT_FALSE(table->tokens_milli("spl", dt::mono_now_ns())) << "no bucket for a fragment";
}

TEST_F(QueryServerTest, EmptyLineIsAnErrorButKeepsTheConnection) {
  start({{"", kNoRefill, 5}});
  int fd = client();
  EXPECT_EQ(exchange(fd, "a\n\nRESERVE \nb\n", 34), "OK\nERR empty tag\nERR empty tag\nOK\n");
  EXPECT_EQ(exchange(fd, "a\n", 3), "OK\n") << "still served after the errors";
  EXPECT_EQ(server->counters().err_empty, 2u);
}

TEST_F(QueryServerTest, BusyLinesAreAnsweredInPlaceByTheHandler) {
  std::vector<std::string> signals;  // written by the query thread, read after the answers
  dt::QueryServerConfig cfg;
  cfg.busy = [&signals](std::string_view name, uint64_t) {
    signals.emplace_back(name);
    return name == "api" || name == "user:7";
  };
  start({{"", kNoRefill, 1}}, cfg);
  int fd = client();
  ASSERT_TRUE(send_all(fd, "a\nBUSY api\nBUSY nope\n\nBUSY user:7\na\nBUSY \n"));
  // "BUSY " with no name is an ordinary (odd) tag with a bucket of its own, not a signal.
  EXPECT_EQ(read_n(fd, 32), "OK\nOK\nNO\nERR empty tag\nOK\nNO\nOK\n")
      << "busy answers must come in line order between the queries";
  EXPECT_EQ(signals, (std::vector<std::string>{"api", "nope", "user:7"}));
  const dt::QueryCounters c = server->counters();
  EXPECT_EQ(c.busy_taken, 2u);
  EXPECT_EQ(c.busy_unknown, 1u);
  EXPECT_EQ(c.answered_ok, 2u) << "BUSY lines are not tag queries (only 'a' and 'BUSY ' are)";
}

TEST_F(QueryServerTest, BusyWithoutHandlerAnswersNo) {
  start({{"", kNoRefill, 5}});
  int fd = client();
  EXPECT_EQ(exchange(fd, "BUSY api\n", 3), "NO\n");
  EXPECT_EQ(server->counters().busy_unknown, 1u);
}

TEST_F(QueryServerTest, TagOver1024BytesIsRefusedAndClosed) {
  start({{"", kNoRefill, 5}});
  int fd = client();
  const std::string max_tag(1024, 'm');
  EXPECT_EQ(exchange(fd, max_tag + "\nRESERVE " + max_tag + "\n", 6), "OK\nOK\n") << "1024 bytes is the longest tag";
  EXPECT_EQ(exchange(fd, "x\n" + std::string(1025, 'l') + "\nafter\n", 20), "OK\nERR tag too long\n")
      << "the answer before the error, then the error";
  EXPECT_TRUE(at_eof(fd)) << "the server closes after a too long tag";
  // A line that is already too long is refused before its newline arrives.
  int fd2 = client();
  EXPECT_EQ(exchange(fd2, std::string(3000, 'z'), 17), "ERR tag too long\n");
  EXPECT_TRUE(at_eof(fd2));
  EXPECT_EQ(server->counters().err_too_long, 2u);
  EXPECT_EQ(server->counters().connections_open, 2u) << "both wait for the client to close (lingering close)";
  close(fd2);
  fds.back() = -1;
  EXPECT_TRUE(eventually([&] { return server->counters().connections_open == 1; }))
      << "a closing connection is released when its client closes";
}

TEST_F(QueryServerTest, NulByteIsRefusedAndClosed) {
  start({{"", kNoRefill, 5}});
  int fd = client();
  EXPECT_EQ(exchange(fd, std::string("ok\nba\0d\nafter\n", 14), 16), "OK\nERR nul byte\n");
  EXPECT_TRUE(at_eof(fd)) << "the server closes after a NUL byte";
  EXPECT_EQ(server->counters().err_nul, 1u);
  EXPECT_FALSE(table->tokens_milli("after", dt::mono_now_ns())) << "nothing after the error is answered";
}

TEST_F(QueryServerTest, ReserveAnswersOkWaitOrNo) {
  dt::QueryServerConfig cfg;
  cfg.max_reserve_wait_ns = 250'000'000;
  start({{"r:", 10, 1}}, cfg);  // a token every 100 ms
  int fd = client();
  ASSERT_TRUE(send_all(fd, "RESERVE r:a\nRESERVE r:a\nRESERVE r:a\nRESERVE r:a\nr:a\nRESERVE web\n"));
  std::string got = read_n(fd, 3);
  EXPECT_EQ(got, "OK\n") << "a token now";
  std::string w1, w2;
  char buf[64];
  FILE *f = fdopen(dup(fd), "r");
  ASSERT_TRUE(f);
  ASSERT_TRUE(fgets(buf, sizeof buf, f));
  w1 = buf;
  ASSERT_TRUE(fgets(buf, sizeof buf, f));
  w2 = buf;
  // The queries may span two reads: allow for a millisecond between them.
  EXPECT_TRUE(w1 == "WAIT 100\n" || w1 == "WAIT 99\n") << w1;
  EXPECT_TRUE(w2 == "WAIT 200\n" || w2 == "WAIT 199\n") << w2;
  ASSERT_TRUE(fgets(buf, sizeof buf, f));
  EXPECT_STREQ(buf, "NO\n") << "300 ms is over the 250 ms max wait";
  ASSERT_TRUE(fgets(buf, sizeof buf, f));
  EXPECT_STREQ(buf, "NO\n") << "a plain query finds the tokens reserved";
  ASSERT_TRUE(fgets(buf, sizeof buf, f));
  EXPECT_STREQ(buf, "OK\n") << "no rule: proceed now";
  fclose(f);
  const dt::QueryCounters c = server->counters();
  EXPECT_EQ(c.answered_wait, 2u);
  EXPECT_EQ(c.answered_ok, 2u);
  EXPECT_EQ(c.answered_no, 2u);
}

TEST_F(QueryServerTest, ConnectionsOverTheLimitAreAcceptedAndClosed) {
  dt::QueryServerConfig cfg;
  cfg.max_connections = 2;
  start({{"", kNoRefill, 100}}, cfg);
  int a = client(), b = client();
  for (int fd : {a, b}) {
    ASSERT_TRUE(send_all(fd, "x\n"));
    ASSERT_EQ(read_n(fd, 3), "OK\n");
  }
  int c = client();
  EXPECT_TRUE(at_eof(c)) << "the third connection is closed at once";
  EXPECT_EQ(server->counters().connections_refused, 1u);
  EXPECT_EQ(exchange(a, "x\n", 3), "OK\n") << "the others are still served";
  close(b);
  fds[1] = -1;
  ASSERT_TRUE(eventually([&] { return server->counters().connections_open == 1; }));
  int d = client();
  EXPECT_EQ(exchange(d, "x\n", 3), "OK\n") << "a slot freed by a close is usable again";
}

TEST_F(QueryServerTest, ClientThatDoesNotReadIsDisconnectedOthersAreServed) {
  dt::QueryServerConfig cfg;
  cfg.max_backlog_bytes = 4096;
  start({{"", 1000000, 1000000000}}, cfg);
  int hog = client();
  int other = client();
  fcntl(hog, F_SETFL, O_NONBLOCK);
  const std::string chunk = repeat("h\n", 32768);
  bool cut_off = false;
  // Send up to 64 MiB without ever reading; the server must cut us off long before.
  for (int i = 0; i < 1024 && !cut_off; i++) {
    const ssize_t n = send(hog, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{hog, POLLOUT, 0};
      poll(&p, 1, 10);
      if (p.revents & (POLLERR | POLLHUP)) cut_off = true;
    } else if (n < 0) {
      cut_off = true;
    }
    ASSERT_TRUE(send_all(other, "o\n")) << "round " << i;
    ASSERT_EQ(read_n(other, 3), "OK\n") << "the well-behaved client is answered meanwhile, round " << i;
    cut_off = cut_off || server->counters().backlog_disconnects > 0;
  }
  EXPECT_TRUE(cut_off) << "the client that never reads was not disconnected";
  EXPECT_TRUE(eventually([&] { return server->counters().backlog_disconnects == 1; }));
  EXPECT_EQ(server->counters().connections_open, 1u);
}

TEST_F(QueryServerTest, ManyClientsInterleaved) {
  start({{"m:", kNoRefill, 1}});
  constexpr int kClients = 64;
  std::vector<int> c;
  for (int i = 0; i < kClients; i++) c.push_back(client());
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < kClients; i++) ASSERT_TRUE(send_all(c[i], "m:" + std::to_string(i) + "\n"));
  for (int i = 0; i < kClients; i++) EXPECT_EQ(read_n(c[i], 6), "OK\nNO\n") << "client " << i;
  EXPECT_EQ(server->counters().connections_open, uint64_t{kClients});
}

TEST_F(QueryServerTest, HalfClosedClientGetsItsAnswers) {
  start({{"", kNoRefill, 5}});
  int fd = client();
  ASSERT_TRUE(send_all(fd, "a\nb\nincomplete"));
  shutdown(fd, SHUT_WR);
  EXPECT_EQ(read_n(fd, 6), "OK\nOK\n");
  EXPECT_TRUE(at_eof(fd)) << "then the server closes; a line without newline is no query";
}

TEST_F(QueryServerTest, StaleSocketIsReplacedLiveOneRefused) {
  ASSERT_FALSE(dir.path().empty());
  // A socket file left by a crashed server.
  int stale = listen_unix(sock());
  ASSERT_GE(stale, 0);
  close(stale);
  start({{"", kNoRefill, 5}});
  dt::QueryServerConfig cfg;
  cfg.unix_path = sock();
  std::string err;
  dt::TagTable other;
  EXPECT_FALSE(dt::QueryServer::start(cfg, other, &err)) << "two servers on one socket";
  EXPECT_NE(err.find("another server"), std::string::npos) << err;
  int fd = client();
  EXPECT_EQ(exchange(fd, "a\n", 3), "OK\n") << "the first server is unharmed";
  cfg.unix_path = dir.file("plain");
  close(open(cfg.unix_path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  EXPECT_FALSE(dt::QueryServer::start(cfg, other, &err));
  EXPECT_NE(err.find("not a socket"), std::string::npos) << err;
  cfg.unix_path.clear();
  cfg.tcp_listen = "127.0.0.1";
  EXPECT_FALSE(dt::QueryServer::start(cfg, other, &err)) << "no port";
  server.reset();
  struct stat st {};
  EXPECT_NE(stat(sock().c_str(), &st), 0) << "the socket file is removed on stop";
}

// --- the C++ client ---------------------------------------------------------------------------

// A clock that moves only when the test says: the back-off tests then hold on a machine
// of any speed (no margin between a sleep and a back-off).
struct FakeClock {
  std::chrono::steady_clock::time_point now{std::chrono::hours(1)};
  void advance(std::chrono::milliseconds d) { now += d; }
};

// Back-off 100 ms doubling to 200 ms, timed by `clock`.
dthrottle::ClientOptions fast_backoff(FakeClock &clock) {
  dthrottle::ClientOptions o;
  o.timeout = 50ms;
  o.backoff_initial = 100ms;
  o.backoff_max = 200ms;
  o.clock = [&clock] { return clock.now; };
  return o;
}

class QueryClientTest : public QueryServerTest {};

TEST_F(QueryClientTest, AllowsThenThrottlesOverUnixAndTcp) {
  start({{"c:", kNoRefill, 2}});
  dthrottle::Client unix_client(sock());
  EXPECT_TRUE(unix_client.allow("c:1"));
  EXPECT_TRUE(unix_client.allow("c:1"));
  EXPECT_FALSE(unix_client.allow("c:1")) << "burst 2 spent";
  dthrottle::Client tcp_client("127.0.0.1:" + std::to_string(server->tcp_port()));
  EXPECT_FALSE(tcp_client.allow("c:1"));
  EXPECT_TRUE(tcp_client.allow("c:2"));
  dthrottle::Client prefixed("unix:" + sock());
  EXPECT_TRUE(prefixed.allow("c:3"));
  const dthrottle::ClientStats s = unix_client.stats();
  EXPECT_EQ(s.answered, 3u);
  EXPECT_EQ(s.connects, 1u) << "one connection for all queries";
  EXPECT_EQ(s.failures, 0u);
}

TEST_F(QueryClientTest, BusyReportsWhetherAnAdaptiveRuleTookIt) {
  dt::QueryServerConfig cfg;
  cfg.busy = [](std::string_view name, uint64_t) { return name == "api"; };
  start({{"", kNoRefill, 5}}, cfg);
  dthrottle::Client c(sock());
  EXPECT_TRUE(c.busy("api")) << "an adaptive rule took the signal";
  EXPECT_FALSE(c.busy("nope")) << "no adaptive rule by that name";
  EXPECT_FALSE(c.busy("a\nb")) << "an invalid name is not sent";
  EXPECT_TRUE(c.allow("BUSY api")) << "a tag the server would read as a signal is allowed without asking";
  const dthrottle::ClientStats s = c.stats();
  EXPECT_EQ(s.answered, 2u);
  EXPECT_EQ(s.invalid_tags, 2u);
  EXPECT_EQ(server->counters().busy_taken, 1u);
  EXPECT_EQ(server->counters().busy_unknown, 1u);
  server.reset();  // the agent goes away: a signal changes nothing, and does not block
  EXPECT_FALSE(c.busy("api"));
}

TEST_F(QueryClientTest, ThrottledCallsOnlyWhenAllowed) {
  start({{"", kNoRefill, 1}});
  dthrottle::Client c(sock());
  int calls = 0;
  EXPECT_TRUE(c.throttled("v", [&] { calls++; }));
  EXPECT_FALSE(c.throttled("v", [&] { calls++; }));
  EXPECT_EQ(calls, 1);
  std::optional<int> r = c.throttled("w", [] { return 42; });
  EXPECT_EQ(r, std::optional<int>(42));
  EXPECT_FALSE(c.throttled("w", [] { return 42; }).has_value());
}

TEST_F(QueryClientTest, ReserveReadsOkWaitNo) {
  dt::QueryServerConfig cfg;
  cfg.max_reserve_wait_ns = 150'000'000;
  start({{"", 10, 1}}, cfg);
  dthrottle::Client c(sock());
  EXPECT_EQ(c.reserve("r").kind, dthrottle::Reservation::Kind::Now);
  const dthrottle::Reservation w = c.reserve("r");
  EXPECT_EQ(w.kind, dthrottle::Reservation::Kind::Wait);
  EXPECT_GE(w.wait.count(), 90);
  EXPECT_LE(w.wait.count(), 100);
  const dthrottle::Reservation no = c.reserve("r");
  EXPECT_EQ(no.kind, dthrottle::Reservation::Kind::Denied) << "200 ms is over the max wait";
  EXPECT_FALSE(no.granted());
}

TEST_F(QueryClientTest, InvalidTagsAreAllowedWithoutAsking) {
  start({{"", kNoRefill, 1}});
  dthrottle::Client c(sock());
  EXPECT_TRUE(c.allow(""));
  EXPECT_TRUE(c.allow("a\nb"));
  EXPECT_TRUE(c.allow(std::string("a\0b", 3)));
  EXPECT_TRUE(c.allow(std::string(1025, 'x')));
  EXPECT_TRUE(c.allow("RESERVE x"));
  EXPECT_TRUE(c.reserve("").granted());
  EXPECT_EQ(c.stats().invalid_tags, 6u);
  EXPECT_EQ(c.stats().answered, 0u);
  EXPECT_EQ(server->counters().connections_accepted, 0u) << "nothing was sent";
  EXPECT_TRUE(c.allow(std::string(1024, 'x'))) << "1024 bytes is valid";
  EXPECT_EQ(c.stats().answered, 1u);
}

TEST_F(QueryClientTest, FailsSafeWithoutServerAndBacksOff) {
  ASSERT_FALSE(dir.path().empty());
  FakeClock clock;
  dthrottle::Client c(dir.file("nobody.sock"), fast_backoff(clock));
  EXPECT_TRUE(c.allow("t")) << "no agent: allow";
  EXPECT_TRUE(c.backing_off());
  EXPECT_TRUE(c.allow("t"));
  EXPECT_EQ(c.reserve("t").kind, dthrottle::Reservation::Kind::Now) << "no agent: proceed now";
  dthrottle::ClientStats s = c.stats();
  EXPECT_EQ(s.failures, 1u);
  EXPECT_EQ(s.backed_off, 2u) << "no connection attempt during the back-off";
  // The back-off doubles (100 ms, 200 ms) and is capped at backoff_max (200 ms): each
  // step is checked 1 ms before its end (still backing off) and at its end (retried).
  clock.advance(99ms);
  EXPECT_TRUE(c.backing_off()) << "1 ms before the end of the first back-off (100 ms)";
  clock.advance(1ms);
  EXPECT_FALSE(c.backing_off());
  EXPECT_TRUE(c.allow("t"));
  EXPECT_EQ(c.stats().failures, 2u) << "retried after the first back-off";
  clock.advance(199ms);
  EXPECT_TRUE(c.allow("t"));
  EXPECT_EQ(c.stats().failures, 2u) << "the second back-off is longer (200 ms)";
  clock.advance(1ms);
  EXPECT_TRUE(c.allow("t"));
  EXPECT_EQ(c.stats().failures, 3u);
  clock.advance(200ms);
  EXPECT_TRUE(c.allow("t"));
  EXPECT_EQ(c.stats().failures, 4u) << "capped at 200 ms, not 400 ms";
  EXPECT_EQ(c.stats().backed_off, 3u) << "one query fell in a back-off since";
}

TEST_F(QueryClientTest, FailsSafeWhenServerNeverAnswers) {
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.file("mute.sock");
  int lfd = listen_unix(path);
  ASSERT_GE(lfd, 0);
  FakeClock clock;  // stands still: the second query falls in the back-off however slow the machine
  dthrottle::Client c(path, fast_backoff(clock));
  EXPECT_TRUE(c.allow("slow")) << "a server that does not answer in time: allow";
  EXPECT_TRUE(c.allow("slow2"));
  const dthrottle::ClientStats s = c.stats();
  EXPECT_EQ(s.connects, 1u);
  EXPECT_EQ(s.failures, 1u);
  EXPECT_EQ(s.backed_off, 1u);
  int conn = accept(lfd, nullptr, nullptr);
  ASSERT_GE(conn, 0);
  set_timeouts(conn);
  EXPECT_EQ(read_n(conn, 100), "slow\n") << "one query, then the client hung up and backed off";
  close(conn);
  close(lfd);
}

TEST_F(QueryClientTest, ReconnectsAfterBackoffWhenTheAgentIsBack) {
  FakeClock clock;
  dthrottle::Client c(sock(), fast_backoff(clock));
  EXPECT_TRUE(c.allow("back"));
  EXPECT_EQ(c.stats().failures, 1u);
  start({{"", kNoRefill, 1}});
  EXPECT_TRUE(c.allow("back")) << "backing off: allowed without asking";
  EXPECT_EQ(c.stats().answered, 0u) << "no query during the back-off, the agent is back or not";
  clock.advance(100ms);
  EXPECT_TRUE(c.allow("back"));
  EXPECT_FALSE(c.allow("back")) << "answered by the agent now";
  // The agent restarts: the broken connection is one failure, then a new connection.
  server.reset();
  EXPECT_TRUE(c.allow("back")) << "connection lost: allow";
  EXPECT_EQ(c.stats().failures, 2u);
  start({{"", kNoRefill, 1}});
  clock.advance(100ms);  // the back-off was reset by the answers: 100 ms again
  EXPECT_TRUE(c.allow("back")) << "a new agent, a new full bucket";
  EXPECT_FALSE(c.allow("back"));
  EXPECT_EQ(c.stats().connects, 2u);
}

}  // namespace
