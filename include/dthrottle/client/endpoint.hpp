// endpoint.hpp - the one HOST:PORT grammar of dthrottle's network addresses (header-only,
// libc only), shared by the agent's options and by the C++ client (client.hpp).
//
//   [tcp://] HOST ':' PORT
//   HOST  an IPv4 address (198.18.0.1), an IPv6 address in brackets ([::1], [fe80::1%eth0]),
//         a host name (letters, digits, '-', '.', '_'), or '*' (every address) where the
//         caller listens
//   PORT  1 to 65535, in decimal; 0 (the kernel picks a free port) where the caller allows it
//
// Where the caller listens it may also let the host be left out (":7700" or "7700"): every
// address, as with '*'. The "tcp://" prefix is accepted only where the caller asks (ZeroMQ
// endpoints); no other scheme ever is. A bare IPv6 address ("::1:7700") is refused: whether
// its last group is the port cannot be told, so the message asks for brackets. Digits and
// dots alone must make an IPv4 address ("256.1.1.1", "127.1" are refused, not resolved).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace dthrottle {

// What one use of a HOST:PORT accepts beyond the grammar's core, and how its errors name it.
struct HostPortRules {
  const char *form = "HOST:PORT";          // the expected text, as error messages name it
  const char *example = "127.0.0.1:7800";  // shown with the messages about the text's shape
  bool any_host = false;                   // listening: '*' is every address
  bool host_optional = false;              // listening: ":PORT" or "PORT" alone is every address too (needs any_host)
  bool port_zero = false;                  // listening: port 0 asks the kernel for a free one
  bool tcp_scheme = false;                 // ZeroMQ: an optional "tcp://" prefix
};

struct HostPort {
  std::string host;  // a name, an IPv4 address, an IPv6 address without brackets, or "*"
  uint16_t port = 0;

  bool ipv6() const { return host.find(':') != std::string::npos; }
  // "host:port", an IPv6 host in brackets: how it is written back (and given to ZeroMQ).
  std::string text() const { return (ipv6() ? "[" + host + "]" : host) + ":" + std::to_string(port); }
};

namespace endpoint_detail {

inline bool is_ipv4(const std::string &s) {
  in_addr a;
  return inet_pton(AF_INET, s.c_str(), &a) == 1;
}

// An IPv6 address, optionally with a zone ("fe80::1%eth0", as getaddrinfo takes it).
inline bool is_ipv6(std::string_view s) {
  const size_t pct = s.find('%');
  if (pct != std::string_view::npos && pct + 1 == s.size()) return false;
  in6_addr a;
  return inet_pton(AF_INET6, std::string(s.substr(0, pct)).c_str(), &a) == 1;
}

inline bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

inline bool all_of(std::string_view s, bool (*pred)(char)) {
  for (char c : s)
    if (!pred(c)) return false;
  return !s.empty();
}

inline bool digit(char c) { return c >= '0' && c <= '9'; }
inline bool digit_or_dot(char c) { return digit(c) || c == '.'; }

// The reason a host (neither bracketed nor empty) is refused, or "". `s` is the whole
// HOST:PORT, `port` its text after the last ':'.
inline std::string host_problem(const std::string &host, std::string_view port, std::string_view s,
                                const HostPortRules &rules) {
  if (host == "*") return rules.any_host ? "" : "'*' (every address) is only for listening";
  if (is_ipv6(host)) return "an IPv6 address goes in brackets, e.g. [" + host + "]:" + std::string(port);
  if (is_ipv6(s)) return "an IPv6 address goes in brackets, followed by the port: [ADDRESS]:PORT";
  if (all_of(host, digit_or_dot))
    return is_ipv4(host) ? "" : "'" + host + "' is not an IPv4 address (four numbers from 0 to 255)";
  if (!all_of(host, name_char) || host.size() > 253) return "'" + host + "' is not a host name or address";
  return "";
}

// The port's value, or -1 if `s` is not one the rules accept.
inline int port_value(std::string_view s, const HostPortRules &rules) {
  if (!all_of(s, digit) || s.size() > 5) return -1;
  int v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v > 65535 || (v == 0 && !rules.port_zero) ? -1 : v;
}

}  // namespace endpoint_detail

// True if host is an IPv4 or an IPv6 address (a zone allowed), not a name to resolve.
inline bool is_ip_address(const std::string &host) {
  return endpoint_detail::is_ipv4(host) || endpoint_detail::is_ipv6(host);
}

// Parses `text` by the grammar above and the caller's rules. False if it does not match, with
// a sentence in *err (when err is not null) that quotes the text: "'h:99999': the port ...".
inline bool parse_host_port(std::string_view text, const HostPortRules &rules, HostPort *out,
                            std::string *err = nullptr) {
  namespace d = endpoint_detail;
  auto fail = [&](const std::string &why) {
    if (err) *err = "'" + std::string(text) + "': " + why;
    return false;
  };
  const std::string shape = std::string("expected ") + rules.form + ", e.g. " + rules.example;
  std::string_view s = text;
  if (rules.tcp_scheme && s.starts_with("tcp://")) s.remove_prefix(6);
  if (s.find("://") != std::string_view::npos)
    return fail(rules.tcp_scheme ? "only tcp:// endpoints are supported" : shape + " (no scheme)");
  HostPort hp;
  std::string_view port;
  if (rules.host_optional && d::all_of(s, d::digit)) {  // a bare port
    hp.host = "*";
    port = s;
  } else if (s.starts_with("[")) {
    const size_t close = s.find(']');
    if (close == std::string_view::npos) return fail("no ']' closes the IPv6 address");
    if (!d::is_ipv6(s.substr(1, close - 1)))
      return fail("brackets hold an IPv6 address, and '" + std::string(s.substr(1, close - 1)) + "' is not one");
    if (close + 1 == s.size()) return fail(shape);
    if (s[close + 1] != ':') return fail("expected ':' and the port after ']'");
    hp.host = s.substr(1, close - 1);
    port = s.substr(close + 2);
  } else {
    const size_t colon = s.rfind(':');
    if (colon == std::string_view::npos) return fail(shape);
    hp.host = s.substr(0, colon);
    port = s.substr(colon + 1);
    if (hp.host.empty() && !rules.host_optional) return fail(std::string("needs a host name or address, ") + shape);
    if (hp.host.empty()) hp.host = "*";
    else if (std::string why = d::host_problem(hp.host, port, s, rules); !why.empty()) return fail(why);
  }
  const int p = d::port_value(port, rules);
  if (p < 0)
    return fail(rules.port_zero ? "the port must be from 0 (any free port) to 65535"
                                : "the port must be from 1 to 65535");
  hp.port = static_cast<uint16_t>(p);
  *out = std::move(hp);
  return true;
}

}  // namespace dthrottle
