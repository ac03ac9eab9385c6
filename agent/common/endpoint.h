// endpoint.h - the agent's address options, every one read by the HOST:PORT grammar of
// dthrottle/client/endpoint.hpp (the one the C++ client uses): what each option accepts.
#pragma once

#include <string>

#include "dthrottle/client/endpoint.hpp"

namespace dt {

using dthrottle::HostPort;
using dthrottle::HostPortRules;
using dthrottle::parse_host_port;

// Normalises a peer, hub or listen address ("host:port", "tcp://host:port", "[v6]:port";
// for_bind also "*:port", ":port" and "port") to a ZeroMQ endpoint "tcp://host:port"
// ("*" for every address when binding). False with a sentence in *err if it is not one.
bool normalize_endpoint(const std::string &in, bool for_bind, std::string *out, std::string *err);

// A hub takes two ports: agents publish to its frontend (PORT) and subscribe to its
// backend (PORT + 1). The backend of a normalised frontend; false (port 65535) with *err.
bool hub_backend_endpoint(const std::string &frontend, std::string *backend, std::string *err);

// --metrics: "A.B.C.D:PORT", "[IPv6]:PORT", "*:PORT" (then host "0.0.0.0"), or a bare port
// ("9100", ":9100": host "127.0.0.1", this host only). Numeric only: an address other than
// loopback is the user asking by name for the metrics to be exposed.
bool parse_metrics_address(const std::string &in, HostPort *out, std::string *err);

// --query-listen: HOST:PORT, "*:PORT", ":PORT" or "PORT" (every address: host "*"), port 0
// for a free one.
bool parse_query_listen(const std::string &in, HostPort *out, std::string *err);

// --redis: HOST:PORT or "[v6]:PORT", or a unix socket path (anything with a '/': *port 0).
bool parse_redis_address(const std::string &addr, std::string *host, int *port, std::string *err);

}  // namespace dt
