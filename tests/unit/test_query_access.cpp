// test_query_access.cpp - who may use the query socket (agent/query/query_listen.h and the
// admin gate of query_server.h): the socket's mode and group from its first moment, admin
// commands by peer uid (a child process as `nobody`), TCP never admin, idle connections
// closed, an idle connection evicted for a new one at the cap, the cap clamped to the
// descriptor limit, --query-listen's loopback rule; and the C++ client across an idle close
// and a refused BUSY.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "cli/cli.h"
#include "common/address.h"
#include "daemon/verify_command.h"
#include "dthrottle/client/client.hpp"
#include "query/query_listen.h"
#include "query/query_server.h"
#include "rules/config_file.h"
#include "rules/tags.h"
#include "temp_dir.h"
#include "test_sockets.h"

namespace {

using namespace std::chrono_literals;
using dt::test::TempDir;

constexpr uid_t kNobody = 65534;

using dt::test::connect_tcp;
using dt::test::connect_unix;

// Sends `line` and reads one answer line (with its '\n'); "" on EOF or timeout.
std::string ask(int fd, const std::string &line) {
  if (send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) return "(send failed)";
  std::string out;
  char c;
  while (recv(fd, &c, 1, 0) == 1) {
    out += c;
    if (c == '\n') break;
  }
  return out;
}

using dt::test::at_eof;

bool eventually(const std::function<bool()> &cond) { return dt::test::eventually(cond, 3000); }

// `line` sent on the unix socket `path` by a child process running as `uid`; its answer.
std::string ask_as(uid_t uid, const std::string &path, const std::string &line) {
  int p[2];
  if (pipe(p) != 0) return "(pipe failed)";
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    std::string answer = "(cannot drop to the uid)";
    if (setgroups(0, nullptr) == 0 && setresgid(uid, uid, uid) == 0 && setresuid(uid, uid, uid) == 0) {
      const int fd = connect_unix(path);
      answer = fd < 0 ? "(cannot connect: " + std::string(strerror(errno)) + ")" : ask(fd, line);
    }
    (void)!write(p[1], answer.data(), answer.size());
    _exit(0);
  }
  close(p[1]);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  waitpid(pid, nullptr, 0);
  return out;
}

class QueryAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir.path().empty()) << "mkdtemp failed";
    chmod(dir.path().c_str(), 0755);  // a child as nobody must reach the socket
    std::string err;
    ASSERT_TRUE(table.replace_rules({{"", 1000, 1000}}, &err)) << err;
  }
  void start(dt::QueryServerConfig cfg) {
    cfg.unix_path = dir.file("q.sock");
    cfg.tcp_listen = "127.0.0.1:0";
    cfg.busy = [this](std::string_view, uint64_t) { return busy_taken++, true; };
    std::string err;
    server = dt::QueryServer::start(cfg, table, &err);
    ASSERT_TRUE(server) << err;
  }
  std::string sock() const { return dir.file("q.sock"); }

  TempDir dir{"dt-query-access"};
  dt::TagTable table;
  std::unique_ptr<dt::QueryServer> server;
  std::atomic<int> busy_taken{0};
};

TEST_F(QueryAccessTest, SocketIs0660WithItsGroupFromTheStart) {
  dt::QueryServerConfig cfg;
  cfg.unix_gid = kNobody;  // nogroup on Debian
  if (!getgrgid(kNobody)) GTEST_SKIP() << "no group 65534 on this host";
  start(cfg);
  struct stat st {};
  ASSERT_EQ(stat(sock().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0660u) << "the default mode";
  EXPECT_EQ(st.st_gid, kNobody) << "the group given";
}

TEST_F(QueryAccessTest, ModeGivenIsTheSocketsMode) {
  dt::QueryServerConfig cfg;
  cfg.unix_mode = 0600;
  start(cfg);
  struct stat st {};
  ASSERT_EQ(stat(sock().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(QueryAccessTest, BusyFromAnUnlistedUidIsRefusedAndChangesNothing) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a client as nobody";
  dt::QueryServerConfig cfg;
  cfg.unix_mode = 0666;  // nobody may connect, not administer
  start(cfg);
  EXPECT_EQ(ask_as(kNobody, sock(), "BUSY api\n"), "ERR not allowed\n");
  EXPECT_EQ(ask_as(kNobody, sock(), "t\n"), "OK\n") << "queries stay open to whoever may connect";
  EXPECT_EQ(busy_taken, 0) << "the busy handler never ran";
  EXPECT_EQ(server->counters().admin_refused, 1u);
  const int root = connect_unix(sock());
  EXPECT_EQ(ask(root, "BUSY api\n"), "OK\n") << "root always may";
  EXPECT_EQ(busy_taken, 1);
  close(root);
}

TEST_F(QueryAccessTest, ListedUidMaySendBusy) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a client as nobody";
  dt::QueryServerConfig cfg;
  cfg.unix_mode = 0666;
  cfg.admin_uids = {kNobody};
  start(cfg);
  EXPECT_EQ(ask_as(kNobody, sock(), "BUSY api\n"), "OK\n");
  EXPECT_EQ(busy_taken, 1);
  EXPECT_EQ(server->counters().admin_refused, 0u);
}

TEST_F(QueryAccessTest, TcpPeersAreNeverAdmins) {
  start({});
  const int fd = connect_tcp(server->tcp_port());
  EXPECT_EQ(ask(fd, "BUSY api\n"), "ERR not allowed\n");
  EXPECT_EQ(ask(fd, "t\n"), "OK\n") << "the connection stays open after the refusal";
  EXPECT_EQ(busy_taken, 0);
  close(fd);
}

TEST_F(QueryAccessTest, AdminCommandsGoThroughTheSameGate) {
  dt::QueryServerConfig cfg;
  int bans = 0;
  cfg.admin_commands.push_back({"BAN", [&](std::string_view arg, uint64_t, uid_t) {
                                  bans++;
                                  return std::string(arg == "x" ? "OK\n" : "NO\n");
                                }});
  start(cfg);
  const int root = connect_unix(sock());
  EXPECT_EQ(ask(root, "BAN x\n"), "OK\n");
  EXPECT_EQ(ask(root, "BAN\n"), "OK\n") << "no argument: an ordinary tag";
  const int tcp = connect_tcp(server->tcp_port());
  EXPECT_EQ(ask(tcp, "BAN x\n"), "ERR not allowed\n");
  EXPECT_EQ(bans, 1);
  close(root);
  close(tcp);
}

// VERIFY (daemon/verify_command.h) on a verified map of its own: admins write it, anyone
// else is refused and writes nothing.
TEST_F(QueryAccessTest, VerifyIsForAdminsOnly) {
  const int map = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "verified", sizeof(dt_key), sizeof(dt_verified), 64, nullptr);
  if (map < 0) GTEST_SKIP() << "cannot create a BPF map (root needed): " << strerror(errno);
  dt::VerifyCommand verify;
  dt::QueryServerConfig cfg;
  cfg.unix_mode = 0666;  // nobody may connect, not administer
  cfg.admin_commands.push_back({"VERIFY", [&](std::string_view arg, uint64_t, uid_t) { return verify.run(arg); }});
  start(cfg);
  const int root = connect_unix(sock());
  EXPECT_EQ(ask(root, "VERIFY 198.18.0.2\n").substr(0, 14), "ERR not ready:") << "before the map is open";
  verify.set_map(map, 600'000'000'000ull);
  EXPECT_EQ(ask(root, "VERIFY 198.18.0.2 60\n"), "OK\n");
  EXPECT_EQ(ask(root, "VERIFY 198.18.0.0/24\n").substr(0, 19), "ERR not an address:");
  EXPECT_EQ(ask(root, "VERIFY 2001:2::1 601\n").substr(0, 11), "ERR bad ttl") << "longer than --verified-ttl";
  EXPECT_EQ(ask_as(kNobody, sock(), "VERIFY 198.18.0.3\n"), "ERR not allowed\n");
  const int tcp = connect_tcp(server->tcp_port());
  EXPECT_EQ(ask(tcp, "VERIFY 198.18.0.3\n"), "ERR not allowed\n");
  dt_key k;
  dt_verified v{};
  ASSERT_TRUE(dt::key_from_string("198.18.0.2", &k));
  k.rule = DT_VERIFIED_V4;
  ASSERT_EQ(bpf_map_lookup_elem(map, &k, &v), 0) << "the admin's source is verified";
  EXPECT_GT(v.expires_ns, 0u);
  ASSERT_TRUE(dt::key_from_string("198.18.0.3", &k));
  k.rule = DT_VERIFIED_V4;
  EXPECT_NE(bpf_map_lookup_elem(map, &k, &v), 0) << "a refused VERIFY wrote nothing";
  EXPECT_EQ(server->counters().admin_refused, 2u);
  close(root);
  close(tcp);
  close(map);
}

TEST(VerifyArg, AddressAndTtlWithinTheLocalTtl) {
  dt_key k;
  uint64_t ttl = 0;
  std::string err;
  ASSERT_TRUE(dt::parse_verify_arg("2001:2::9", 600'000'000'000ull, &k, &ttl, &err)) << err;
  EXPECT_EQ(k.rule, DT_VERIFIED_V6);
  EXPECT_EQ(ttl, 600'000'000'000ull) << "the default: --verified-ttl";
  ASSERT_TRUE(dt::parse_verify_arg("198.18.0.2 30", 600'000'000'000ull, &k, &ttl, &err)) << err;
  EXPECT_EQ(k.rule, DT_VERIFIED_V4);
  EXPECT_EQ(ttl, 30'000'000'000ull);
  for (const char *bad :
       {"", "nonsense", "198.18.0.2 0", "198.18.0.2 x", "198.18.0.2 -1", "198.18.0.2 1.5", "198.18.0.2 601"})
    EXPECT_FALSE(dt::parse_verify_arg(bad, 600'000'000'000ull, &k, &ttl, &err)) << "'" << bad << "' taken";
}

TEST_F(QueryAccessTest, IdleConnectionsAreClosed) {
  dt::QueryServerConfig cfg;
  cfg.idle_timeout_ns = 200'000'000;
  start(cfg);
  const int idle = connect_unix(sock()), busy = connect_unix(sock());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 6; i++) {  // 300 ms of queries keep `busy` open
    ASSERT_EQ(ask(busy, "t\n"), "OK\n");
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(at_eof(idle)) << "the idle connection was closed";
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 200ms);
  EXPECT_EQ(ask(busy, "t\n"), "OK\n") << "the active one was not";
  EXPECT_EQ(server->counters().idle_closed, 1u);
  close(idle);
  close(busy);
}

TEST_F(QueryAccessTest, AtTheCapAnIdleConnectionMakesRoomActiveOnesRefuse) {
  dt::QueryServerConfig cfg;
  cfg.max_connections = 2;
  cfg.evict_idle_ns = 100'000'000;
  start(cfg);
  const int a = connect_unix(sock()), b = connect_unix(sock());
  ASSERT_EQ(ask(a, "t\n"), "OK\n");
  ASSERT_EQ(ask(b, "t\n"), "OK\n");
  const int refused = connect_unix(sock());
  EXPECT_TRUE(at_eof(refused)) << "both connections just worked: the new one is refused";
  EXPECT_EQ(server->counters().connections_refused, 1u);
  std::this_thread::sleep_for(150ms);
  ASSERT_EQ(ask(b, "t\n"), "OK\n");  // b is active again, a idle
  const int c = connect_unix(sock());
  EXPECT_EQ(ask(c, "t\n"), "OK\n") << "the new connection took the idle one's place";
  EXPECT_TRUE(at_eof(a)) << "the idlest connection was closed";
  EXPECT_EQ(ask(b, "t\n"), "OK\n");
  EXPECT_EQ(server->counters().connections_evicted, 1u);
  for (int fd : {a, b, refused, c}) close(fd);
}

TEST_F(QueryAccessTest, AtTheCapOneUserHoldingMoreThanHalfMakesRoomForAnother) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a client as nobody";
  dt::QueryServerConfig cfg;
  cfg.max_connections = 4;
  cfg.evict_idle_ns = 60'000'000'000ull;  // nothing counts as idle here
  cfg.unix_mode = 0666;                   // nobody may connect
  start(cfg);
  // One user (root) holds every slot, half by the unix socket and half by TCP: counted as
  // one user (the TCP clients' sockets are root's), not as two holders of half each.
  int held[4] = {connect_unix(sock()), connect_unix(sock()), connect_tcp(server->tcp_port()),
                 connect_tcp(server->tcp_port())};
  for (int fd : held) ASSERT_EQ(ask(fd, "t\n"), "OK\n");
  EXPECT_EQ(ask_as(kNobody, sock(), "t\n"), "OK\n") << "another user gets a slot from the one holding 4 of 4";
  EXPECT_TRUE(at_eof(held[0])) << "the holder's least recently active connection made room";
  ASSERT_TRUE(eventually([&] { return server->counters().connections_open == 3; }));
  const int more_tcp = connect_tcp(server->tcp_port());
  EXPECT_EQ(ask(more_tcp, "t\n"), "OK\n") << "a free slot is anyone's";
  const int over = connect_tcp(server->tcp_port());
  EXPECT_TRUE(at_eof(over)) << "root, at the cap with every slot its own, takes none from itself";
  const dt::QueryCounters c = server->counters();
  EXPECT_EQ(c.connections_evicted, 1u);
  EXPECT_EQ(c.connections_refused, 1u);
  for (int fd : held) close(fd);
  close(more_tcp);
  close(over);
}

TEST_F(QueryAccessTest, ClientReconnectsAfterAnIdleCloseWithoutFailingOpen) {
  dt::QueryServerConfig cfg;
  cfg.idle_timeout_ns = 100'000'000;
  start(cfg);
  std::string err;
  ASSERT_TRUE(table.replace_rules({{"", 0.000001, 2}}, &err)) << err;
  dthrottle::Client client(sock(), {.timeout = 500ms});
  EXPECT_TRUE(client.allow("k"));
  ASSERT_TRUE(eventually([&] { return server->counters().idle_closed == 1; }));
  EXPECT_TRUE(client.allow("k")) << "second token";
  EXPECT_FALSE(client.allow("k")) << "asked, not allowed unasked: the bucket is empty";
  EXPECT_EQ(client.stats().failures, 0u);
  EXPECT_EQ(client.stats().connects, 2u);
}

TEST_F(QueryAccessTest, ClientTakesARefusedBusyAsAnAnswer) {
  start({});
  dthrottle::Client client("127.0.0.1:" + std::to_string(server->tcp_port()), {.timeout = 500ms});
  EXPECT_FALSE(client.busy("api"));
  EXPECT_EQ(client.stats().not_allowed, 1u);
  EXPECT_EQ(client.stats().failures, 0u);
  EXPECT_FALSE(client.backing_off());
  EXPECT_TRUE(client.allow("t"));
  EXPECT_EQ(client.stats().connects, 1u);
}

// --- options ------------------------------------------------------------------------

TEST(QueryAccessOptions, ConnectionCapFitsTheDescriptorLimit) {
  EXPECT_EQ(dt::clamp_connections(4096, 1024, 256), 768u);
  EXPECT_EQ(dt::clamp_connections(100, 1024, 256), 100u) << "under the limit: as asked";
  EXPECT_EQ(dt::clamp_connections(4096, 1u << 20, 256), 4096u);
  EXPECT_EQ(dt::clamp_connections(4096, 200, 256), 50u) << "the reserve leaves nothing: a quarter";
  EXPECT_EQ(dt::clamp_connections(4096, 2, 256), 1u);
  EXPECT_EQ(dt::query_fd_reserve(10), 276u) << "256 and two per peer or hub";
}

TEST(QueryAccessOptions, SocketMode) {
  unsigned mode = 0;
  std::string why;
  for (const auto &[good, want] : {std::pair{"0660", 0660u}, std::pair{"600", 0600u}}) {
    EXPECT_TRUE(dt::parse_socket_mode(good, &mode, &why)) << good;
    EXPECT_EQ(mode, want) << good;
  }
  for (const char *bad : {"", "0888", "4660", "rw", "07777", "0x1b6"}) {
    EXPECT_FALSE(dt::parse_socket_mode(bad, &mode, &why)) << bad;
    EXPECT_NE(why.find("octal"), std::string::npos) << why;
  }
}

TEST(QueryAccessOptions, GroupsAndUids) {
  gid_t gid = 1;
  std::string why;
  EXPECT_TRUE(dt::resolve_group("root", &gid, &why));
  EXPECT_EQ(gid, 0u);
  EXPECT_TRUE(dt::resolve_group("0", &gid, &why));
  EXPECT_FALSE(dt::resolve_group("no-such-group-dt", &gid, &why));
  EXPECT_NE(why.find("no group"), std::string::npos) << why;
  std::vector<uid_t> uids;
  EXPECT_TRUE(dt::parse_uid_list("0,1000,root", &uids, &why)) << why;
  EXPECT_EQ(uids, (std::vector<uid_t>{0, 1000, 0}));
  EXPECT_FALSE(dt::parse_uid_list("1000,,", &uids, &why));
  EXPECT_FALSE(dt::parse_uid_list("no-such-user-dt", &uids, &why));
  EXPECT_TRUE(dt::is_admin_uid(0, {}));
  EXPECT_TRUE(dt::is_admin_uid(geteuid(), {}));
  EXPECT_TRUE(dt::is_admin_uid(1234, {1234}));
  EXPECT_FALSE(dt::is_admin_uid(kNobody, {1234}));
}

TEST(QueryAccessOptions, QueryListenIsLoopbackUnlessAskedByName) {
  EXPECT_EQ(dt::query_listen_security_error("127.0.0.1:7800", false), "");
  EXPECT_EQ(dt::query_listen_security_error("[::1]:7800", false), "");
  EXPECT_EQ(dt::query_listen_security_error("7800", false), "") << "a bare port is loopback";
  EXPECT_EQ(dt::query_listen_security_error(":7800", false), "");
  EXPECT_EQ(dt::query_listen_security_error("127.0.0.2:7800", false), "") << "all of 127/8";
  for (const char *open : {"*:7800", "0.0.0.0:7800", "198.18.0.1:7800", "[::]:7800", "[2001:2::1]:7800"}) {
    const std::string why = dt::query_listen_security_error(open, false);
    EXPECT_NE(why.find("--query-insecure"), std::string::npos) << open << ": " << why;
    EXPECT_EQ(dt::query_listen_security_error(open, true), "") << open;
  }
  EXPECT_NE(dt::query_listen_security_error("", true).find("only makes sense"), std::string::npos);
  sockaddr_storage ss{};
  socklen_t len = 0;
  std::string err;
  ASSERT_TRUE(dt::parse_listen_address("7800", &ss, &len, &err)) << err;
  ASSERT_EQ(ss.ss_family, AF_INET);
  EXPECT_EQ(ntohl(reinterpret_cast<sockaddr_in *>(&ss)->sin_addr.s_addr), INADDR_LOOPBACK);
}

}  // namespace

namespace {

// "agent --iface lo --rate 10 --burst 5" and `extra`, through the agent's own parser.
dt::ParseOutcome parse_run(std::vector<std::string> extra, dt::RunOptions *opt, std::string *err) {
  dt::ArgvList a;
  for (const char *x : {"agent", "--iface", "lo", "--rate", "10", "--burst", "5"}) a.push(x);
  for (auto &x : extra) a.push(x);
  return dt::parse_run_options(a.argc(), a.argv(), opt, err);
}

TEST(QueryAccessOptions, RunOptionsDefaultsAndValues) {
  dt::RunOptions o;
  std::string err;
  ASSERT_EQ(parse_run({"--query-socket", "/tmp/q.sock"}, &o, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_EQ(o.query_socket_mode, 0660u);
  EXPECT_EQ(o.query_socket_gid, dt::default_socket_group());
  EXPECT_EQ(o.query_idle_timeout_ns, 60'000'000'000ull);
  EXPECT_TRUE(o.query_admin_uids.empty());
  dt::RunOptions p;
  ASSERT_EQ(parse_run({"--query-socket", "/tmp/q.sock", "--query-socket-mode", "0600", "--query-socket-group", "0",
                       "--query-admin-uids", "1000,root", "--query-admin-uids", "7", "--query-idle-timeout", "5s"},
                      &p, &err),
            dt::ParseOutcome::Ok)
      << err;
  EXPECT_EQ(p.query_socket_mode, 0600u);
  EXPECT_EQ(p.query_socket_gid, 0u);
  EXPECT_EQ(p.query_admin_uids, (std::vector<uint32_t>{1000, 0, 7})) << "repeatable, names resolved";
  EXPECT_EQ(p.query_idle_timeout_ns, 5'000'000'000ull);
}

TEST(QueryAccessOptions, RunOptionsRefusals) {
  const std::vector<std::pair<std::vector<std::string>, const char *>> cases = {
      {{"--query-listen", "0.0.0.0:7800"}, "--query-insecure"},
      {{"--query-listen", "*:7800"}, "--query-insecure"},
      {{"--query-insecure"}, "only makes sense with --query-listen"},
      {{"--query-socket-mode", "999"}, "octal"},
      {{"--query-socket-group", "no-such-group-dt"}, "no group"},
      {{"--query-admin-uids", "x,y"}, "neither a uid nor a user"},
      {{"--query-idle-timeout", "10ms"}, "from 100ms to 24h"},
  };
  for (const auto &[args, says] : cases) {
    dt::RunOptions o;
    std::string err;
    EXPECT_EQ(parse_run(args, &o, &err), dt::ParseOutcome::Error) << args[0];
    EXPECT_NE(err.find(says), std::string::npos) << args[0] << ": " << err;
  }
  dt::RunOptions o;
  std::string err;
  EXPECT_EQ(parse_run({"--query-listen", "0.0.0.0:7800", "--query-insecure"}, &o, &err), dt::ParseOutcome::Ok) << err;
}

}  // namespace
