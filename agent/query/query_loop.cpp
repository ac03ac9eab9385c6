// query_loop.cpp - the query server's epoll loop, and a connection's reads and writes.
#include "query/query_loop.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/clock.h"

namespace dt {
namespace {

constexpr int kReadsPerEvent = 4;  // then other connections get their turn
constexpr int kMaxEvents = 256;
constexpr int kSweepMs = 100;  // closing and idle connections' deadlines are checked this often

}  // namespace

QueryServer::Loop::Loop(const QueryServerConfig &cfg, TagTable &table, int unix_fd, int tcp_fd, int wake_fd)
    : cfg(cfg),
      table(table),
      unix_fd(unix_fd),
      tcp_fd(tcp_fd),
      wake_fd(wake_fd),
      scratch(kReadChunk + kReserve.size() + kMaxTagLen + 1) {
  if (!cfg.redis_address.empty()) {
    StrictRedisConfig rc;
    rc.address = cfg.redis_address;
    rc.timeout_ns = cfg.redis_timeout_ns;
    redis = std::make_unique<StrictRedis>(rc);
  }
}

QueryServer::Loop::~Loop() {
  for (auto &entry : conns) {
    close(entry.first);
    if (entry.second->sub && cfg.events) cfg.events->unsubscribe(entry.second->sub, false);
  }
  if (events_fd >= 0) close(events_fd);
  if (epfd >= 0) close(epfd);
  if (spare_fd >= 0) close(spare_fd);
}

bool QueryServer::Loop::init(std::string *err) {
  epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) {
    *err = std::string("epoll_create1: ") + strerror(errno);
    return false;
  }
  if (cfg.events) events_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  for (int fd : {unix_fd, tcp_fd, wake_fd, events_fd}) {
    if (fd < 0) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
      *err = std::string("epoll_ctl: ") + strerror(errno);
      return false;
    }
  }
  // Kept in reserve so that an accept can still be refused when descriptors run out.
  spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  return true;
}

void QueryServer::Loop::run() {
  epoll_event evs[kMaxEvents];
  for (bool running = true; running;) {
    const bool timed = closing_count || (cfg.idle_timeout_ns && !conns.empty());
    const int n = epoll_wait(epfd, evs, kMaxEvents, timed ? kSweepMs : -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      DT_ERROR("query server: epoll_wait: %s; the query socket stops answering", strerror(errno));
      return;
    }
    for (int i = 0; i < n; i++) {
      const int fd = evs[i].data.fd;
      if (fd == wake_fd) running = false;
      else if (fd == events_fd) deliver_events();
      else if (fd == unix_fd || fd == tcp_fd) accept_all(fd, fd == tcp_fd);
      else if (auto it = conns.find(fd); it != conns.end()) on_event(*it->second, evs[i].events, mono_now_ns());
    }
    if (timed) sweep(mono_now_ns());
  }
}

void QueryServer::Loop::on_event(Conn &conn, uint32_t events, uint64_t now) {
  if (events & EPOLLERR) return drop(conn);
  if ((events & (EPOLLIN | EPOLLHUP)) && !on_readable(conn, now)) return;
  flush(conn);
}

bool QueryServer::Loop::on_readable(Conn &conn, uint64_t now) {
  for (int i = 0; i < kReadsPerEvent && !conn.eof; i++) {
    const size_t carry = conn.partial.size();
    memcpy(scratch.data(), conn.partial.data(), carry);
    const ssize_t n = recv(conn.fd, scratch.data() + carry, kReadChunk, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      drop(conn);
      return false;
    }
    touch(conn, now);
    if (n == 0) {
      conn.eof = true;
      begin_closing(conn, now);
      break;
    }
    if (conn.closing || conn.sub) continue;  // draining after an error, or streaming events: input is discarded
    conn.partial.clear();
    answer(conn, std::string_view(scratch.data(), carry + static_cast<size_t>(n)), now);
    if (!flush(conn)) return false;
    if (static_cast<size_t>(n) < kReadChunk) break;
  }
  return true;
}

void QueryServer::Loop::begin_closing(Conn &conn, uint64_t now) {
  if (conn.closing) return;
  conn.closing = true;
  conn.partial.clear();
  conn.deadline = now + cfg.linger_ns;
  closing_count++;
}

bool QueryServer::Loop::flush(Conn &conn) {
  while (!conn.out.empty()) {
    const ssize_t n = send(conn.fd, conn.out.data(), conn.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      drop(conn);
      return false;
    }
    conn.out.erase(0, static_cast<size_t>(n));
    if (n > 0) touch(conn, mono_now_ns());
  }
  if (conn.out.size() > cfg.max_backlog_bytes) {
    c.backlog++;
    conn.slow = conn.sub != nullptr;
    uint64_t suppressed = 0;
    if (warn_log.allow(mono_now_ns(), &suppressed))
      DT_WARN(
          "query socket: disconnected a client that does not read its answers (%zu bytes pending; "
          "%llu similar messages suppressed)",
          conn.out.size(), static_cast<unsigned long long>(suppressed));
    drop(conn);
    return false;
  }
  if (!finish_closing(conn)) return false;
  watch(conn);
  return true;
}

bool QueryServer::Loop::finish_closing(Conn &conn) {
  if (!conn.closing || !conn.out.empty()) return true;
  if (conn.eof) {
    drop(conn);
    return false;
  }
  if (!conn.shut) {
    shutdown(conn.fd, SHUT_WR);
    conn.shut = true;
  }
  return true;
}

void QueryServer::Loop::watch(Conn &conn) {
  const uint32_t want =
      (conn.eof ? 0u : static_cast<uint32_t>(EPOLLIN)) | (conn.out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
  if (want == conn.events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.fd = conn.fd;
  epoll_ctl(epfd, EPOLL_CTL_MOD, conn.fd, &ev);
  conn.events = want;
}

}  // namespace dt
