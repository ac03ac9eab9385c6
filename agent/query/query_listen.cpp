// query_listen.cpp - the query server's listening sockets and what may reach them.
#include "query/query_listen.h"

#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/endpoint.h"

namespace dt {
namespace {

void set_err(std::string *err, const std::string &what) { *err = what + ": " + strerror(errno); }

// The addresses `listen` resolves to (numeric or a name), or nullptr with *err.
addrinfo *resolve_listen(const std::string &s, std::string *err) {
  HostPort hp;
  if (!parse_query_listen(s, &hp, err)) {
    *err = "query listen address " + *err;
    return nullptr;
  }
  const bool bare = hp.host == "*" && !s.starts_with("*");  // ":7800" or "7800"
  if (bare) hp.host = "127.0.0.1";
  else if (hp.host == "*") hp.host = "0.0.0.0";
  const std::string port = std::to_string(hp.port);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo *res = nullptr;
  const int rc = getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || !res) {
    *err = "query listen address '" + s + "': " + gai_strerror(rc);
    return nullptr;
  }
  return res;
}

bool is_loopback(const sockaddr *sa) {
  if (sa->sa_family == AF_INET) return (ntohl(reinterpret_cast<const sockaddr_in *>(sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family != AF_INET6) return false;
  const in6_addr &a = reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
}

// A socket file at `path` nobody listens on is left over from a crash: removed. False with
// *err if the path is taken (a live server, or not a socket).
bool clear_stale_socket(const std::string &path, const sockaddr_un &sa, std::string *err) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return true;
  if (!S_ISSOCK(st.st_mode)) {
    *err = "query socket path '" + path + "' exists and is not a socket";
    return false;
  }
  int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe >= 0 && connect(probe, reinterpret_cast<const sockaddr *>(&sa), sizeof sa) == 0) {
    close(probe);
    *err = "another server is listening on query socket '" + path + "'";
    return false;
  }
  if (probe >= 0) close(probe);
  unlink(path.c_str());
  return true;
}

}  // namespace

bool parse_listen_address(const std::string &s, sockaddr_storage *out, socklen_t *len, std::string *err) {
  addrinfo *res = resolve_listen(s, err);
  if (!res) return false;
  memcpy(out, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

bool listen_address_is_loopback(const std::string &listen, std::string *err) {
  addrinfo *res = resolve_listen(listen, err);
  if (!res) return false;
  bool loopback = true;
  for (addrinfo *a = res; a; a = a->ai_next) loopback = loopback && is_loopback(a->ai_addr);
  freeaddrinfo(res);
  if (!loopback) *err = "'" + listen + "' is not a loopback address";
  return loopback;
}

std::string query_listen_security_error(const std::string &listen, bool insecure) {
  if (listen.empty()) return insecure ? "--query-insecure only makes sense with --query-listen" : "";
  std::string why;
  if (insecure || listen_address_is_loopback(listen, &why)) return "";
  if (why.find("is not a loopback address") == std::string::npos) return "--query-listen " + why;
  return "--query-listen " + why +
         ": anyone who reaches it could spend any tag's budget with no "
         "authentication; listen on 127.0.0.1:PORT or [::1]:PORT (a bare port binds 127.0.0.1), use "
         "--query-socket for local users, or give --query-insecure to serve this address anyway";
}

int bind_unix_socket(const std::string &path, unsigned mode, gid_t gid, std::string *err) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) {
    *err =
        "query socket path '" + path + "' is too long (at most " + std::to_string(sizeof sa.sun_path - 1) + " bytes)";
    return -1;
  }
  memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  if (!clear_stale_socket(path, sa, err)) return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    set_err(err, "socket(AF_UNIX)");
    return -1;
  }
  // bind() makes the file with 0777 & ~umask: under this umask it has `mode` from its first
  // moment, and nobody can connect before listen() (after the group is in place).
  const mode_t old_umask = umask(~mode & 0777);
  const int bound = bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa);
  const int bind_errno = errno;
  umask(old_umask);
  errno = bind_errno;
  if (bound != 0) {
    set_err(err, "cannot bind query socket '" + path + "'");
  } else if (gid != static_cast<gid_t>(-1) && lchown(path.c_str(), static_cast<uid_t>(-1), gid) != 0) {
    set_err(err,
            "cannot give query socket '" + path + "' the group " + std::to_string(gid) + " (--query-socket-group)");
    unlink(path.c_str());
  } else if (listen(fd, SOMAXCONN) != 0) {
    set_err(err, "cannot listen on query socket '" + path + "'");
    unlink(path.c_str());
  } else {
    return fd;
  }
  close(fd);
  return -1;
}

int bind_tcp_socket(const std::string &listen_at, uint16_t *port, std::string *err) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (!parse_listen_address(listen_at, &ss, &len, err)) return -1;
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    set_err(err, "socket(TCP)");
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr *>(&ss), len) != 0 || listen(fd, SOMAXCONN) != 0) {
    set_err(err, "cannot listen on " + listen_at);
    close(fd);
    return -1;
  }
  len = sizeof ss;
  getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len);
  *port = ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in *>(&ss)->sin_port
                                        : reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port);
  return fd;
}

bool parse_socket_mode(const std::string &text, unsigned *mode, std::string *why) {
  unsigned v = 0;
  bool octal = !text.empty() && text.size() <= 4;
  for (char c : text) octal = octal && c >= '0' && c <= '7', v = v * 8 + static_cast<unsigned>(c - '0');
  if (!octal || v > 0777) {
    *why = "'" + text + "' must be octal permissions from 0 to 0777, e.g. 0660 (owner and group read and write)";
    return false;
  }
  *mode = v;
  return true;
}

bool resolve_group(const std::string &text, gid_t *gid, std::string *why) {
  char buf[16384];
  group g{}, *found = nullptr;
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos && text.size() < 10) {
    const gid_t n = static_cast<gid_t>(std::stoul(text));
    if (getgrgid_r(n, &g, buf, sizeof buf, &found) == 0 && found) return *gid = n, true;
  } else if (!text.empty() && getgrnam_r(text.c_str(), &g, buf, sizeof buf, &found) == 0 && found) {
    return *gid = found->gr_gid, true;
  }
  *why = "'" + text + "' is no group of this host (getent group " + text +
         "): give an existing group name or number, e.g. the one of the users whose applications ask";
  return false;
}

gid_t default_socket_group() {
  gid_t gid = 0;
  std::string why;
  return resolve_group("dthrottle", &gid, &why) ? gid : 0;
}

bool parse_uid_list(const std::string &text, std::vector<uid_t> *uids, std::string *why) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    char buf[16384];
    passwd pw{}, *found = nullptr;
    if (!item.empty() && item.find_first_not_of("0123456789") == std::string::npos && item.size() < 10) {
      uids->push_back(static_cast<uid_t>(std::stoul(item)));
    } else if (!item.empty() && getpwnam_r(item.c_str(), &pw, buf, sizeof buf, &found) == 0 && found) {
      uids->push_back(found->pw_uid);
    } else {
      *why = "'" + item + "' is neither a uid nor a user of this host: give UID or NAME, comma separated, e.g. 0,1000";
      return false;
    }
    start = comma + 1;
  }
  return true;
}

size_t query_fd_reserve(size_t peers_and_hubs) { return kQueryFdReserveBase + 2 * peers_and_hubs; }

size_t clamp_connections(size_t wanted, uint64_t nofile, size_t reserve) {
  const uint64_t room = nofile > reserve + 16 ? nofile - reserve : std::max<uint64_t>(nofile / 4, 1);
  return static_cast<size_t>(std::min<uint64_t>(wanted, room));
}

}  // namespace dt
