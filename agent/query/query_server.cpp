// query_server.cpp - the query server's life: its sockets bound, its thread (the loop of
// query_loop.h) started and stopped, and its counters read.
#include "query/query_server.h"

#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "query/query_listen.h"
#include "query/query_loop.h"

namespace dt {

QueryServer::QueryServer(const QueryServerConfig &cfg, TagTable &table) : cfg_(cfg), table_(table) {}

std::unique_ptr<QueryServer> QueryServer::start(const QueryServerConfig &cfg, TagTable &table, std::string *err) {
  if (cfg.unix_path.empty() && cfg.tcp_listen.empty()) {
    *err = "the query server needs a unix socket path or a TCP listen address";
    return nullptr;
  }
  std::unique_ptr<QueryServer> s(new QueryServer(cfg, table));
  if (!cfg.unix_path.empty()) {
    if ((s->unix_fd_ = bind_unix_socket(cfg.unix_path, cfg.unix_mode, cfg.unix_gid, err)) < 0) return nullptr;
    struct stat st {};
    if (stat(cfg.unix_path.c_str(), &st) == 0) {
      s->unix_dev_ = st.st_dev;
      s->unix_ino_ = st.st_ino;
    }
  }
  if (!cfg.tcp_listen.empty() && (s->tcp_fd_ = bind_tcp_socket(cfg.tcp_listen, &s->tcp_port_, err)) < 0) return nullptr;
  if ((s->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
    *err = std::string("eventfd: ") + strerror(errno);
    return nullptr;
  }
  s->loop_ = std::make_unique<Loop>(s->cfg_, table, s->unix_fd_, s->tcp_fd_, s->wake_fd_);
  if (!s->loop_->init(err)) return nullptr;
  s->thread_ = std::thread([loop = s->loop_.get()] { loop->run(); });
  return s;
}

QueryServer::~QueryServer() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof one) != sizeof one) DT_WARN("query server: cannot wake its thread");
    thread_.join();
  }
  loop_.reset();
  for (int fd : {unix_fd_, tcp_fd_, wake_fd_})
    if (fd >= 0) close(fd);
  // Remove the socket file only if it is still the one we made.
  struct stat st {};
  if (unix_fd_ >= 0 && stat(cfg_.unix_path.c_str(), &st) == 0 && st.st_dev == unix_dev_ && st.st_ino == unix_ino_)
    unlink(cfg_.unix_path.c_str());
}

QueryCounters QueryServer::counters() const {
  QueryCounters q;
  if (!loop_) return q;
  const Loop::Counters &c = loop_->c;
  q.answered_ok = c.ok;
  q.answered_no = c.no;
  q.answered_wait = c.wait;
  q.err_empty = c.err_empty;
  q.err_too_long = c.err_too_long;
  q.err_nul = c.err_nul;
  q.connections_accepted = c.accepted;
  q.connections_open = c.open;
  q.connections_refused = c.refused;
  q.backlog_disconnects = c.backlog;
  q.batches = c.batches;
  q.strict_decided = c.strict_decided;
  q.strict_round_trips = c.strict_round_trips;
  q.strict_denied_on_error = c.strict_denied;
  q.strict_local_on_error = c.strict_local;
  q.busy_taken = c.busy_taken;
  q.busy_unknown = c.busy_unknown;
  q.admin_refused = c.admin_refused;
  q.idle_closed = c.idle_closed;
  q.connections_evicted = c.evicted;
  return q;
}

}  // namespace dt
