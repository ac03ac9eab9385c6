// test_listen_watch.cpp - the listen-queue busy signal (agent/adaptive/listen_watch.h) against
// real loopback listeners, and its /proc/net/netstat parser on fixed text.
//
// Each socket test runs in a thread of its own that first enters a new network
// namespace (unshare(CLONE_NEWNET) moves only the calling thread, so the test process
// keeps its namespace), with only lo up: the namespace-wide overflow counter then sees
// nothing but the test's own connections, and the namespace dies with the thread.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "adaptive/listen_watch.h"

namespace {

using namespace std::chrono_literals;
using PortState = dt::ListenQueueWatch::PortState;

constexpr uint16_t kPort = 18080;      // the namespace is fresh: nothing else listens
constexpr uint16_t kIdlePort = 18081;  // watched, never listened on
constexpr uint32_t kBacklog = 2;
constexpr int kClients = 4;  // more than the queue holds (backlog + 1)

struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(Fd &&o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd &operator=(Fd &&o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

std::string errno_text(const char *what) { return std::string(what) + ": " + std::strerror(errno); }

bool bring_up_lo(std::string *err) {
  Fd s(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (s.fd < 0) return *err = errno_text("socket for ioctl"), false;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (ioctl(s.fd, SIOCGIFFLAGS, &ifr) != 0) return *err = errno_text("SIOCGIFFLAGS lo"), false;
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(s.fd, SIOCSIFFLAGS, &ifr) != 0) return *err = errno_text("SIOCSIFFLAGS lo up"), false;
  return true;
}

// Runs body in a new thread inside a new network namespace with lo up. Returns why
// the body could not run (a reason to skip), or "" once it ran. The body may set
// *skip itself, e.g. when the kernel has no IPv6.
std::string in_new_netns(const std::function<void(std::string *skip)> &body) {
  std::string skip;
  std::thread t([&] {
    if (unshare(CLONE_NEWNET) != 0) {
      skip = errno_text("unshare(CLONE_NEWNET) failed (tests need root)");
      return;
    }
    std::string err;
    if (!bring_up_lo(&err)) {
      ADD_FAILURE() << "cannot bring lo up in the test namespace: " << err;
      return;
    }
    body(&skip);
  });
  t.join();
  return skip;
}

sockaddr_storage loopback(int family, uint16_t port, socklen_t *len) {
  sockaddr_storage ss{};
  if (family == AF_INET) {
    auto *a = reinterpret_cast<sockaddr_in *>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    *len = sizeof(*a);
  } else {
    auto *a = reinterpret_cast<sockaddr_in6 *>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    a->sin6_addr = in6addr_loopback;
    *len = sizeof(*a);
  }
  return ss;
}

// A non-blocking listener on the family's loopback address; fd -1 and a sentence
// in *err (or *skip when the kernel has no IPv6) if not.
Fd make_listener(int family, uint16_t port, uint32_t backlog, std::string *err, std::string *skip) {
  Fd s(socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (s.fd < 0) {
    if (family == AF_INET6 && errno == EAFNOSUPPORT) *skip = "the kernel has no IPv6";
    else *err = errno_text("listener socket");
    return Fd();
  }
  int one = 1;
  if (family == AF_INET6) setsockopt(s.fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  socklen_t len;
  sockaddr_storage a = loopback(family, port, &len);
  if (bind(s.fd, reinterpret_cast<sockaddr *>(&a), len) != 0) {
    *err = errno_text("bind listener");
    return Fd();
  }
  if (listen(s.fd, static_cast<int>(backlog)) != 0) {
    *err = errno_text("listen");
    return Fd();
  }
  return s;
}

// Starts a connection and returns at once: the handshake completes (or its SYN is
// dropped) in the kernel whether or not anyone accepts.
Fd start_connect(int family, uint16_t port, std::string *err) {
  Fd c(socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (c.fd < 0) {
    *err = errno_text("client socket");
    return Fd();
  }
  socklen_t len;
  sockaddr_storage a = loopback(family, port, &len);
  if (connect(c.fd, reinterpret_cast<sockaddr *>(&a), len) != 0 && errno != EINPROGRESS) {
    *err = errno_text("connect");
    return Fd();
  }
  return c;
}

void expect_idle_port(const PortState &s) {
  EXPECT_EQ(s.port, kIdlePort) << "states must come in the order of the ports given";
  EXPECT_EQ(s.listeners, 0u) << "port " << s.port << " has no listener but the watch counted some";
  EXPECT_EQ(s.queued, 0u) << "a port without listener reported a queue";
  EXPECT_FALSE(s.full) << "a port without listener reported full";
  EXPECT_EQ(s.overflows, 0u) << "an overflow was blamed on a port without listener";
  EXPECT_FALSE(s.busy()) << "a port without listener reported busy";
}

// Empty queue, then filled by clients nobody accepts, then drained by accepting them.
void fill_and_drain(int family, std::string *skip) {
  const char *fam = family == AF_INET ? "IPv4" : "IPv6";
  std::string err;
  Fd listener = make_listener(family, kPort, kBacklog, &err, skip);
  if (!skip->empty()) return;
  ASSERT_GE(listener.fd, 0) << fam << ": " << err;

  dt::ListenQueueWatch watch({kPort, kIdlePort});
  std::vector<PortState> st;
  ASSERT_TRUE(watch.poll(&st, &err)) << fam << " first poll failed: " << err;
  ASSERT_EQ(st.size(), 2u) << "one state per watched port";
  EXPECT_EQ(st[0].port, kPort);
  EXPECT_EQ(st[0].listeners, 1u) << fam << ": the listener on port " << kPort << " was not seen";
  EXPECT_EQ(st[0].queued, 0u) << fam << ": nobody connected yet, yet a queue was reported";
  EXPECT_EQ(st[0].backlog, kBacklog) << fam << ": the backlog is not the one given to listen()";
  EXPECT_FALSE(st[0].full) << fam << ": an empty queue was reported full";
  EXPECT_FALSE(st[0].busy()) << fam << ": an idle listener was reported busy";
  expect_idle_port(st[1]);

  std::vector<Fd> clients;
  for (int i = 0; i < kClients; i++) {
    clients.push_back(start_connect(family, kPort, &err));
    ASSERT_GE(clients.back().fd, 0) << fam << " client " << i << ": " << err;
  }
  // Until the queue shows full and the refused SYN was counted, at most ~1 s (the
  // refused client retries after 1 s; the loop ends well before).
  PortState last;
  uint64_t overflows = 0;
  for (int i = 0; i < 50; i++) {
    ASSERT_TRUE(watch.poll(&st, &err)) << fam << " poll failed: " << err;
    last = st[0];
    overflows += last.overflows;
    expect_idle_port(st[1]);
    if (last.full && overflows > 0) break;
    std::this_thread::sleep_for(20ms);
  }
  std::printf(
      "[   INFO   ] %s, backlog %u, %d clients unaccepted: rqueue=%u wqueue=%u "
      "overflows=%llu drops=%llu\n",
      fam, kBacklog, kClients, last.queued, last.backlog, static_cast<unsigned long long>(overflows),
      static_cast<unsigned long long>(last.drops));
  EXPECT_EQ(last.listeners, 1u) << fam << ": listener count changed under load";
  EXPECT_TRUE(last.full) << fam << ": " << kClients << " clients on a listener of backlog " << kBacklog
                         << " and none accepted, but the queue was not reported "
                         << "full: queued=" << last.queued << " backlog=" << last.backlog;
  EXPECT_GE(last.queued, kBacklog) << fam << ": a full queue must hold at least the backlog";
  EXPECT_EQ(last.backlog, kBacklog);
  EXPECT_GE(overflows, 1u) << fam << ": the SYN refused for lack of room was not counted as "
                           << "an overflow on the port (ListenOverflows of the wrong namespace?)";
  EXPECT_TRUE(last.busy()) << fam << ": a full listener was not reported busy";

  size_t accepted = 0;
  std::vector<Fd> served;
  for (int i = 0; i < 4 * kClients; i++) {
    Fd c(accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (c.fd < 0) {
      EXPECT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK) << fam << ": " << errno_text("accept");
      break;
    }
    served.push_back(std::move(c));
    accepted++;
  }
  EXPECT_EQ(accepted, last.queued) << fam << ": accepted a different number of connections "
                                   << "than the queue length the watch reported";
  ASSERT_TRUE(watch.poll(&st, &err)) << fam << " poll after accepting failed: " << err;
  EXPECT_EQ(st[0].listeners, 1u);
  EXPECT_FALSE(st[0].full) << fam << ": still full after accepting every queued connection"
                           << " (queued=" << st[0].queued << ")";
  EXPECT_LT(st[0].queued, kBacklog) << fam << ": the queue did not drain";
  EXPECT_FALSE(st[0].busy()) << fam << ": still busy after the queue drained";
  expect_idle_port(st[1]);
}

TEST(ListenQueueWatch, FillAndDrainIPv4) {
  std::string skip = in_new_netns([](std::string *s) { fill_and_drain(AF_INET, s); });
  if (!skip.empty()) GTEST_SKIP() << skip;
}

TEST(ListenQueueWatch, FillAndDrainIPv6) {
  std::string skip = in_new_netns([](std::string *s) { fill_and_drain(AF_INET6, s); });
  if (!skip.empty()) GTEST_SKIP() << skip;
}

// Polls until the port's state is full, at most ~1 s; returns the last state.
PortState wait_full(dt::ListenQueueWatch *watch, size_t index, std::string *err) {
  std::vector<PortState> st;
  PortState last;
  for (int i = 0; i < 50; i++) {
    if (!watch->poll(&st, err)) return last;
    last = st.at(index);
    if (last.full) break;
    std::this_thread::sleep_for(20ms);
  }
  return last;
}

// An IPv4 and an IPv6 listener on one port are two listeners of that port, each
// reported by its own family's dump; the port reports the full one even though the
// idle one comes later in the dumps.
TEST(ListenQueueWatch, ReportsTheFullestOfAPortsListeners) {
  std::string skip = in_new_netns([](std::string *skip) {
    std::string err;
    Fd v4 = make_listener(AF_INET, kPort, kBacklog, &err, skip);
    ASSERT_GE(v4.fd, 0) << err;
    Fd v6 = make_listener(AF_INET6, kPort, kBacklog + 5, &err, skip);
    if (!skip->empty()) return;
    ASSERT_GE(v6.fd, 0) << err;
    dt::ListenQueueWatch watch({kIdlePort, kPort});
    std::vector<PortState> st;
    ASSERT_TRUE(watch.poll(&st, &err)) << err;
    ASSERT_EQ(st.size(), 2u);
    expect_idle_port(st[0]);
    EXPECT_EQ(st[1].port, kPort);
    EXPECT_EQ(st[1].listeners, 2u) << "an IPv4 and an IPv6 listener on the port, counted " << st[1].listeners;
    EXPECT_FALSE(st[1].busy()) << "idle listeners reported busy";

    std::vector<Fd> clients;
    for (int i = 0; i < kClients; i++) {
      clients.push_back(start_connect(AF_INET, kPort, &err));
      ASSERT_GE(clients.back().fd, 0) << "client " << i << ": " << err;
    }
    PortState s = wait_full(&watch, 1, &err);
    ASSERT_TRUE(err.empty()) << "poll failed: " << err;
    EXPECT_EQ(s.listeners, 2u);
    EXPECT_TRUE(s.full) << "the IPv4 listener is full, but the port was not reported full";
    EXPECT_GE(s.queued, kBacklog) << "the port must report the full listener's queue";
    EXPECT_EQ(s.backlog, kBacklog) << "the port must report the full listener's backlog, "
                                   << "not the idle IPv6 one's";
  });
  if (!skip.empty()) GTEST_SKIP() << skip;
}

// listen(fd, 0) still queues one connection: an empty queue is never full, and a
// single queued connection is.
TEST(ListenQueueWatch, ZeroBacklogIsFullOnlyWithAConnection) {
  std::string skip = in_new_netns([](std::string *skip) {
    std::string err;
    Fd l = make_listener(AF_INET, kPort, 0, &err, skip);
    ASSERT_GE(l.fd, 0) << err;
    dt::ListenQueueWatch watch({kPort});
    std::vector<PortState> st;
    ASSERT_TRUE(watch.poll(&st, &err)) << err;
    ASSERT_EQ(st.size(), 1u);
    EXPECT_EQ(st[0].backlog, 0u) << "listen(fd, 0) reported another backlog";
    EXPECT_FALSE(st[0].full) << "an empty queue of backlog 0 was reported full";
    Fd c = start_connect(AF_INET, kPort, &err);
    ASSERT_GE(c.fd, 0) << err;
    PortState s = wait_full(&watch, 0, &err);
    ASSERT_TRUE(err.empty()) << "poll failed: " << err;
    EXPECT_TRUE(s.full) << "one connection in a queue of backlog 0 was not reported full, "
                        << "queued=" << s.queued;
  });
  if (!skip.empty()) GTEST_SKIP() << skip;
}

// Shaped like the real file (TcpExt, IpExt, MPTcpExt pairs; trailing spaces).
constexpr const char *kNetstat =
    "TcpExt: SyncookiesSent SyncookiesRecv DelayedACKLost ListenOverflows ListenDrops "
    "TCPHPHits \n"
    "TcpExt: 0 1 28 7 12 2330386 \n"
    "IpExt: InNoRoutes InTruncatedPkts ListenOverflows\n"
    "IpExt: 0 0 99\n"
    "MPTcpExt: MPCapableSYNRX\n"
    "MPTcpExt: 0\n";

TEST(ParseListenCounters, ReadsTheTcpExtCounters) {
  dt::ListenCounters c;
  std::string err;
  ASSERT_TRUE(dt::parse_listen_counters(kNetstat, &c, &err)) << err;
  EXPECT_EQ(c.overflows, 7u) << "ListenOverflows must come from the TcpExt lines only";
  EXPECT_EQ(c.drops, 12u);
}

TEST(ParseListenCounters, RejectsMalformedText) {
  struct Case {
    const char *text, *why;
  } cases[] = {
      {"", "empty text"},
      {"IpExt: InNoRoutes\nIpExt: 0\n", "no TcpExt lines"},
      {"TcpExt: ListenOverflows ListenDrops\n", "a header without values"},
      {"TcpExt: ListenOverflows ListenDrops\nTcpExt: 1\n", "fewer values than names"},
      {"TcpExt: ListenOverflows\nTcpExt: 1\n", "no ListenDrops"},
      {"TcpExt: ListenDrops\nTcpExt: 1\n", "no ListenOverflows"},
      {"TcpExt: ListenOverflows ListenDrops\nTcpExt: 1 x2\n", "a value that is not a number"},
      {"TcpExt: ListenOverflows ListenDrops\nTcpExt: -1 2\n", "a negative value"},
  };
  for (const Case &k : cases) {
    dt::ListenCounters c;
    std::string err;
    EXPECT_FALSE(dt::parse_listen_counters(k.text, &c, &err)) << "accepted " << k.why;
    EXPECT_FALSE(err.empty()) << "no error sentence for " << k.why;
  }
}

}  // namespace
