// query_server.cpp - one epoll thread serving the line protocol of query_server.h.
//
// Every connection is non-blocking and level-triggered. A readable connection is
// read in chunks of up to kReadChunk bytes into one scratch buffer (with the previous
// read's incomplete line in front), all its complete lines are answered with a single
// TagTable::answer_batch, and the answers are sent at once; whatever the socket does
// not take waits in the connection's output buffer (bounded) under EPOLLOUT.
#include "query/query_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <list>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "common/clock.h"
#include "common/endpoint.h"
#include "query/peer_owner.h"
#include "query/query_listen.h"
#include "query/slot_quota.h"
#include "query/strict_redis.h"

namespace dt {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
constexpr int kReadsPerEvent = 4;      // then other connections get their turn
constexpr int kAcceptsPerEvent = 64;
constexpr int kMaxEvents = 256;
constexpr int kSweepMs = 100;          // closing and idle connections' deadlines are checked this often
constexpr std::string_view kReserve = "RESERVE ";
constexpr std::string_view kBusy = "BUSY ";
constexpr std::string_view kErrEmpty = "ERR empty tag\n";
constexpr std::string_view kErrTooLong = "ERR tag too long\n";
constexpr std::string_view kErrNul = "ERR nul byte\n";

enum class Fatal { None, TooLong, Nul };

// The tag a line asks about, and whether it is a reservation.
std::string_view line_tag(std::string_view line, bool *reserve) {
  *reserve = line.starts_with(kReserve);
  return *reserve ? line.substr(kReserve.size()) : line;
}

void set_err(std::string *err, const std::string &what) {
  *err = what + ": " + strerror(errno);
}

}  // namespace

bool is_admin_uid(uid_t uid, const std::vector<uid_t> &admin_uids) {
  return uid == 0 || uid == geteuid() || std::find(admin_uids.begin(), admin_uids.end(), uid) != admin_uids.end();
}

// The event loop and all per-connection state; touched only by the server thread,
// except the counters.
struct QueryServer::Loop {
  struct Conn {
    int fd = -1;
    std::string partial;     // an incomplete line, carried to the next read
    std::string out;         // answers the socket has not taken yet
    uint32_t events = 0;     // current epoll interest
    bool closing = false;    // no more queries: after an error or the client's EOF
    bool eof = false;        // the client shut its write side
    bool shut = false;       // we shut ours (after the last answer)
    uint64_t deadline = 0;   // closing: closed by then whatever happens
    bool admin = false;      // may send admin commands (a unix peer's uid, is_admin_uid)
    bool tcp = false;        // came over TCP (never an admin)
    uid_t peer_uid = kRemotePeers;          // its group (slot_quota.h): the peer's uid, or kRemotePeers
    uint64_t last_active = 0;               // the last byte received or sent
    std::list<int>::iterator lru;           // its place in by_activity
  };

  struct Counters {
    std::atomic<uint64_t> ok{0}, no{0}, wait{0}, err_empty{0}, err_too_long{0}, err_nul{0};
    std::atomic<uint64_t> accepted{0}, open{0}, refused{0}, backlog{0}, batches{0};
    std::atomic<uint64_t> strict_decided{0}, strict_round_trips{0}, strict_denied{0}, strict_local{0};
    std::atomic<uint64_t> busy_taken{0}, busy_unknown{0};
    std::atomic<uint64_t> admin_refused{0}, idle_closed{0}, evicted{0};
  };

  Loop(const QueryServerConfig &cfg, TagTable &table, int unix_fd, int tcp_fd, int wake_fd)
      : cfg(cfg), table(table), unix_fd(unix_fd), tcp_fd(tcp_fd), wake_fd(wake_fd),
        scratch(kReadChunk + kReserve.size() + kMaxTagLen + 1) {
    if (!cfg.redis_address.empty()) {
      StrictRedisConfig rc;
      rc.address = cfg.redis_address;
      rc.timeout_ns = cfg.redis_timeout_ns;
      redis = std::make_unique<StrictRedis>(rc);
    }
  }

  ~Loop() {
    for (auto &entry : conns) close(entry.first);
    if (epfd >= 0) close(epfd);
    if (spare_fd >= 0) close(spare_fd);
  }

  bool init(std::string *err) {
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) {
      set_err(err, "epoll_create1");
      return false;
    }
    for (int fd : {unix_fd, tcp_fd, wake_fd}) {
      if (fd < 0) continue;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        set_err(err, "epoll_ctl");
        return false;
      }
    }
    // Kept in reserve so that an accept can still be refused when descriptors run out.
    spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return true;
  }

  void run() {
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
        else if (fd == unix_fd || fd == tcp_fd) accept_all(fd, fd == tcp_fd);
        else if (auto it = conns.find(fd); it != conns.end()) on_event(*it->second, evs[i].events, mono_now_ns());
      }
      if (timed) sweep(mono_now_ns());
    }
  }

  void accept_all(int lfd, bool tcp) {
    for (int i = 0; i < kAcceptsPerEvent; i++) {
      int fd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        if ((errno == EMFILE || errno == ENFILE) && spare_fd >= 0) {
          // Out of descriptors: free the spare one to accept and close the connection,
          // otherwise the listener stays readable and the loop would spin.
          close(spare_fd);
          fd = accept(lfd, nullptr, nullptr);
          refuse("out of file descriptors");
          if (fd >= 0) close(fd);
          spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
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
        continue;
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
    }
  }

  void refuse(const char *why) {
    c.refused++;
    log_limited(warn_log, LogLevel::Warn, mono_now_ns(),
                "query socket: refused a connection (%s; %zu open, limit %zu)", why, conns.size(),
                cfg.max_connections);
  }

  // A unix peer's uid, from the kernel (SO_PEERCRED, as of its connect()); kRemotePeers
  // if it cannot be read (then it is no admin).
  static uid_t peer_uid_of(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? cred.uid : kRemotePeers;
  }

  // At the cap with every connection in use: the least recently active connection of the
  // group slot_victim names makes room (by user, whether over the unix socket or TCP). So
  // one local user cannot lock the others out.
  bool evict_for(uid_t newcomer) {
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

  // At the cap: closes the connection idle the longest, if it has been idle evict_idle_ns,
  // to make room for a new one. False if every connection is busier than that.
  bool evict_idlest(uint64_t now) {
    if (by_activity.empty()) return false;
    Conn &idlest = *conns.at(by_activity.front());
    if (now - idlest.last_active < cfg.evict_idle_ns) return false;
    c.evicted++;
    drop(idlest);
    return true;
  }

  void touch(Conn &conn, uint64_t now) {
    conn.last_active = now;
    by_activity.splice(by_activity.end(), by_activity, conn.lru);
  }

  void on_event(Conn &conn, uint32_t events, uint64_t now) {
    if (events & EPOLLERR) return drop(conn);
    if ((events & (EPOLLIN | EPOLLHUP)) && !on_readable(conn, now)) return;
    flush(conn);
  }

  // Reads and answers, sending the answers of each chunk before reading the next (so
  // the backlog bound applies per chunk); false if the connection was dropped.
  bool on_readable(Conn &conn, uint64_t now) {
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
      if (conn.closing) continue;  // draining after an error: input is discarded
      conn.partial.clear();
      answer(conn, std::string_view(scratch.data(), carry + static_cast<size_t>(n)), now);
      if (!flush(conn)) return false;
      if (static_cast<size_t>(n) < kReadChunk) break;
    }
    return true;
  }

  // What one read's answers were, counted once they are all written.
  struct Tally {
    uint64_t empties = 0, busy_taken = 0, busy_unknown = 0;
    uint64_t ok = 0, no = 0, wait = 0;
  };

  // Answers every complete line of `buf` in order; keeps the incomplete rest.
  void answer(Conn &conn, std::string_view buf, uint64_t now) {
    Tally tally;
    const Fatal fatal = take_lines(conn, buf, now, &tally);
    if (!queries.empty()) {
      table.answer_batch(queries, now, cfg.max_reserve_wait_ns, redis ? StrictMode::Defer : StrictMode::Local);
      c.batches++;
      if (redis) answer_strict(now);
    }
    write_answers(conn, &tally);
    c.ok += tally.ok;
    c.no += tally.no;
    c.wait += tally.wait;
    c.err_empty += tally.empties;
    c.busy_taken += tally.busy_taken;
    c.busy_unknown += tally.busy_unknown;
    if (fatal != Fatal::None) refuse_input(conn, fatal, now);
  }

  // Splits `buf` into lines: tag queries go into `queries`; busy signals and empty lines are
  // answered in place (side_before). Stops at the first line that ends the connection and
  // returns why; an incomplete last line is kept in conn.partial.
  Fatal take_lines(Conn &conn, std::string_view buf, uint64_t now, Tally *tally) {
    queries.clear();
    side_before.clear();
    Fatal fatal = Fatal::None;
    size_t pos = 0;
    while (pos < buf.size()) {
      const size_t nl = buf.find('\n', pos);
      if (nl == std::string_view::npos) break;
      const std::string_view line = buf.substr(pos, nl - pos);
      pos = nl + 1;
      if (take_admin_command(conn, line, now, tally)) continue;
      bool reserve;
      const std::string_view tag = line_tag(line, &reserve);
      if (tag.size() > kMaxTagLen) {
        fatal = Fatal::TooLong;
        break;
      }
      if (line.find('\0') != std::string_view::npos) {
        fatal = Fatal::Nul;
        break;
      }
      if (tag.empty()) {
        side_before.push_back({queries.size(), std::string(kErrEmpty)});
        tally->empties++;
        continue;
      }
      queries.push_back({tag, reserve});
    }
    if (fatal == Fatal::None && pos < buf.size()) {
      // An incomplete line already too long for any tag is refused now, not buffered.
      bool reserve;
      const std::string_view rest = buf.substr(pos);
      if (line_tag(rest, &reserve).size() > kMaxTagLen) fatal = Fatal::TooLong;
      else conn.partial.assign(rest);
    }
    return fatal;
  }

  // An admin command (BUSY, cfg.admin_commands) is answered in place, between the queries
  // around it, through the one gate: conn.admin. False if the line is no admin command.
  bool take_admin_command(const Conn &conn, std::string_view line, uint64_t now, Tally *tally) {
    const AdminCommand *cmd = nullptr;
    std::string_view arg;
    if (!match_admin_command(line, &cmd, &arg)) return false;
    if (!conn.admin) {
      side_before.push_back({queries.size(), std::string(kErrNotAllowed)});
      c.admin_refused++;
      const std::string verb(line.substr(0, line.find(' ')));
      if (conn.tcp)
        log_limited(admin_log, LogLevel::Warn, now,
                    "query socket: refused %s from a TCP client: admin commands are taken on the unix "
                    "socket only, from root, the agent's uid or --query-admin-uids", verb.c_str());
      else
        log_limited(admin_log, LogLevel::Warn, now,
                    "query socket: refused %s from uid %u: not in --query-admin-uids", verb.c_str(),
                    static_cast<unsigned>(conn.peer_uid));
      return true;
    }
    if (!cmd) {  // BUSY: a busy signal for an adaptive rule
      const bool taken = cfg.busy && cfg.busy(arg, now);
      side_before.push_back({queries.size(), taken ? "OK\n" : "NO\n"});
      (taken ? tally->busy_taken : tally->busy_unknown)++;
    } else {
      side_before.push_back({queries.size(), cmd->run(arg, now)});
    }
    return true;
  }

  // "VERB ARG" with a known verb and a valid ARG: *cmd (nullptr for BUSY) and *arg.
  bool match_admin_command(std::string_view line, const AdminCommand **cmd, std::string_view *arg) const {
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) return false;
    const std::string_view verb = line.substr(0, space);
    *cmd = nullptr;
    bool known = verb == kBusy.substr(0, kBusy.size() - 1);
    for (size_t i = 0; !known && i < cfg.admin_commands.size(); i++)
      if (verb == cfg.admin_commands[i].verb) known = true, *cmd = &cfg.admin_commands[i];
    *arg = line.substr(space + 1);
    return known && !arg->empty() && arg->size() <= kMaxTagLen && line.find('\0') == std::string_view::npos;
  }

  // The answers in line order: each query's, after the in-place answers that came before it.
  void write_answers(Conn &conn, Tally *tally) {
    size_t e = 0;
    for (size_t q = 0; q <= queries.size(); q++) {
      for (; e < side_before.size() && side_before[e].first == q; e++) conn.out += side_before[e].second;
      if (q == queries.size()) break;
      switch (queries[q].answer) {
        case TagAnswer::Ok: conn.out += "OK\n"; tally->ok++; break;
        case TagAnswer::No: conn.out += "NO\n"; tally->no++; break;
        case TagAnswer::Wait: {
          char num[24];
          const uint64_t ms = (queries[q].wait_ns + 999'999) / 1'000'000;  // never early
          auto r = std::to_chars(num, num + sizeof num, ms);
          conn.out += "WAIT ";
          conn.out.append(num, r.ptr);
          conn.out += '\n';
          tally->wait++;
          break;
        }
      }
    }
  }

  // After a tag over the limit or a NUL byte: the error line, then the connection closes.
  void refuse_input(Conn &conn, Fatal fatal, uint64_t now) {
    if (fatal == Fatal::TooLong) {
      conn.out += kErrTooLong;
      c.err_too_long++;
    } else if (fatal == Fatal::Nul) {
      conn.out += kErrNul;
      c.err_nul++;
    }
    uint64_t suppressed = 0;
    if (input_log.allow(now, &suppressed))
      DT_DEBUG("query socket: closing a connection after %s (%llu similar messages suppressed)",
               fatal == Fatal::Nul ? "a NUL byte" : "a tag over 1024 bytes",
               static_cast<unsigned long long>(suppressed));
    begin_closing(conn, now);
  }

  // The strict queries answer_batch left open: one pipelined round trip to Redis; the
  // ones it cannot answer follow their rule's on_redis_error.
  void answer_strict(uint64_t now) {
    strict_idx.clear();
    strict_reqs.clear();
    for (size_t i = 0; i < queries.size(); i++) {
      const TagQuery &q = queries[i];
      if (!q.strict) continue;
      StrictRequest r;
      r.tag = q.tag;
      r.interval_us = std::max<uint64_t>(q.strict_interval_ns / 1000, 1);
      r.burst = q.strict_burst;
      r.max_wait_us = q.reserve ? cfg.max_reserve_wait_ns / 1000 : 0;
      strict_idx.push_back(i);
      strict_reqs.push_back(r);
    }
    if (strict_reqs.empty()) return;
    const uint64_t trips = redis->counters().round_trips;
    redis->decide(strict_reqs, now);
    c.strict_round_trips += redis->counters().round_trips - trips;
    fallback.clear();
    uint64_t decided = 0, denied = 0;
    for (size_t k = 0; k < strict_reqs.size(); k++) {
      TagQuery &q = queries[strict_idx[k]];
      const StrictRequest &r = strict_reqs[k];
      q.wait_ns = 0;
      switch (r.result) {
        case StrictResult::Ok: q.answer = TagAnswer::Ok; decided++; break;
        case StrictResult::No: q.answer = TagAnswer::No; decided++; break;
        case StrictResult::Wait:
          q.answer = TagAnswer::Wait;
          q.wait_ns = r.wait_us * 1000;
          decided++;
          break;
        case StrictResult::Error:
          if (q.strict_fallback_local) fallback.push_back(q);
          else denied++;  // already No
          break;
      }
    }
    c.strict_decided += decided;
    c.strict_denied += denied;
    if (!fallback.empty()) {
      table.answer_batch(fallback, now, cfg.max_reserve_wait_ns, StrictMode::Local);
      size_t f = 0;
      for (size_t k = 0; k < strict_reqs.size(); k++)
        if (strict_reqs[k].result == StrictResult::Error && queries[strict_idx[k]].strict_fallback_local)
          queries[strict_idx[k]] = fallback[f++];
      c.strict_local += fallback.size();
    }
    uint64_t suppressed = 0;
    if ((denied || !fallback.empty()) && redis_log.allow(now, &suppressed))
      DT_WARN("strict tags: redis did not answer (%s): %llu denied, %zu answered by the local bucket "
              "(%llu similar messages suppressed)",
              redis->last_error().c_str(), static_cast<unsigned long long>(denied), fallback.size(),
              static_cast<unsigned long long>(suppressed));
  }

  void begin_closing(Conn &conn, uint64_t now) {
    if (conn.closing) return;
    conn.closing = true;
    conn.partial.clear();
    conn.deadline = now + cfg.linger_ns;
    closing_count++;
  }

  // Sends what the socket takes, enforces the backlog bound, finishes a closing
  // connection, and keeps the epoll interest in line with what is pending. False if
  // the connection was dropped.
  bool flush(Conn &conn) {
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
      uint64_t suppressed = 0;
      if (warn_log.allow(mono_now_ns(), &suppressed))
        DT_WARN("query socket: disconnected a client that does not read its answers (%zu bytes pending; "
                "%llu similar messages suppressed)",
                conn.out.size(), static_cast<unsigned long long>(suppressed));
      drop(conn);
      return false;
    }
    if (conn.closing && conn.out.empty()) {
      if (conn.eof) {
        drop(conn);
        return false;
      }
      if (!conn.shut) {
        shutdown(conn.fd, SHUT_WR);
        conn.shut = true;
      }
    }
    const uint32_t want = (conn.eof ? 0u : static_cast<uint32_t>(EPOLLIN)) |
                          (conn.out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
    if (want != conn.events) {
      epoll_event ev{};
      ev.events = want;
      ev.data.fd = conn.fd;
      epoll_ctl(epfd, EPOLL_CTL_MOD, conn.fd, &ev);
      conn.events = want;
    }
    return true;
  }

  void drop(Conn &conn) {
    const int fd = conn.fd;
    if (conn.closing) closing_count--;
    close(fd);  // also removes it from the epoll set
    by_activity.erase(conn.lru);
    if (auto it = per_uid.find(conn.peer_uid); it != per_uid.end() && --it->second == 0) per_uid.erase(it);
    conns.erase(fd);
    c.open--;
  }

  // Closes connections that have lingered past their deadline, and those silent for
  // idle_timeout_ns (the least recently active first: by_activity's order).
  void sweep(uint64_t now) {
    expired.clear();
    if (closing_count)
      for (auto &[fd, conn] : conns)
        if (conn->closing && conn->deadline <= now) expired.push_back(fd);
    for (int fd : expired) drop(*conns.at(fd));
    while (cfg.idle_timeout_ns && !by_activity.empty()) {
      Conn &idlest = *conns.at(by_activity.front());
      if (now - idlest.last_active < cfg.idle_timeout_ns) break;
      c.idle_closed++;
      drop(idlest);
    }
  }

  const QueryServerConfig &cfg;
  TagTable &table;
  const int unix_fd, tcp_fd, wake_fd;
  int epfd = -1, spare_fd = -1;
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  size_t closing_count = 0;
  std::vector<char> scratch;
  std::vector<TagQuery> queries;     // of the read being answered
  // Lines answered in place (empty: ERR, BUSY: OK/NO) before queries[i], in order.
  std::vector<std::pair<size_t, std::string>> side_before;
  std::list<int> by_activity;        // every connection, the least recently active first
  SlotHoldings per_uid;  // connections by group (slot_quota.h)
  std::vector<int> expired;
  std::unique_ptr<StrictRedis> redis;       // strict tags; this thread's own client
  std::vector<size_t> strict_idx;           // queries[strict_idx[k]] is strict_reqs[k]
  std::vector<StrictRequest> strict_reqs;
  std::vector<TagQuery> fallback;           // strict, Redis failed, on_redis_error local
  LogLimiter redis_log{10'000'000'000ull, 3};
  Counters c;
  LogLimiter warn_log{10'000'000'000ull, 5};   // refusals and cut-offs: operator news
  LogLimiter input_log{10'000'000'000ull, 5};  // bad input: the client's problem
  LogLimiter admin_log{10'000'000'000ull, 5};  // refused admin commands
};

QueryServer::QueryServer(const QueryServerConfig &cfg, TagTable &table) : cfg_(cfg), table_(table) {}

std::unique_ptr<QueryServer> QueryServer::start(const QueryServerConfig &cfg, TagTable &table, std::string *err) {
  if (cfg.unix_path.empty() && cfg.tcp_listen.empty()) {
    *err = "the query server needs a unix socket path or a TCP listen address";
    return nullptr;
  }
  std::unique_ptr<QueryServer> s(new QueryServer(cfg, table));
  if (!cfg.unix_path.empty()) {
    if ((s->unix_fd_ = bind_unix_socket(cfg.unix_path, cfg.unix_mode, cfg.unix_gid, err)) < 0) return nullptr;
    struct stat st{};
    if (stat(cfg.unix_path.c_str(), &st) == 0) {
      s->unix_dev_ = st.st_dev;
      s->unix_ino_ = st.st_ino;
    }
  }
  if (!cfg.tcp_listen.empty() && (s->tcp_fd_ = bind_tcp_socket(cfg.tcp_listen, &s->tcp_port_, err)) < 0) return nullptr;
  if ((s->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
    set_err(err, "eventfd");
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
  struct stat st{};
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
