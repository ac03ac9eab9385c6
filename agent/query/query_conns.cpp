// query_conns.cpp - the query server's connections: accepted within max_connections
// (evicting an idle one, or one of the group slot_quota.h names), closed when done or idle.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/clock.h"
#include "query/peer_owner.h"
#include "query/query_loop.h"

namespace dt {
namespace {

constexpr int kAcceptsPerEvent = 64;

}  // namespace

void QueryServer::Loop::accept_all(int lfd, bool tcp) {
  for (int i = 0; i < kAcceptsPerEvent; i++) {
    const int fd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if ((errno == EMFILE || errno == ENFILE) && spare_fd >= 0) {
        accept_spare(lfd);
        continue;
      }
      if (errno == EMFILE || errno == ENFILE) return;
      continue;  // ECONNABORTED and the like: that client is gone, take the next
    }
    const uid_t uid = tcp ? tcp_peer_owner(fd) : peer_uid_of(fd);
    if (conns.size() >= cfg.max_connections && !evict_idlest(mono_now_ns()) && !evict_for(uid)) {
      refuse("at the connection limit");  // counted before the client can see the close
      close(fd);
      continue;
    }
    add_conn(fd, tcp, uid);
  }
}

// Out of descriptors: free the spare one to accept and close the connection, otherwise
// the listener stays readable and the loop would spin.
void QueryServer::Loop::accept_spare(int lfd) {
  close(spare_fd);
  const int fd = accept(lfd, nullptr, nullptr);
  refuse("out of file descriptors");
  if (fd >= 0) close(fd);
  spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

// Watches a new connection and starts its state; false (refused, closed) if epoll will not.
bool QueryServer::Loop::add_conn(int fd, bool tcp, uid_t uid) {
  if (tcp) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // answers are tiny
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
    refuse("epoll_ctl failed");  // counted before the client can see the close
    close(fd);
    return false;
  }
  auto conn = std::make_unique<Conn>();
  conn->fd = fd;
  conn->events = EPOLLIN;
  conn->peer_uid = uid;
  conn->tcp = tcp;
  conn->admin = !tcp && is_admin_uid(uid, cfg.admin_uids);
  per_uid[uid]++;
  conn->last_active = mono_now_ns();
  conn->lru = by_activity.insert(by_activity.end(), fd);
  conns.emplace(fd, std::move(conn));
  c.accepted++;
  c.open++;
  return true;
}

void QueryServer::Loop::refuse(const char *why) {
  c.refused++;
  log_limited(warn_log, LogLevel::Warn, mono_now_ns(), "query socket: refused a connection (%s; %zu open, limit %zu)",
              why, conns.size(), cfg.max_connections);
}

uid_t QueryServer::Loop::peer_uid_of(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? cred.uid : kRemotePeers;
}

bool QueryServer::Loop::evict_for(uid_t newcomer) {
  const std::optional<uid_t> victim = slot_victim(per_uid, newcomer, cfg.max_connections);
  if (!victim) return false;
  for (int fd : by_activity) {
    Conn &conn = *conns.at(fd);
    if (conn.peer_uid != *victim) continue;
    c.evicted++;
    drop(conn);
    return true;
  }
  return false;
}

bool QueryServer::Loop::evict_idlest(uint64_t now) {
  if (by_activity.empty()) return false;
  Conn &idlest = *conns.at(by_activity.front());
  if (now - idlest.last_active < cfg.evict_idle_ns) return false;
  c.evicted++;
  drop(idlest);
  return true;
}

void QueryServer::Loop::touch(Conn &conn, uint64_t now) {
  conn.last_active = now;
  by_activity.splice(by_activity.end(), by_activity, conn.lru);
}

void QueryServer::Loop::drop(Conn &conn) {
  const int fd = conn.fd;
  if (conn.closing) closing_count--;
  close(fd);  // also removes it from the epoll set
  if (conn.sub) {
    cfg.events->unsubscribe(conn.sub, conn.slow);
    subscribers.erase(std::find(subscribers.begin(), subscribers.end(), fd));
  }
  by_activity.erase(conn.lru);
  if (auto it = per_uid.find(conn.peer_uid); it != per_uid.end() && --it->second == 0) per_uid.erase(it);
  conns.erase(fd);
  c.open--;
}

void QueryServer::Loop::sweep(uint64_t now) {
  expired.clear();
  if (closing_count)
    for (auto &[fd, conn] : conns)
      if (conn->closing && conn->deadline <= now) expired.push_back(fd);
  for (int fd : expired) drop(*conns.at(fd));
  while (cfg.idle_timeout_ns && !by_activity.empty()) {
    Conn &idlest = *conns.at(by_activity.front());
    if (now - idlest.last_active < cfg.idle_timeout_ns) break;
    if (idlest.sub) {  // a subscriber waits for events, however long: never idle
      touch(idlest, now);
      continue;
    }
    c.idle_closed++;
    drop(idlest);
  }
}

}  // namespace dt
