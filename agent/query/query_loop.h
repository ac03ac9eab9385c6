// query_loop.h - the query server's event loop and per-connection state (private to
// agent/query/): touched only by the server thread, except the counters.
//
// Every connection is non-blocking and level-triggered. A readable connection is
// read in chunks of up to kReadChunk bytes into one scratch buffer (with the previous
// read's incomplete line in front), all its complete lines are answered with a single
// TagTable::answer_batch, and the answers are sent at once; whatever the socket does
// not take waits in the connection's output buffer (bounded) under EPOLLOUT.
//
// Its parts, a file each: the loop and a connection's reads and writes (query_loop.cpp),
// accepting, evicting and closing connections (query_conns.cpp), the line protocol
// (query_lines.cpp), admin commands (query_admin.cpp) and strict tags' Redis round trip
// (query_strict.cpp).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/log.h"
#include "query/query_server.h"
#include "query/slot_quota.h"
#include "query/strict_redis.h"

namespace dt {

inline constexpr size_t kReadChunk = 64 * 1024;
inline constexpr std::string_view kReserve = "RESERVE ";

struct QueryServer::Loop {
  struct Conn {
    int fd = -1;
    std::string partial;                     // an incomplete line, carried to the next read
    std::string out;                         // answers the socket has not taken yet
    uint32_t events = 0;                     // current epoll interest
    bool closing = false;                    // no more queries: after an error or the client's EOF
    bool eof = false;                        // the client shut its write side
    bool shut = false;                       // we shut ours (after the last answer)
    uint64_t deadline = 0;                   // closing: closed by then whatever happens
    bool admin = false;                      // may send admin commands (a unix peer's uid, is_admin_uid)
    bool tcp = false;                        // came over TCP (never an admin)
    uid_t peer_uid = kRemotePeers;           // its group (slot_quota.h): the peer's uid, or kRemotePeers
    uint64_t last_active = 0;                // the last byte received or sent
    std::list<int>::iterator lru;            // its place in by_activity
    std::shared_ptr<EventSubscription> sub;  // EVENTS: a subscriber (input ignored, never idle)
    bool slow = false;                       // a subscriber cut off for not reading
  };

  struct Counters {
    std::atomic<uint64_t> ok{0}, no{0}, wait{0}, err_empty{0}, err_too_long{0}, err_nul{0};
    std::atomic<uint64_t> accepted{0}, open{0}, refused{0}, backlog{0}, batches{0};
    std::atomic<uint64_t> strict_decided{0}, strict_round_trips{0}, strict_denied{0}, strict_local{0};
    std::atomic<uint64_t> busy_taken{0}, busy_unknown{0};
    std::atomic<uint64_t> admin_refused{0}, idle_closed{0}, evicted{0};
  };

  // What one read's answers were, counted once they are all written.
  struct Tally {
    uint64_t empties = 0, busy_taken = 0, busy_unknown = 0;
    uint64_t ok = 0, no = 0, wait = 0;
  };

  // Why a line ends the connection.
  enum class Fatal { None, TooLong, Nul };

  Loop(const QueryServerConfig &cfg, TagTable &table, int unix_fd, int tcp_fd, int wake_fd);
  ~Loop();
  bool init(std::string *err);
  void run();

  // query_loop.cpp: a connection's events, reads and writes.
  void on_event(Conn &conn, uint32_t events, uint64_t now);
  // Reads and answers, sending the answers of each chunk before reading the next (so
  // the backlog bound applies per chunk); false if the connection was dropped.
  bool on_readable(Conn &conn, uint64_t now);
  // Sends what the socket takes, enforces the backlog bound, finishes a closing
  // connection, and keeps the epoll interest in line with what is pending. False if
  // the connection was dropped.
  bool flush(Conn &conn);
  bool finish_closing(Conn &conn);  // flush's end of a closing connection; false: dropped
  void watch(Conn &conn);           // the epoll interest flush wants
  void begin_closing(Conn &conn, uint64_t now);

  // query_conns.cpp: accepting, evicting and closing connections.
  void accept_all(int lfd, bool tcp);
  void accept_spare(int lfd);  // out of descriptors: accept with the spare one and close
  bool add_conn(int fd, bool tcp, uid_t uid);
  void refuse(const char *why);
  // A unix peer's uid, from the kernel (SO_PEERCRED, as of its connect()); kRemotePeers
  // if it cannot be read (then it is no admin).
  static uid_t peer_uid_of(int fd);
  // At the cap with every connection in use: the least recently active connection of the
  // group slot_victim names makes room (by user, whether over the unix socket or TCP). So
  // one local user cannot lock the others out.
  bool evict_for(uid_t newcomer);
  // At the cap: closes the connection idle the longest, if it has been idle evict_idle_ns,
  // to make room for a new one. False if every connection is busier than that.
  bool evict_idlest(uint64_t now);
  void touch(Conn &conn, uint64_t now);
  void drop(Conn &conn);
  // Closes connections that have lingered past their deadline, and those silent for
  // idle_timeout_ns (the least recently active first: by_activity's order).
  void sweep(uint64_t now);

  // query_lines.cpp: the line protocol.
  // Answers every complete line of `buf` in order; keeps the incomplete rest.
  void answer(Conn &conn, std::string_view buf, uint64_t now);
  // Splits `buf` into lines: tag queries go into `queries`; busy signals and empty lines are
  // answered in place (side_before). Stops at the first line that ends the connection and
  // returns why; an incomplete last line is kept in conn.partial.
  Fatal take_lines(Conn &conn, std::string_view buf, uint64_t now, Tally *tally);
  Fatal take_line(const Conn &conn, std::string_view line, uint64_t now, Tally *tally);
  // The answers in line order: each query's, after the in-place answers that came before it.
  void write_answers(Conn &conn, Tally *tally);
  // After a tag over the limit or a NUL byte: the error line, then the connection closes.
  void refuse_input(Conn &conn, Fatal fatal, uint64_t now);

  // query_admin.cpp: admin commands.
  // An admin command (BUSY, cfg.admin_commands) is answered in place, between the queries
  // around it, through the one gate: conn.admin. False if the line is no admin command.
  bool take_admin_command(const Conn &conn, std::string_view line, uint64_t now, Tally *tally);
  // "VERB ARG" with a known verb and a valid ARG: *cmd (nullptr for BUSY) and *arg.
  bool match_admin_command(std::string_view line, const AdminCommand **cmd, std::string_view *arg) const;
  void refuse_admin(const Conn &conn, std::string_view line, uint64_t now);
  // EVENTS <version>: the answer; a subscription in pending_sub when it is taken.
  std::string subscribe_events(std::string_view version);
  // The event stream: what each subscriber's subscription holds, into its output.
  void deliver_events();

  // query_strict.cpp: the strict queries answer_batch left open: one pipelined round trip
  // to Redis; the ones it cannot answer follow their rule's on_redis_error.
  void answer_strict(uint64_t now);
  void collect_strict();                    // strict_idx and strict_reqs from queries
  uint64_t apply_strict(uint64_t *denied);  // Redis's answers into queries; returns how many it decided
  void answer_fallback(uint64_t now);       // the local bucket for those `fallback` holds

  const QueryServerConfig &cfg;
  TagTable &table;
  const int unix_fd, tcp_fd, wake_fd;
  int epfd = -1, spare_fd = -1;
  int events_fd = -1;                              // eventfd: lines wait for subscribers
  std::shared_ptr<EventSubscription> pending_sub;  // taken by EVENTS in the read being answered
  std::vector<int> subscribers;                    // the connections that stream events
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  size_t closing_count = 0;
  std::vector<char> scratch;
  std::vector<TagQuery> queries;  // of the read being answered
  // Lines answered in place (empty: ERR, BUSY: OK/NO) before queries[i], in order.
  std::vector<std::pair<size_t, std::string>> side_before;
  std::list<int> by_activity;  // every connection, the least recently active first
  SlotHoldings per_uid;        // connections by group (slot_quota.h)
  std::vector<int> expired;
  std::unique_ptr<StrictRedis> redis;  // strict tags; this thread's own client
  std::vector<size_t> strict_idx;      // queries[strict_idx[k]] is strict_reqs[k]
  std::vector<StrictRequest> strict_reqs;
  std::vector<TagQuery> fallback;  // strict, Redis failed, on_redis_error local
  LogLimiter redis_log{10'000'000'000ull, 3};
  Counters c;
  LogLimiter warn_log{10'000'000'000ull, 5};   // refusals and cut-offs: operator news
  LogLimiter input_log{10'000'000'000ull, 5};  // bad input: the client's problem
  LogLimiter admin_log{10'000'000'000ull, 5};  // refused admin commands
};

}  // namespace dt
