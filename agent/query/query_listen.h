// query_listen.h - where the query server listens, and who may reach it there: the unix
// socket made with its mode and group in place before anyone can connect, the TCP
// address (loopback unless asked for by name), and the connection cap the descriptor
// limit allows.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dt {

// Parses "ADDR:PORT" for --query-listen into a bindable address; false with *err if bad.
// A bare port (":7800", "7800") is 127.0.0.1; "*" is every address (0.0.0.0).
bool parse_listen_address(const std::string &s, sockaddr_storage *out, socklen_t *len, std::string *err);

// True if every address `listen` (an --query-listen value) resolves to is a loopback one
// (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104); false with the reason in *err otherwise.
bool listen_address_is_loopback(const std::string &listen, std::string *err);

// "" if --query-listen `listen` may be served, else the message to exit 2 with: a
// non-loopback address needs --query-insecure (anyone who reaches it spends any tag).
std::string query_listen_security_error(const std::string &listen, bool insecure);

// Binds and listens on the unix socket `path` with permissions `mode` and group `gid`
// (-1: the agent's) from the moment it exists: created under a umask that leaves only
// `mode`, its group changed before listen(). A stale socket file (nobody listening) is
// replaced; a live one, or a file that is no socket, is an error. The fd, or -1 with *err.
int bind_unix_socket(const std::string &path, unsigned mode, gid_t gid, std::string *err);

// Binds and listens on TCP `listen_at`; *port is the bound port. The fd, or -1 with *err.
int bind_tcp_socket(const std::string &listen_at, uint16_t *port, std::string *err);

// --query-socket-mode: octal permissions, 0 to 0777 ("660", "0660"); no setuid, setgid
// or sticky bit. False with a sentence in *why.
bool parse_socket_mode(const std::string &text, unsigned *mode, std::string *why);

// --query-socket-group: a group name or number that exists on this host. False with a
// sentence in *why.
bool resolve_group(const std::string &text, gid_t *gid, std::string *why);

// The socket's group when --query-socket-group is not given: `dthrottle` when this host
// has that group, else root's (0).
gid_t default_socket_group();

// --query-admin-uids: UID or user name, comma separated ("0,1000,deploy"); appended to *uids.
bool parse_uid_list(const std::string &text, std::vector<uid_t> *uids, std::string *why);

// Descriptors kept out of the query server's reach: the maps and programs, ZeroMQ, the
// metrics server, Redis and the files the agent opens (kQueryFdReserveBase), plus two per
// configured peer or hub (a ZeroMQ connection each way).
inline constexpr size_t kQueryFdReserveBase = 256;
size_t query_fd_reserve(size_t peers_and_hubs);

// The connection cap the descriptor limit `nofile` (RLIMIT_NOFILE's soft limit) allows:
// `wanted`, at most nofile - reserve; if the reserve leaves fewer than 16, a quarter of
// nofile (at least 1).
size_t clamp_connections(size_t wanted, uint64_t nofile, size_t reserve);

}  // namespace dt
