// endpoint.cpp - the agent's address options on the shared HOST:PORT grammar.
#include "common/endpoint.h"

namespace dt {
namespace {

constexpr HostPortRules kPeerRules{.form = "HOST:PORT", .example = "198.18.0.1:7700", .tcp_scheme = true};
constexpr HostPortRules kBindRules{
    .form = "HOST:PORT", .example = "*:7700", .any_host = true, .host_optional = true, .tcp_scheme = true};
constexpr HostPortRules kMetricsRules{
    .form = "ADDR:PORT",
    .example = "9100 or 127.0.0.1:9100 (this host only), [::1]:9100, or 0.0.0.0:9100 (every interface)",
    .any_host = true,
    .host_optional = true};
constexpr HostPortRules kQueryListenRules{
    .form = "ADDR:PORT", .example = "127.0.0.1:7800", .any_host = true, .host_optional = true, .port_zero = true};
constexpr HostPortRules kRedisRules{.form = "HOST:PORT or a unix socket path (with a '/')",
                                    .example = "127.0.0.1:6379"};

}  // namespace

bool normalize_endpoint(const std::string &in, bool for_bind, std::string *out, std::string *err) {
  HostPort hp;
  if (!parse_host_port(in, for_bind ? kBindRules : kPeerRules, &hp, err)) return false;
  if (for_bind && hp.host == "0.0.0.0") hp.host = "*";  // ZeroMQ's spelling of every address
  *out = "tcp://" + hp.text();
  return true;
}

bool hub_backend_endpoint(const std::string &frontend, std::string *backend, std::string *err) {
  HostPort hp;
  if (!parse_host_port(frontend, kBindRules, &hp, err)) return false;
  if (hp.port == 65535) {
    *err = "'" + frontend +
           "': a hub also takes the next port (PORT + 1) for subscribers, so PORT must be "
           "at most 65534";
    return false;
  }
  hp.port++;
  *backend = "tcp://" + hp.text();
  return true;
}

bool parse_metrics_address(const std::string &in, HostPort *out, std::string *err) {
  HostPort hp;
  if (!parse_host_port(in, kMetricsRules, &hp, err)) return false;
  const bool bare = hp.host == "*" && !in.starts_with("*");  // "9100" or ":9100": this host only
  if (bare) hp.host = "127.0.0.1";
  else if (hp.host == "*") hp.host = "0.0.0.0";
  if (!dthrottle::is_ip_address(hp.host)) {
    *err = "'" + in + "': expected a numeric address (a name is not resolved), e.g. " + kMetricsRules.example;
    return false;
  }
  *out = hp;
  return true;
}

bool parse_query_listen(const std::string &in, HostPort *out, std::string *err) {
  return parse_host_port(in, kQueryListenRules, out, err);
}

bool parse_redis_address(const std::string &addr, std::string *host, int *port, std::string *err) {
  if (addr.find('/') != std::string::npos) {
    *host = addr;
    *port = 0;
    return true;
  }
  HostPort hp;
  if (!parse_host_port(addr, kRedisRules, &hp, err)) return false;
  *host = hp.host;
  *port = hp.port;
  return true;
}

}  // namespace dt
