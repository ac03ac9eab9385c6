// query_server.h - the query socket applications ask "serve or throttle this tag?".
//
// Protocol (the reference daemon's, exactly; full text in docs/query-protocol.md):
//   client: <tag>\n             server: "OK\n" (serve) or "NO\n" (throttle)
// Line based, request/reply, answers in order, computed at once; pipelining is fine
// (a client may send many lines before reading). A tag is any bytes but '\n' and NUL,
// at most kMaxTagLen (1024); "\r" is part of the tag (no CRLF folding).
// Extension, reserved permits:
//   client: RESERVE <tag>\n     server: "OK\n"         a token now, proceed
//                                       "WAIT <ms>\n"  a permit is reserved for you in
//                                                      <ms> ms (rounded up): sleep that
//                                                      long, then proceed, no new query
//                                       "NO\n"         the wait would exceed the max
//                                                      wait, or too many reservations
//                                                      are outstanding
// Extension, busy signals for adaptive rules (adaptive.h), an admin command:
//   client: BUSY <name>\n        server: "OK\n" an adaptive rule took the signal: the
//                                       packet rule named <name>, else the tag rule
//                                       the tag <name> falls under
//                                       "NO\n" no adaptive rule by that name or tag
//                                       "ERR not allowed\n" the peer is no admin
// Admin commands (BUSY, and those of QueryServerConfig::admin_commands) are taken only
// from a unix-socket peer whose uid (SO_PEERCRED, read at accept) is root, the agent's
// own, or in admin_uids; anyone else gets "ERR not allowed\n" (counted, logged at a
// limited rate; the connection stays open) and nothing changes. TCP peers are never
// admins: a loopback TCP connection does not say which local user made it.
// (so a tag may not begin with "RESERVE " or "BUSY "). Errors:
//   empty line                  "ERR empty tag\n", the connection stays open
//   tag over 1024 bytes         "ERR tag too long\n", then the server closes
//   a NUL byte in a line        "ERR nul byte\n", then the server closes
// Answers to the lines before a closing error are sent first. Closing means: flush,
// shut down the write side, discard input until the client closes or linger_ns pass.
//
// Resource bounds: at most max_connections open connections (clamp_connections fits it
// to the descriptor limit). A new connection beyond it takes the place of the
// connection idle the longest if that one has been idle for evict_idle_ns (counted as
// evicted: clients reconnect); else the least recently active connection of the group
// slot_quota.h's slot_victim names (groups: users, by the unix peer's SO_PEERCRED uid or
// the owner of a loopback TCP client's socket, and the remote clients together; evicted
// too); else the new one is accepted and closed at once (counted as refused). So the connections that work are not the
// ones failed, and one local user cannot lock the others out. A connection that neither sends nor takes a byte for
// idle_timeout_ns is closed (counted). At most max_backlog_bytes of answers the socket would not take (the client has
// not read them and the kernel's socket buffer, ~200 KiB, is full): beyond it the client is disconnected (counted), so
// a client that never reads cannot hold memory or block anyone; the server thread never blocks. A client may pipeline
// freely as long as it reads its answers as it goes.
//
// Threading: start() binds the sockets in the caller's thread (errors come back at
// once), then serves every connection from one epoll thread of its own. Each read's
// worth of pipelined queries is answered with one TagTable::answer_batch (one lock).
// The destructor stops the thread, closes every connection and removes the unix socket.
//
// Strict tags (rules with strict = true, see strict_redis.h): the batch's strict
// queries are taken out of answer_batch and decided by Redis through the thread's own
// StrictRedis client, all of them in one pipelined round trip; a query Redis cannot
// answer is denied or answered by the local bucket, as its rule says (both counted and
// logged, rate-limited). Without redis_address, strict rules are answered locally.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/no_copy.h"
#include "events/event_bus.h"
#include "rules/tags.h"

namespace dt {

// Extension, the event stream (docs/events.md), an admin command:
//   client: EVENTS 1\n           server: "OK\n", then one JSON event a line, as they happen,
//                                       until either side closes; input after it is
//                                       ignored and the connection never times out idle
//                                       "ERR ...\n" no events here, another schema
//                                       version than 1, or the subscriber cap is reached
// A subscriber that falls behind (kSubscriberBufferBytes unread beyond max_backlog_bytes
// and the socket's buffer) is disconnected and counted (stream_slow), never waited for.
// A line command only admins may send: "<verb> <arg>\n" (arg 1 to kMaxTagLen bytes, no
// NUL). An admin peer gets run()'s answer (one line, '\n' included); anyone else
// "ERR not allowed\n". run() is called on the query thread, between the queries
// around the line, and must not block. A tag can no longer begin with "<verb> ".
struct AdminCommand {
  std::string verb;                                                                  // "BAN", "UNBAN", ...
  std::function<std::string(std::string_view arg, uint64_t now_ns, uid_t uid)> run;  // uid: the peer's
};

// The answer to an admin command from a peer that is no admin.
inline constexpr std::string_view kErrNotAllowed = "ERR not allowed\n";

// At the connection cap, a new connection replaces one idle at least this long.
inline constexpr uint64_t kEvictIdleNs = 1'000'000'000ull;

// True if a unix-socket peer with this uid may send admin commands: root, the agent's
// own uid (it could ptrace the agent anyway), or one of admin_uids.
bool is_admin_uid(uid_t uid, const std::vector<uid_t> &admin_uids);

struct QueryServerConfig {
  std::string unix_path;                         // --query-socket PATH; "" for none
  std::string tcp_listen;                        // --query-listen ADDR:PORT ("127.0.0.1:7800", "[::1]:7800",
                                                 // "*:7800" = all addresses); port 0 picks a free one. "" for none
  unsigned unix_mode = 0660;                     // permissions of the unix socket file, set at bind
  gid_t unix_gid = static_cast<gid_t>(-1);       // its group (-1: the agent's), set before it is in place
  std::vector<uid_t> admin_uids;                 // may send admin commands, besides root and the agent's uid
  uint64_t idle_timeout_ns = 60'000'000'000ull;  // silent connections closed (0: never)
  uint64_t evict_idle_ns = kEvictIdleNs;         // at the cap: the idle time that makes a connection evictable
  size_t max_connections = 4096;
  size_t max_backlog_bytes = 128 * 1024;         // unread answers per connection
  uint64_t max_reserve_wait_ns = 1'000'000'000;  // RESERVE: longest wait granted
  uint64_t linger_ns = 1'000'000'000;            // closing after an error: how long to drain
  std::string redis_address;                     // --redis: decides strict tags ("" for none)
  uint64_t redis_timeout_ns = 50'000'000;        // --redis-timeout: connect and each command
  // BUSY <name>: a busy signal for an adaptive rule (adaptive.h), called on the query
  // thread; true if an adaptive rule took it. Without a handler, BUSY answers NO.
  std::function<bool(std::string_view name, uint64_t now_ns)> busy;
  // More admin-only commands (e.g. BAN, UNBAN): the same gate as BUSY.
  std::vector<AdminCommand> admin_commands;
  // EVENTS 1: the event stream (events/event_bus.h); null: "ERR no events".
  EventBus *events = nullptr;
};

// Snapshot of the server's counters (monotonic, except connections_open).
struct QueryCounters {
  uint64_t answered_ok = 0, answered_no = 0, answered_wait = 0;
  uint64_t err_empty = 0, err_too_long = 0, err_nul = 0;
  uint64_t connections_accepted = 0;  // served connections, ever
  uint64_t connections_open = 0;
  uint64_t connections_refused = 0;     // over max_connections (or out of descriptors)
  uint64_t backlog_disconnects = 0;     // clients that did not read their answers
  uint64_t batches = 0;                 // answer_batch calls (queries per batch = answers / batches)
  uint64_t strict_decided = 0;          // strict queries Redis answered
  uint64_t strict_round_trips = 0;      // pipelined batches sent to Redis
  uint64_t strict_denied_on_error = 0;  // strict queries denied: Redis failed (on_redis_error deny)
  uint64_t strict_local_on_error = 0;   // answered by the local bucket: Redis failed (local)
  uint64_t busy_taken = 0;              // BUSY lines an adaptive rule took (answered OK)
  uint64_t busy_unknown = 0;            // BUSY lines for no adaptive rule (answered NO)
  uint64_t admin_refused = 0;           // admin commands from a peer that is no admin (ERR not allowed)
  uint64_t idle_closed = 0;             // connections closed after idle_timeout_ns of silence
  uint64_t connections_evicted = 0;     // idle connections closed to make room for a new one
  uint64_t answers() const { return answered_ok + answered_no + answered_wait; }
  uint64_t errors() const { return err_empty + err_too_long + err_nul; }
};

class QueryServer : NoCopy {
 public:
  // Binds every configured socket and starts the thread; nullptr with *err on failure
  // (e.g. the unix path is in use by a live server; a stale socket file is replaced).
  static std::unique_ptr<QueryServer> start(const QueryServerConfig &cfg, TagTable &table, std::string *err);
  ~QueryServer();

  uint16_t tcp_port() const { return tcp_port_; }  // the bound port (0: no TCP)
  const std::string &unix_path() const { return cfg_.unix_path; }
  QueryCounters counters() const;

 private:
  struct Loop;
  QueryServer(const QueryServerConfig &cfg, TagTable &table);

  QueryServerConfig cfg_;
  TagTable &table_;
  int unix_fd_ = -1, tcp_fd_ = -1, wake_fd_ = -1;
  uint16_t tcp_port_ = 0;
  dev_t unix_dev_ = 0;
  ino_t unix_ino_ = 0;  // the socket file we created (removed only if still ours)
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace dt
