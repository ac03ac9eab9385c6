// test_sockets.h - the tests' own client sockets to a server under test (the query socket):
// connect over unix or loopback TCP with 2 s timeouts, send all of a string, read n bytes,
// see the server close; and waiting for a condition.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

namespace dt::test {

// Every blocking call of the test's own sockets gives up after 2 s.
inline void set_timeouts(int fd) {
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// Connects `fd` to `sa` and sets its timeouts: the descriptor, or -1 (closed).
inline int connect_with_timeouts(int fd, const sockaddr *sa, socklen_t len) {
  if (connect(fd, sa, len) != 0) {
    close(fd);
    return -1;
  }
  set_timeouts(fd);
  return fd;
}

inline int connect_unix(const std::string &path) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  return connect_with_timeouts(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), reinterpret_cast<sockaddr *>(&sa),
                               sizeof sa);
}

inline int connect_tcp(uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return connect_with_timeouts(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), reinterpret_cast<sockaddr *>(&sa),
                               sizeof sa);
}

inline bool send_all(int fd, const std::string &s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads exactly n bytes (less on EOF, error or the 2 s timeout).
inline std::string read_n(int fd, size_t n) {
  std::string out;
  char buf[65536];
  while (out.size() < n) {
    const ssize_t r = recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
    if (r <= 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  return out;
}

// True if the peer closed: recv returns 0 (within the 2 s timeout).
inline bool at_eof(int fd) {
  char c;
  return recv(fd, &c, 1, 0) == 0;
}

// Polls cond every millisecond for up to `ms` milliseconds; its last answer.
inline bool eventually(const std::function<bool()> &cond, int ms = 2000) {
  for (int i = 0; i < ms; i++) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return cond();
}

}  // namespace dt::test
