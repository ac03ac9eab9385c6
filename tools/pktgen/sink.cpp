// sink.cpp - `pktgen sink`: a dual-stack UDP socket, drained until the deadline, and its report.
#include "pktgen/sink.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "pktgen/addr.h"

namespace dt::pktgen {
namespace {

// One dual-stack UDP socket (IPv4 arrives as ::ffff:a.b.c.d), or IPv4 only where
// the kernel has no IPv6.
int open_sink_socket(uint16_t port, std::string *err) {
  int one = 1, zero = 0, rcvbuf = 8 << 20;
  int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_storage ss{};
  socklen_t len;
  if (fd >= 0) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    auto *a6 = reinterpret_cast<sockaddr_in6 *>(&ss);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(port);
    len = sizeof *a6;
  } else if (errno == EAFNOSUPPORT) {
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    auto *a4 = reinterpret_cast<sockaddr_in *>(&ss);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(port);
    len = sizeof *a4;
  }
  if (fd < 0) {
    *err = std::string("cannot open a UDP socket: ") + strerror(errno);
    return -1;
  }
  // A large buffer so that bursts are counted, not lost; SO_RXQ_OVFL reports any
  // loss anyway, so a short count is never silent.
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr *>(&ss), len) != 0) {
    *err = "cannot listen on UDP port " + std::to_string(port) + ": " + strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

Addr source_of(const sockaddr_storage &ss) {
  Addr a;
  if (ss.ss_family == AF_INET) {
    a.family = AF_INET;
    memcpy(a.b.data(), &reinterpret_cast<const sockaddr_in &>(ss).sin_addr, 4);
    return a;
  }
  const auto &in6 = reinterpret_cast<const sockaddr_in6 &>(ss).sin6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&in6)) {
    a.family = AF_INET;
    memcpy(a.b.data(), &in6.s6_addr[12], 4);
  } else {
    a.family = AF_INET6;
    memcpy(a.b.data(), &in6, 16);
  }
  return a;
}

struct SinkCounts {
  std::map<Addr, uint64_t> per_source;
  uint64_t total = 0;
  uint32_t socket_drops = 0;  // SO_RXQ_OVFL: datagrams the full socket buffer turned away
};

// Receives everything queued on fd without blocking.
void drain(int fd, SinkCounts *c) {
  char buf[2048];
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(uint32_t))];
  for (;;) {
    sockaddr_storage from{};
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl;
    msg.msg_controllen = sizeof ctrl;
    if (recvmsg(fd, &msg, MSG_DONTWAIT) < 0) return;
    c->per_source[source_of(from)]++;
    c->total++;
    for (cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
      if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL)
        memcpy(&c->socket_drops, CMSG_DATA(cm), sizeof c->socket_drops);
  }
}

void print_sink(const SinkOptions &o, const SinkCounts &c, double elapsed) {
  if (o.json) {
    printf("{\"port\":%u,\"elapsed_s\":%.6f,\"received\":%llu,\"socket_drops\":%u,\"sources\":[", o.port, elapsed,
           static_cast<unsigned long long>(c.total), c.socket_drops);
    bool first = true;
    for (const auto &[a, cnt] : c.per_source) {
      printf("%s{\"source\":\"%s\",\"received\":%llu}", first ? "" : ",", addr_str(a).c_str(),
             static_cast<unsigned long long>(cnt));
      first = false;
    }
    printf("]}\n");
    return;
  }
  printf(
      "pktgen sink: received %llu datagrams on UDP port %u in %.3f s (%u lost in the socket "
      "buffer)\n",
      static_cast<unsigned long long>(c.total), o.port, elapsed, c.socket_drops);
  printf("%-40s %12s\n", "SOURCE", "RECEIVED");
  for (const auto &[a, cnt] : c.per_source)
    printf("%-40s %12llu\n", addr_str(a).c_str(), static_cast<unsigned long long>(cnt));
}

}  // namespace

int run_sink(const SinkOptions &o) {
  std::string err;
  int fd = open_sink_socket(o.port, &err);
  if (fd < 0) return runtime_error(err);
  install_stop_handlers();
  fprintf(stderr, "pktgen sink: listening on UDP port %u for %.3f s\n", o.port,
          static_cast<double>(o.duration_ns) / 1e9);

  SinkCounts counts;
  const uint64_t start = now_ns(), deadline = start + o.duration_ns;
  while (!g_stop) {
    const uint64_t t = now_ns();
    if (t >= deadline) break;
    pollfd p{fd, POLLIN, 0};
    // Wake at least every 100 ms to notice the deadline.
    if (poll(&p, 1, static_cast<int>(std::min<uint64_t>((deadline - t) / 1'000'000 + 1, 100))) > 0) drain(fd, &counts);
  }
  close(fd);
  print_sink(o, counts, static_cast<double>(now_ns() - start) / 1e9);
  return 0;
}

}  // namespace dt::pktgen
