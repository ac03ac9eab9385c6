// loopback_conn.cpp - real TCP connections on the loopback (see loopback_conn.h).
#include "loopback_conn.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/ipv6.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dt::test {
namespace {

// The loopback address of the family (kLoopV4, kLoopV6), port `port` (0: any).
sockaddr_storage loopback(bool v6, uint16_t port, socklen_t *len) {
  sockaddr_storage ss{};
  if (v6) {
    auto *a = reinterpret_cast<sockaddr_in6 *>(&ss);
    a->sin6_family = AF_INET6;
    inet_pton(AF_INET6, kLoopV6, &a->sin6_addr);
    a->sin6_port = htons(port);
    *len = sizeof *a;
  } else {
    auto *a = reinterpret_cast<sockaddr_in *>(&ss);
    a->sin_family = AF_INET;
    inet_pton(AF_INET, kLoopV4, &a->sin_addr);
    a->sin_port = htons(port);
    *len = sizeof *a;
  }
  return ss;
}

// Brings "lo" up with kLoopV4 and kLoopV6 (ioctls on sockets of this namespace): "" or
// what failed.
std::string loopback_up() {
  const int s4 = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), s6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  std::string err;
  ifreq ifr{};
  strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  auto *sin = reinterpret_cast<sockaddr_in *>(&ifr.ifr_addr);
  sin->sin_family = AF_INET;
  inet_pton(AF_INET, kLoopV4, &sin->sin_addr);
  if (s4 < 0 || s6 < 0) err = "cannot open a socket";
  else if (ioctl(s4, SIOCSIFADDR, &ifr) != 0) err = std::string("cannot give lo ") + kLoopV4;
  else if (ioctl(s4, SIOCGIFFLAGS, &ifr) != 0 || (ifr.ifr_flags |= IFF_UP, ioctl(s4, SIOCSIFFLAGS, &ifr) != 0))
    err = "cannot bring lo up";
  in6_ifreq r6{};
  if (err.empty()) {
    inet_pton(AF_INET6, kLoopV6, &r6.ifr6_addr);
    r6.ifr6_prefixlen = 128;
    r6.ifr6_ifindex = static_cast<int>(if_nametoindex("lo"));
    if (ioctl(s6, SIOCSIFADDR, &r6) != 0) err = std::string("cannot give lo ") + kLoopV6;
  }
  if (!err.empty()) err += std::string(": ") + strerror(errno);
  if (s4 >= 0) close(s4);
  if (s6 >= 0) close(s6);
  return err;
}

// The local port of socket `fd` (0 if it cannot be read).
uint16_t local_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0) return 0;
  return ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port
                                        : reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
}

// Waits (at most 2 s) until kLoopV6 can be bound: a new IPv6 address is tentative until
// the kernel's address work has run, even on the loopback. "" or why not.
std::string wait_v6_usable() {
  socklen_t len = 0;
  const sockaddr_storage a = loopback(true, 0, &len);
  for (int i = 0; i < 200; i++) {
    const int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    const int rc = bind(fd, reinterpret_cast<const sockaddr *>(&a), len);
    const int e = errno;
    close(fd);
    if (rc == 0) return "";
    if (e != EADDRNOTAVAIL) break;
    usleep(10'000);
  }
  return std::string(kLoopV6) + " on lo never became usable: " + strerror(errno);
}

}  // namespace

ScratchNetns::ScratchNetns() {
  saved_ = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (saved_ < 0) {
    error_ = std::string("cannot open this thread's network namespace: ") + strerror(errno);
    return;
  }
  if (unshare(CLONE_NEWNET) != 0) {
    error_ = std::string("cannot make a network namespace (root?): ") + strerror(errno);
    return;
  }
  error_ = loopback_up();
  if (error_.empty()) error_ = wait_v6_usable();
}

ScratchNetns::~ScratchNetns() {
  if (saved_ < 0) return;
  if (setns(saved_, CLONE_NEWNET) != 0) perror("ScratchNetns: setns back");
  close(saved_);
}

std::unique_ptr<LoopbackConn> LoopbackConn::open(bool v6, std::string *err) {
  std::unique_ptr<LoopbackConn> c(new LoopbackConn());
  c->v6_ = v6;
  const int family = v6 ? AF_INET6 : AF_INET;
  auto fail = [&](const char *what) {
    *err = std::string(what) + " on " + c->addr() + ": " + strerror(errno);
    return nullptr;
  };
  socklen_t len = 0;
  sockaddr_storage any = loopback(v6, 0, &len);
  c->listener_ = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->listener_ < 0 || bind(c->listener_, reinterpret_cast<sockaddr *>(&any), len) != 0 ||
      listen(c->listener_, 4) != 0)
    return fail("cannot listen");
  c->server_port_ = local_port(c->listener_);
  sockaddr_storage to = loopback(v6, c->server_port_, &len);
  c->client_ = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->client_ < 0 || connect(c->client_, reinterpret_cast<sockaddr *>(&to), len) != 0) return fail("cannot connect");
  c->accepted_ = accept4(c->listener_, nullptr, nullptr, SOCK_CLOEXEC);
  if (c->accepted_ < 0) return fail("cannot accept");
  c->client_port_ = local_port(c->client_);
  if (c->server_port_ == 0 || c->client_port_ == 0) return fail("cannot read the ports");
  return c;
}

LoopbackConn::~LoopbackConn() {
  for (int fd : {accepted_, client_, listener_})
    if (fd >= 0) close(fd);
}

}  // namespace dt::test
