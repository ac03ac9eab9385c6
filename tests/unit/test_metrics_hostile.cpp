// test_metrics_hostile.cpp - the metrics server reads no request body: a chunked POST
// (which cpp-httplib 0.11.4 would read whole, whatever set_payload_max_length says) is
// answered 405 before its body, on any path, and the server's memory does not grow with it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "metrics/metrics.h"

namespace {

constexpr size_t kMiB = 1024 * 1024;

// A metrics server on 127.0.0.1 at a free port (a few random ones tried).
struct Served {
  std::unique_ptr<dt::MetricsServer> server;
  uint16_t port = 0;
};

Served serve_on_loopback() {
  Served s;
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 50 && !s.server; i++) {
    dt::MetricsAddress a;
    a.host = "127.0.0.1";
    a.port = static_cast<uint16_t>(20000 + rng() % 30000);
    std::string err;
    s.server = dt::MetricsServer::bind(a, &err);
    s.port = a.port;
  }
  if (s.server) s.server->serve(dt::MetricsInfo{}, dt::MapFds{});  // no maps: GET /metrics answers 500
  return s;
}

int connect_loopback(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

// This process's peak resident set (VmHWM, KiB), after write_peak_reset() restarts it.
long peak_rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}
bool reset_peak_rss() { return static_cast<bool>(std::ofstream("/proc/self/clear_refs") << "5"); }

struct Exchange {
  std::string response;  // everything the server sent
  size_t body_sent = 0;  // body bytes the server let us send before it closed
  std::string ended_by;  // how the exchange ended, for failure messages
};

std::string with_errno(const char *what) { return std::string(what) + ": " + strerror(errno); }

// Sends head, then up to body_bytes of chunked body (1 MiB chunks) while reading what
// comes back, until the server closes, all is sent and answered, or 30 s pass. A failed
// send stops the sending only: the answer may already wait in the receive queue.
Exchange post_chunked(uint16_t port, const std::string &head, size_t body_bytes) {
  Exchange x;
  int fd = connect_loopback(port);
  if (fd < 0) {
    x.ended_by = with_errno("connect");
    return x;
  }
  std::string out = head;
  const std::string chunk = "100000\r\n" + std::string(kMiB, 'x') + "\r\n";
  size_t off = 0;
  bool head_sent = false, last = false, ended = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  x.ended_by = "the 30 s deadline";
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, static_cast<short>(POLLIN | (ended ? 0 : POLLOUT)), 0};
    if (poll(&p, 1, 200) < 0) {
      x.ended_by = with_errno("poll");
      break;
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[4096];
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        const std::string how = n == 0 ? std::string("the server's close") : with_errno("recv");
        x.ended_by = ended && !last ? x.ended_by + ", then " + how : how;
        break;
      }
      x.response.append(buf, static_cast<size_t>(n));
    }
    if (!ended && (p.revents & POLLOUT)) {
      ssize_t n = send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN) {
        // The server answered and closed (its reset can beat our poll): read what it sent.
        x.ended_by = with_errno("send");
        ended = true;
        continue;
      }
      if (n > 0) off += static_cast<size_t>(n);
      if (off < out.size()) continue;
      off = 0;
      if (last) ended = true;
      else if (head_sent) x.body_sent += kMiB;
      head_sent = true;
      last = x.body_sent >= body_bytes;
      out = last ? std::string("0\r\n\r\n") : chunk;
    }
  }
  close(fd);
  return x;
}

std::string get(uint16_t port, const std::string &request) {
  Exchange x = post_chunked(port, request, 0);
  return x.response;
}

std::string status_line(const std::string &r) { return r.substr(0, r.find("\r\n")); }

size_t count_of(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) n++;
  return n;
}

TEST(MetricsHostile, ChunkedPostsAreRefusedBeforeTheirBody) {
  Served s = serve_on_loopback();
  ASSERT_TRUE(s.server) << "no free loopback port to serve metrics on";
  for (const char *path : {"/metrics", "/anything/else"}) {
    ASSERT_TRUE(reset_peak_rss()) << "cannot reset the peak RSS (/proc/self/clear_refs)";
    const long before = peak_rss_kib();
    const std::string head =
        std::string("POST ") + path + " HTTP/1.1\r\nHost: dthrottle\r\nTransfer-Encoding: chunked\r\n\r\n";
    Exchange x = post_chunked(s.port, head, 64 * kMiB);
    const long grown = peak_rss_kib() - before;
    EXPECT_EQ(status_line(x.response), "HTTP/1.1 405 Method Not Allowed")
        << path << ": ended by " << x.ended_by << " after " << x.body_sent / kMiB << " MiB: " << x.response;
    EXPECT_NE(x.response.find("Allow: GET, HEAD\r\n"), std::string::npos) << path << ": " << x.response;
    EXPECT_EQ(count_of(x.response, "Connection: close\r\n"), 1u) << path << ": " << x.response;
    EXPECT_LT(grown, 8 * 1024) << path << ": the peak RSS grew by " << grown << " KiB while the client sent "
                               << x.body_sent / kMiB << " MiB of chunked body (the server read it)";
  }
}

TEST(MetricsHostile, ALeftoverBodyIsNotParsedAsARequest) {
  Served s = serve_on_loopback();
  ASSERT_TRUE(s.server) << "no free loopback port to serve metrics on";
  const std::string inner = "GET /metrics HTTP/1.1\r\nHost: dthrottle\r\n\r\n";
  const std::string r =
      get(s.port, "PUT /metrics HTTP/1.1\r\nHost: dthrottle\r\nContent-Length: " + std::to_string(inner.size()) +
                      "\r\n\r\n" + inner);
  EXPECT_EQ(status_line(r), "HTTP/1.1 405 Method Not Allowed") << r;
  EXPECT_EQ(count_of(r, "HTTP/1.1 "), 1u) << "the body was answered as a second request: " << r;
}

TEST(MetricsHostile, GetAndHeadAreStillRouted) {
  Served s = serve_on_loopback();
  ASSERT_TRUE(s.server) << "no free loopback port to serve metrics on";
  // Without maps the scrape fails (500): it was routed to the handler all the same.
  EXPECT_EQ(status_line(get(s.port, "GET /metrics HTTP/1.1\r\nHost: dthrottle\r\n\r\n")),
            "HTTP/1.1 500 Internal Server Error");
  EXPECT_EQ(status_line(get(s.port, "HEAD /metrics HTTP/1.1\r\nHost: dthrottle\r\n\r\n")),
            "HTTP/1.1 500 Internal Server Error");
  EXPECT_EQ(status_line(get(s.port, "GET /nothing HTTP/1.1\r\nHost: dthrottle\r\n\r\n")), "HTTP/1.1 404 Not Found");
  for (const char *method : {"DELETE", "OPTIONS", "PATCH"})
    EXPECT_EQ(status_line(get(s.port, std::string(method) + " /metrics HTTP/1.1\r\nHost: dthrottle\r\n\r\n")),
              "HTTP/1.1 405 Method Not Allowed")
        << method;
}

}  // namespace
