// redis_server.h - a redis-server of our own for the strict-tag tests and strict_bench: no
// persistence, its files in a private temporary directory, listening on a unix socket there
// (the tests) or on 127.0.0.1 at a free port (the bench, for loopback TCP round trips).
// start() waits until it answers PING; stop() and the destructor kill it by PID.
#pragma once

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "common/no_copy.h"

namespace dt::tools {

class RedisServer : NoCopy {
 public:
  enum class Listen { UnixSocket, Loopback };

  explicit RedisServer(Listen how = Listen::UnixSocket) : how_(how) {
    char tmpl[] = "/tmp/dt-redis-XXXXXX";
    if (mkdtemp(tmpl)) dir_ = tmpl;
    if (how_ == Listen::UnixSocket) {
      address_ = dir_ + "/redis.sock";
    } else {
      port_ = free_port();
      address_ = "127.0.0.1:" + std::to_string(port_);
    }
  }
  ~RedisServer() {
    stop();
    const std::string cmd = "rm -rf '" + dir_ + "'";
    if (!dir_.empty() && system(cmd.c_str()) != 0) fprintf(stderr, "cannot remove %s\n", dir_.c_str());
  }

  // Starts the server (again after stop(): same address) and waits at most 5 s until it
  // answers PING. False if it does not (or no port or directory could be had).
  bool start() {
    if (dir_.empty() || (how_ == Listen::Loopback && port_ <= 0)) return false;
    pid_ = fork();
    if (pid_ == 0) {
      const std::string log = dir_ + "/redis.log", port = std::to_string(port_);
      if (how_ == Listen::UnixSocket)
        execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", address_.c_str(), "--unixsocketperm",
               "700", "--save", "", "--appendonly", "no", "--dir", dir_.c_str(), "--logfile", log.c_str(), nullptr);
      else
        execlp("redis-server", "redis-server", "--bind", "127.0.0.1", "--port", port.c_str(), "--save", "",
               "--appendonly", "no", "--dir", dir_.c_str(), "--logfile", log.c_str(), nullptr);
      _exit(127);
    }
    for (int i = 0; i < 500; i++) {
      if (redisReply *r = command("PING")) {
        freeReplyObject(r);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    if (how_ == Listen::UnixSocket) unlink(address_.c_str());
  }

  // One command on a fresh connection (nullptr if the server does not answer).
  redisReply *command(const char *fmt, const char *arg = nullptr) const {
    redisContext *c =
        how_ == Listen::UnixSocket ? redisConnectUnix(address_.c_str()) : redisConnect("127.0.0.1", port_);
    if (!c || c->err) {
      if (c) redisFree(c);
      return nullptr;
    }
    auto *r = static_cast<redisReply *>(arg ? redisCommand(c, fmt, arg) : redisCommand(c, fmt));
    redisFree(c);
    return r;
  }
  // An integer reply, LLONG_MIN if the reply is anything else.
  long long integer(const char *fmt, const char *arg) const {
    redisReply *r = command(fmt, arg);
    const long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : LLONG_MIN;
    if (r) freeReplyObject(r);
    return v;
  }

  // What --strict-redis takes: the socket's path, or 127.0.0.1:PORT.
  const std::string &address() const { return address_; }
  // The server's private directory (a caller may put its own sockets there).
  const std::string &dir() const { return dir_; }

 private:
  // A port on 127.0.0.1 nobody listens on now (0 if none could be had).
  static int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr *>(&sa), &len) == 0;
    if (fd >= 0) close(fd);
    return ok ? ntohs(sa.sin_port) : 0;
  }

  Listen how_;
  std::string dir_, address_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace dt::tools
