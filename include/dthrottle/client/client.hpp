// client.hpp - header-only C++ client of the dthrottle query socket.
//
//   dthrottle::Client throttle("/run/dthrottle/query.sock");   // or "127.0.0.1:7800"
//   if (!throttle.allow("user:" + id)) return reply_429();
//   auto page = throttle.throttled("api:" + key, [&] { return render(); });  // optional<>
//   auto r = throttle.reserve("export");         // a reserved permit: sleep r.wait first
//   throttle.busy("api");                        // the service is overloaded: adaptive
//                                                // rules back off (see the README)
//
// Protocol (docs/query-protocol.md): "<tag>\n" -> "OK\n" | "NO\n";
// "RESERVE <tag>\n" -> "OK\n" | "WAIT <ms>\n" | "NO\n"; "BUSY <name>\n" -> "OK\n" | "NO\n"
// | "ERR not allowed\n" (this user may not send BUSY: --query-admin-uids). A refused
// busy signal is an answer, not a failure: busy() is false, the connection stays, no
// back-off starts; counted in stats().not_allowed.
//
// The agent closes connections silent for --query-idle-timeout (60 s), and one idle for
// a second when it needs the room for a new client. A kept connection the agent closed
// is noticed before the query is sent, or by an end of file instead of an answer: the
// query is then sent once more on a new connection within the same deadline, so an idle
// close never lets a request through unasked. A new connection the agent refuses at once
// (every slot busy) is a failure as below: fail-safe.
//
// Fail-safe, as the reference daemon asks of its clients: every query has a short
// deadline (ClientOptions::timeout, 50 ms by default, covering connect, send and
// receive). If the agent cannot be reached, does not answer in time, or answers
// nonsense, the request is allowed, the connection is dropped (a late answer must
// not be mistaken for the next one's) and no query is made for a back-off period
// that doubles from backoff_initial (1 s) up to backoff_max (30 s); every query in
// that period is allowed without I/O. The first query after it reconnects, and a
// successful answer resets the back-off. The back-off is timed by ClientOptions::clock
// (steady_clock by default; tests give a fake one); the per-query deadline is real time,
// as the kernel waits in real time.
//
// Tags: 1 to 1024 bytes, no '\n' or NUL; allow() also refuses tags beginning with
// "RESERVE " or "BUSY " (the protocol would read them as a reservation or a busy signal). An invalid tag is never
// sent: the call is allowed (fail-safe) and counted in stats().invalid_tags, so
// sanitize (e.g. hash) tags built from untrusted input.
//
// One connection per Client, kept open between queries. The calls are thread-safe
// (a mutex serializes them); for many threads, one Client per thread avoids waiting.
// Endpoints: a path ("/run/x.sock", "./x.sock", "unix:/run/x.sock") or HOST:PORT
// ("127.0.0.1:7800", "[::1]:7800"; the grammar of endpoint.hpp; a host name is resolved
// with getaddrinfo, which may block: prefer numeric addresses). An endpoint that is neither
// fails every connection, so every query is allowed (fail-safe).
#pragma once

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "endpoint.hpp"

namespace dthrottle {

struct ClientOptions {
  std::chrono::milliseconds timeout{50};  // per query: connect + send + receive
  std::chrono::milliseconds backoff_initial{1000};
  std::chrono::milliseconds backoff_max{30000};
  // What times the back-off: steady_clock, or a fake one that a test advances by hand.
  std::function<std::chrono::steady_clock::time_point()> clock = [] { return std::chrono::steady_clock::now(); };
};

struct ClientStats {
  uint64_t answered = 0;      // queries the agent answered
  uint64_t failures = 0;      // connect, I/O, timeout or protocol failures (each starts a back-off)
  uint64_t backed_off = 0;    // queries allowed without asking, during a back-off
  uint64_t invalid_tags = 0;  // queries allowed without asking, because the tag is invalid
  uint64_t connects = 0;      // connections made
  uint64_t not_allowed = 0;   // admin commands (BUSY) the agent refused: "ERR not allowed"
};

// The answer to reserve(): proceed now, proceed after `wait`, or do not proceed.
struct Reservation {
  enum class Kind { Now, Wait, Denied };
  Kind kind = Kind::Now;
  std::chrono::milliseconds wait{0};
  bool granted() const { return kind != Kind::Denied; }
};

class Client {
 public:
  static constexpr size_t kMaxTagBytes = 1024;

  explicit Client(std::string endpoint, ClientOptions opt = {})
      : endpoint_(std::move(endpoint)), opt_(with_clock(std::move(opt))), backoff_(opt_.backoff_initial) {}
  ~Client() { disconnect(); }
  Client(const Client &) = delete;
  Client &operator=(const Client &) = delete;

  // True if the request tagged `tag` should be served (or the agent is unavailable).
  bool allow(std::string_view tag) {
    if (!valid_tag(tag) || tag.starts_with("RESERVE ") || (tag.starts_with("BUSY ") && tag.size() > 5))
      return invalid();
    std::string answer;
    if (!ask(std::string(tag), &answer)) return true;
    return answer == "OK";
  }

  // A reserved permit: Now (a token now), Wait (sleep `wait`, then proceed without
  // asking again) or Denied. Fail-safe: Now when the agent is unavailable.
  Reservation reserve(std::string_view tag) {
    Reservation r;
    if (!valid_tag(tag)) {
      invalid();
      return r;
    }
    std::string answer;
    if (!ask("RESERVE " + std::string(tag), &answer)) return r;
    if (answer == "NO") r.kind = Reservation::Kind::Denied;
    else if (answer.starts_with("WAIT ")) {
      r.kind = Reservation::Kind::Wait;
      r.wait = std::chrono::milliseconds(std::strtoull(answer.c_str() + 5, nullptr, 10));
    }
    return r;
  }

  // A busy signal for the adaptive rule `name` (a packet rule's name, or a tag whose
  // tag rule is adaptive): true if an adaptive rule took it. Fail-safe the other way
  // round from allow(): a signal that cannot be delivered changes nothing (false).
  bool busy(std::string_view name) {
    if (!valid_tag(name)) {
      invalid();
      return false;
    }
    std::string answer;
    return ask("BUSY " + std::string(name), &answer) && answer == "OK";
  }

  // Calls fn() only if allow(tag). Returns whether it was called (void fn) or
  // std::optional of its result (empty when throttled).
  template <class F>
  auto throttled(std::string_view tag, F &&fn) {
    using R = std::invoke_result_t<F &>;
    if constexpr (std::is_void_v<R>) {
      if (!allow(tag)) return false;
      fn();
      return true;
    } else {
      if (!allow(tag)) return std::optional<R>();
      return std::optional<R>(fn());
    }
  }

  ClientStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  // True while queries are skipped after a failure.
  bool backing_off() const {
    std::lock_guard<std::mutex> lock(mu_);
    return opt_.clock() < retry_at_;
  }

 private:
  using Clock = std::chrono::steady_clock;

  // An empty clock (a caller that cleared it) is the steady clock, not a throw on first use.
  static ClientOptions with_clock(ClientOptions opt) {
    if (!opt.clock) opt.clock = [] { return Clock::now(); };
    return opt;
  }

  static bool valid_tag(std::string_view tag) {
    return !tag.empty() && tag.size() <= kMaxTagBytes && tag.find('\n') == std::string_view::npos &&
           tag.find('\0') == std::string_view::npos;
  }

  bool invalid() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.invalid_tags++;
    return true;
  }

  // Sends `line` + '\n' and reads one answer line (without '\n'). False on any failure
  // or during a back-off: the caller then fails safe.
  bool ask(const std::string &line, std::string *answer) {
    std::lock_guard<std::mutex> lock(mu_);
    if (opt_.clock() < retry_at_) {
      stats_.backed_off++;
      return false;
    }
    const Clock::time_point deadline = Clock::now() + opt_.timeout;
    const std::string msg = line + '\n';
    const bool reused = fd_ >= 0 && !closed_by_agent();
    bool ok = exchange(msg, answer, deadline);
    if (!ok && reused && closed_) {  // the agent had closed the kept connection: it never read the line
      disconnect();
      ok = exchange(msg, answer, deadline);
    }
    if (ok && *answer == "ERR not allowed") stats_.not_allowed++;
    else if (!ok || !(*answer == "OK" || *answer == "NO" || answer->starts_with("WAIT "))) {
      fail();
      return false;
    }
    stats_.answered++;
    backoff_ = opt_.backoff_initial;
    return true;
  }

  // One line sent and its answer read, connecting first if need be. On failure, closed_
  // says whether the agent closed the connection before any byte of the answer.
  bool exchange(const std::string &msg, std::string *answer, Clock::time_point deadline) {
    closed_ = false;
    return (fd_ >= 0 || connect_by(deadline)) && send_all(msg, deadline) && recv_line(answer, deadline);
  }

  // True (and the connection dropped) if the agent closed the kept connection, or sent
  // something no query asked for.
  bool closed_by_agent() {
    pollfd p{fd_, POLLIN, 0};  // readable with no query asked: end of file, or stray bytes
    if (poll(&p, 1, 0) == 0) return false;
    disconnect();
    return true;
  }

  void fail() {
    disconnect();
    stats_.failures++;
    retry_at_ = opt_.clock() + backoff_;
    backoff_ = std::min(backoff_ * 2, opt_.backoff_max);
  }

  void disconnect() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    inbuf_.clear();
  }

  // Waits until fd is ready for `events` or the deadline passes.
  bool wait_for(short events, Clock::time_point deadline) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() < 0) return false;
      pollfd p{fd_, events, 0};
      // Round up so that a sub-millisecond remainder still waits instead of spinning.
      const int rc = poll(&p, 1, static_cast<int>(left.count()) + 1);
      if (rc > 0) return true;
      if (rc == 0 || errno != EINTR) return false;
    }
  }

  bool connect_by(Clock::time_point deadline) {
    std::string path;
    if (endpoint_.starts_with("unix:")) path = endpoint_.substr(5);
    else if (endpoint_.starts_with("/") || endpoint_.starts_with(".")) path = endpoint_;
    if (!path.empty()) {
      sockaddr_un sa{};
      sa.sun_family = AF_UNIX;
      if (path.size() >= sizeof sa.sun_path) return false;
      std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
      return open_socket(AF_UNIX, reinterpret_cast<sockaddr *>(&sa), sizeof sa, deadline);
    }
    HostPort hp;
    if (!parse_host_port(endpoint_, {}, &hp)) return false;
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo *res = nullptr;
    if (getaddrinfo(hp.host.c_str(), std::to_string(hp.port).c_str(), &hints, &res) != 0 || !res) return false;
    bool ok = false;  // "localhost" may be ::1 and 127.0.0.1: try each address in turn
    for (addrinfo *a = res; a && !ok; a = a->ai_next)
      ok = open_socket(a->ai_family, a->ai_addr, a->ai_addrlen, deadline);
    freeaddrinfo(res);
    if (ok) {
      int one = 1;
      setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return ok;
  }

  bool open_socket(int family, const sockaddr *sa, socklen_t len, Clock::time_point deadline) {
    fd_ = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return false;
    if (connect(fd_, sa, len) != 0) {
      int err = 0;
      socklen_t elen = sizeof err;
      if (errno != EINPROGRESS || !wait_for(POLLOUT, deadline) ||
          getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 || err != 0) {
        disconnect();
        return false;
      }
    }
    stats_.connects++;
    return true;
  }

  bool send_all(const std::string &msg, Clock::time_point deadline) {
    size_t off = 0;
    while (off < msg.size()) {
      const ssize_t n = send(fd_, msg.data() + off, msg.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        off += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_for(POLLOUT, deadline)) continue;
      closed_ = n < 0 && (errno == EPIPE || errno == ECONNRESET);
      return false;
    }
    return true;
  }

  bool recv_line(std::string *line, Clock::time_point deadline) {
    constexpr size_t kMaxAnswer = 64;  // "WAIT <ms>" and "ERR ..." are far shorter
    for (;;) {
      const size_t nl = inbuf_.find('\n');
      if (nl != std::string::npos) {
        line->assign(inbuf_, 0, nl);
        inbuf_.erase(0, nl + 1);
        return true;
      }
      if (inbuf_.size() > kMaxAnswer) return false;
      char buf[256];
      const ssize_t n = recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        inbuf_.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0 || (n < 0 && errno == ECONNRESET)) {  // the agent closed the connection
        closed_ = inbuf_.empty();
        return false;
      }
      if (errno == EINTR) continue;
      if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_for(POLLIN, deadline)) continue;
      return false;
    }
  }

  const std::string endpoint_;
  const ClientOptions opt_;
  mutable std::mutex mu_;
  int fd_ = -1;
  std::string inbuf_;
  bool closed_ = false;  // the last exchange failed on the agent's close, before any answer byte
  std::chrono::milliseconds backoff_;
  Clock::time_point retry_at_{};
  ClientStats stats_;
};

}  // namespace dthrottle
