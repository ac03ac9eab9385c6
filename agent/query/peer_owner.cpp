// peer_owner.cpp - a TCP client's owner, from the kernel's socket table (sock_diag).
#include "query/peer_owner.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "query/slot_quota.h"

namespace dt {
namespace {

// One end of the connection as inet_diag wants it: family, address, port (network order).
struct End {
  int family = AF_UNSPEC;
  uint32_t addr[4] = {};
  uint16_t port = 0;
};

// An end from a socket address; an IPv4-mapped IPv6 one becomes IPv4 (the client's socket
// is then an AF_INET socket).
bool end_of(const sockaddr_storage &ss, End *e) {
  if (ss.ss_family == AF_INET) {
    const auto *a = reinterpret_cast<const sockaddr_in *>(&ss);
    *e = End{AF_INET, {a->sin_addr.s_addr}, a->sin_port};
    return true;
  }
  if (ss.ss_family != AF_INET6) return false;
  const auto *a = reinterpret_cast<const sockaddr_in6 *>(&ss);
  if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
    uint32_t v4;
    memcpy(&v4, a->sin6_addr.s6_addr + 12, 4);
    *e = End{AF_INET, {v4}, a->sin6_port};
    return true;
  }
  e->family = AF_INET6;
  memcpy(e->addr, &a->sin6_addr, 16);
  e->port = a->sin6_port;
  return true;
}

// The uid of the socket whose own end is `own` and whose remote end is `remote`.
uid_t owner_of(const End &own, const End &remote) {
  const int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) return kRemotePeers;
  timeval tv{0, 200'000};  // the kernel answers at once; never hang the query thread
  setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof msg;
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST;
  msg.req.sdiag_family = static_cast<uint8_t>(own.family);
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = ~0u;
  msg.req.id.idiag_sport = own.port;
  msg.req.id.idiag_dport = remote.port;
  memcpy(msg.req.id.idiag_src, own.addr, sizeof own.addr);
  memcpy(msg.req.id.idiag_dst, remote.addr, sizeof remote.addr);
  msg.req.id.idiag_cookie[0] = msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  uid_t uid = kRemotePeers;
  alignas(nlmsghdr) char buf[8192];
  if (send(nl, &msg, sizeof msg, 0) == static_cast<ssize_t>(sizeof msg)) {
    const ssize_t n = recv(nl, buf, sizeof buf, 0);
    const auto *h = reinterpret_cast<const nlmsghdr *>(buf);
    if (n >= static_cast<ssize_t>(sizeof *h) && NLMSG_OK(h, static_cast<size_t>(n)) &&
        h->nlmsg_type == SOCK_DIAG_BY_FAMILY && h->nlmsg_len >= NLMSG_LENGTH(sizeof(inet_diag_msg))) {
      const auto *m = static_cast<const inet_diag_msg *>(NLMSG_DATA(h));
      // Exactly the client's socket, not a listener that happens to hold its port.
      if (m->idiag_state != TCP_LISTEN && m->id.idiag_sport == own.port && m->id.idiag_dport == remote.port)
        uid = m->idiag_uid;
    }
  }
  close(nl);
  return uid;
}

}  // namespace

uid_t tcp_peer_owner(int fd) {
  sockaddr_storage local{}, peer{};
  socklen_t llen = sizeof local, plen = sizeof peer;
  End server_end, client_end;
  if (getsockname(fd, reinterpret_cast<sockaddr *>(&local), &llen) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &plen) != 0 || !end_of(local, &server_end) ||
      !end_of(peer, &client_end) || server_end.family != client_end.family)
    return kRemotePeers;
  return owner_of(client_end, server_end);
}

}  // namespace dt
