// test_endpoint.cpp - the one HOST:PORT grammar (dthrottle/client/endpoint.hpp) and the agent's
// address options built on it (common/endpoint.h): rows of text -> host and port, or the error.
#include <gtest/gtest.h>

#include <string>

#include "common/endpoint.h"
#include "dthrottle/client/endpoint.hpp"

namespace {

using dthrottle::HostPort;
using dthrottle::HostPortRules;

// A client connecting (the C++ client's rules: the defaults).
constexpr HostPortRules kConnect{};
// A server listening: '*', an omitted host and port 0 allowed.
constexpr HostPortRules kListen{
    .form = "ADDR:PORT", .example = "*:7800", .any_host = true, .host_optional = true, .port_zero = true};
// A ZeroMQ peer: tcp:// allowed.
constexpr HostPortRules kZmq{.example = "198.18.0.1:7700", .tcp_scheme = true};

struct Row {
  const char *text;
  const HostPortRules *rules;
  const char *host;   // expected host, or nullptr when an error is expected
  int port;           // expected port
  const char *error;  // expected error (the whole message), when host is nullptr
};

const Row kRows[] = {
    // IPv4, IPv6 in brackets, names.
    {"127.0.0.1:7800", &kConnect, "127.0.0.1", 7800, nullptr},
    {"0.0.0.0:1", &kConnect, "0.0.0.0", 1, nullptr},
    {"255.255.255.255:65535", &kConnect, "255.255.255.255", 65535, nullptr},
    {"[::1]:7800", &kConnect, "::1", 7800, nullptr},
    {"[2001:db8::2]:80", &kConnect, "2001:db8::2", 80, nullptr},
    {"[::ffff:198.18.0.1]:80", &kConnect, "::ffff:198.18.0.1", 80, nullptr},
    {"[fe80::1%eth0]:80", &kConnect, "fe80::1%eth0", 80, nullptr},
    {"localhost:7800", &kConnect, "localhost", 7800, nullptr},
    {"redis-1.example.com:6379", &kConnect, "redis-1.example.com", 6379, nullptr},
    {"svc_a:80", &kConnect, "svc_a", 80, nullptr},
    {"1.2.3.4.nip.io:80", &kConnect, "1.2.3.4.nip.io", 80, nullptr},
    {"h:07700", &kConnect, "h", 7700, nullptr},
    // The port: missing, 0, 65536, not a number, trailing garbage.
    {"127.0.0.1", &kConnect, nullptr, 0, "'127.0.0.1': expected HOST:PORT, e.g. 127.0.0.1:7800"},
    {"localhost", &kConnect, nullptr, 0, "'localhost': expected HOST:PORT, e.g. 127.0.0.1:7800"},
    {"127.0.0.1:", &kConnect, nullptr, 0, "'127.0.0.1:': the port must be from 1 to 65535"},
    {"127.0.0.1:0", &kConnect, nullptr, 0, "'127.0.0.1:0': the port must be from 1 to 65535"},
    {"127.0.0.1:65536", &kConnect, nullptr, 0, "'127.0.0.1:65536': the port must be from 1 to 65535"},
    {"127.0.0.1:99999", &kConnect, nullptr, 0, "'127.0.0.1:99999': the port must be from 1 to 65535"},
    {"127.0.0.1:000080", &kConnect, nullptr, 0, "'127.0.0.1:000080': the port must be from 1 to 65535"},
    {"127.0.0.1:http", &kConnect, nullptr, 0, "'127.0.0.1:http': the port must be from 1 to 65535"},
    {"127.0.0.1:-1", &kConnect, nullptr, 0, "'127.0.0.1:-1': the port must be from 1 to 65535"},
    {"127.0.0.1:+80", &kConnect, nullptr, 0, "'127.0.0.1:+80': the port must be from 1 to 65535"},
    {"127.0.0.1:80x", &kConnect, nullptr, 0, "'127.0.0.1:80x': the port must be from 1 to 65535"},
    {"127.0.0.1:80 ", &kConnect, nullptr, 0, "'127.0.0.1:80 ': the port must be from 1 to 65535"},
    {"[::1]:80]", &kConnect, nullptr, 0, "'[::1]:80]': the port must be from 1 to 65535"},
    {"127.0.0.1:80:90", &kConnect, nullptr, 0, "'127.0.0.1:80:90': '127.0.0.1:80' is not a host name or address"},
    {"127.0.0.1:0", &kListen, "127.0.0.1", 0, nullptr},
    {"127.0.0.1:65536", &kListen, nullptr, 0, "'127.0.0.1:65536': the port must be from 0 (any free port) to 65535"},
    // The host: empty, '*', not an address, bare IPv6, brackets.
    {"", &kConnect, nullptr, 0, "'': expected HOST:PORT, e.g. 127.0.0.1:7800"},
    {":7800", &kConnect, nullptr, 0, "':7800': needs a host name or address, expected HOST:PORT, e.g. 127.0.0.1:7800"},
    {"7800", &kConnect, nullptr, 0, "'7800': expected HOST:PORT, e.g. 127.0.0.1:7800"},
    {"*:7800", &kConnect, nullptr, 0, "'*:7800': '*' (every address) is only for listening"},
    {"*:7800", &kListen, "*", 7800, nullptr},
    {":7800", &kListen, "*", 7800, nullptr},
    {"7800", &kListen, "*", 7800, nullptr},
    {"[::]:7800", &kListen, "::", 7800, nullptr},
    {"a b:80", &kConnect, nullptr, 0, "'a b:80': 'a b' is not a host name or address"},
    {"host/x:80", &kConnect, nullptr, 0, "'host/x:80': 'host/x' is not a host name or address"},
    {"256.0.0.1:80", &kConnect, nullptr, 0,
     "'256.0.0.1:80': '256.0.0.1' is not an IPv4 address (four numbers from 0 to 255)"},
    {"127.1:80", &kConnect, nullptr, 0, "'127.1:80': '127.1' is not an IPv4 address (four numbers from 0 to 255)"},
    {"::1:9100", &kConnect, nullptr, 0, "'::1:9100': an IPv6 address goes in brackets, e.g. [::1]:9100"},
    {"2001:db8::2:80", &kConnect, nullptr, 0,
     "'2001:db8::2:80': an IPv6 address goes in brackets, e.g. [2001:db8::2]:80"},
    {"2001:db8::2", &kConnect, nullptr, 0,
     "'2001:db8::2': an IPv6 address goes in brackets, followed by the port: [ADDRESS]:PORT"},
    {"[::1]", &kConnect, nullptr, 0, "'[::1]': expected HOST:PORT, e.g. 127.0.0.1:7800"},
    {"[::1]:", &kConnect, nullptr, 0, "'[::1]:': the port must be from 1 to 65535"},
    {"[::1]9100", &kConnect, nullptr, 0, "'[::1]9100': expected ':' and the port after ']'"},
    {"[::1:9100", &kConnect, nullptr, 0, "'[::1:9100': no ']' closes the IPv6 address"},
    {"[]:80", &kConnect, nullptr, 0, "'[]:80': brackets hold an IPv6 address, and '' is not one"},
    {"[127.0.0.1]:80", &kConnect, nullptr, 0,
     "'[127.0.0.1]:80': brackets hold an IPv6 address, and '127.0.0.1' is not one"},
    {"[localhost]:80", &kConnect, nullptr, 0,
     "'[localhost]:80': brackets hold an IPv6 address, and 'localhost' is not one"},
    {"[fe80::1%]:80", &kConnect, nullptr, 0,
     "'[fe80::1%]:80': brackets hold an IPv6 address, and 'fe80::1%' is not one"},
    // The scheme: tcp:// where ZeroMQ takes it, nothing else anywhere.
    {"tcp://198.18.0.1:7700", &kZmq, "198.18.0.1", 7700, nullptr},
    {"tcp://[2001:db8::3]:7700", &kZmq, "2001:db8::3", 7700, nullptr},
    {"198.18.0.1:7700", &kZmq, "198.18.0.1", 7700, nullptr},
    {"udp://h:1", &kZmq, nullptr, 0, "'udp://h:1': only tcp:// endpoints are supported"},
    {"tcp://tcp://h:1", &kZmq, nullptr, 0, "'tcp://tcp://h:1': only tcp:// endpoints are supported"},
    {"tcp://h", &kZmq, nullptr, 0, "'tcp://h': expected HOST:PORT, e.g. 198.18.0.1:7700"},
    {"tcp://127.0.0.1:7800", &kConnect, nullptr, 0,
     "'tcp://127.0.0.1:7800': expected HOST:PORT, e.g. 127.0.0.1:7800 (no scheme)"},
};

TEST(Endpoint, GrammarTable) {
  for (const Row &row : kRows) {
    HostPort hp;
    std::string err;
    const bool ok = dthrottle::parse_host_port(row.text, *row.rules, &hp, &err);
    if (row.host) {
      EXPECT_TRUE(ok) << "'" << row.text << "' refused: " << err;
      EXPECT_EQ(hp.host, row.host) << "host of '" << row.text << "'";
      EXPECT_EQ(hp.port, row.port) << "port of '" << row.text << "'";
    } else {
      EXPECT_FALSE(ok) << "'" << row.text << "' accepted as host '" << hp.host << "' port " << hp.port;
      EXPECT_EQ(err, row.error) << "error for '" << row.text << "'";
    }
  }
}

TEST(Endpoint, ErrorIsOptionalAndOutputUntouchedOnError) {
  HostPort hp{"kept", 1};
  EXPECT_FALSE(dthrottle::parse_host_port("nonsense", kConnect, &hp));
  EXPECT_EQ(hp.host, "kept") << "a refused text must leave *out alone";
  EXPECT_EQ(hp.port, 1);
}

TEST(Endpoint, TextPutsIPv6InBrackets) {
  EXPECT_EQ((HostPort{"198.18.0.1", 7700}.text()), "198.18.0.1:7700");
  EXPECT_EQ((HostPort{"2001:db8::1", 7700}.text()), "[2001:db8::1]:7700");
  EXPECT_EQ((HostPort{"*", 7700}.text()), "*:7700");
}

TEST(Endpoint, ZeroMQEndpoints) {
  struct Case {
    const char *in;
    bool for_bind;
    const char *out;  // nullptr: refused, with `error` in the message
    const char *error;
  } cases[] = {
      {"198.18.0.1:7700", false, "tcp://198.18.0.1:7700", nullptr},
      {"tcp://h:7700", false, "tcp://h:7700", nullptr},
      {"[2001:2::3]:7700", false, "tcp://[2001:2::3]:7700", nullptr},
      {"7700", true, "tcp://*:7700", nullptr},
      {":7700", true, "tcp://*:7700", nullptr},
      {"*:7700", true, "tcp://*:7700", nullptr},
      {"0.0.0.0:7701", true, "tcp://*:7701", nullptr},
      {"[::]:7701", true, "tcp://[::]:7701", nullptr},
      {":7700", false, nullptr, "':7700': needs a host name or address"},
      {"*:7700", false, nullptr, "'*:7700': '*' (every address) is only for listening"},
      {"7700", false, nullptr, "'7700': expected HOST:PORT"},
      {"h:0", true, nullptr, "'h:0': the port must be from 1 to 65535"},
  };
  for (const auto &c : cases) {
    std::string out, err;
    const bool ok = dt::normalize_endpoint(c.in, c.for_bind, &out, &err);
    if (c.out) {
      EXPECT_TRUE(ok) << "'" << c.in << "' refused: " << err;
      EXPECT_EQ(out, c.out) << "'" << c.in << "' for_bind=" << c.for_bind;
    } else {
      EXPECT_FALSE(ok) << "'" << c.in << "' accepted as " << out;
      EXPECT_EQ(err.rfind(c.error, 0), 0u) << "error for '" << c.in << "': " << err;
    }
  }
}

TEST(Endpoint, HubBackendIsTheNextPort) {
  std::string backend, err;
  ASSERT_TRUE(dt::hub_backend_endpoint("tcp://198.18.0.9:7701", &backend, &err)) << err;
  EXPECT_EQ(backend, "tcp://198.18.0.9:7702");
  ASSERT_TRUE(dt::hub_backend_endpoint("tcp://[2001:2::9]:7701", &backend, &err)) << err;
  EXPECT_EQ(backend, "tcp://[2001:2::9]:7702");
  ASSERT_TRUE(dt::hub_backend_endpoint("tcp://*:65534", &backend, &err)) << err;
  EXPECT_EQ(backend, "tcp://*:65535");
  EXPECT_FALSE(dt::hub_backend_endpoint("h:65535", &backend, &err)) << "port + 1 would be 65536";
  EXPECT_NE(err.find("at most 65534"), std::string::npos) << err;
}

TEST(Endpoint, MetricsAddressIsNumeric) {
  HostPort a;
  std::string err;
  ASSERT_TRUE(dt::parse_metrics_address("*:9100", &a, &err)) << err;
  EXPECT_EQ(a.host, "0.0.0.0") << "'*' binds every IPv4 address, like 0.0.0.0";
  EXPECT_FALSE(dt::parse_metrics_address("localhost:9100", &a, &err));
  EXPECT_EQ(err,
            "'localhost:9100': expected a numeric address (a name is not resolved), e.g. 9100 or "
            "127.0.0.1:9100 (this host only), [::1]:9100, or 0.0.0.0:9100 (every interface)");
  for (const char *bare : {"9100", ":9100"}) {
    ASSERT_TRUE(dt::parse_metrics_address(bare, &a, &err)) << err;
    EXPECT_EQ(a.host, "127.0.0.1") << bare << ": a bare port is this host only";
    EXPECT_EQ(a.port, 9100);
  }
  EXPECT_FALSE(dt::parse_metrics_address("9100:", &a, &err));
}

TEST(Endpoint, QueryListenAndRedis) {
  HostPort a;
  std::string err, host;
  int port = -1;
  ASSERT_TRUE(dt::parse_query_listen("127.0.0.1:0", &a, &err)) << err;
  EXPECT_EQ(a.port, 0) << "port 0: the kernel picks one";
  ASSERT_TRUE(dt::parse_query_listen("localhost:7800", &a, &err)) << err;
  ASSERT_TRUE(dt::parse_query_listen(":7800", &a, &err)) << err;
  EXPECT_EQ(a.host, "*");
  EXPECT_FALSE(dt::parse_query_listen("127.0.0.1", &a, &err));
  EXPECT_EQ(err, "'127.0.0.1': expected ADDR:PORT, e.g. 127.0.0.1:7800");
  ASSERT_TRUE(dt::parse_redis_address("redis.local:6379", &host, &port, &err)) << err;
  EXPECT_EQ(host, "redis.local");
  EXPECT_EQ(port, 6379);
  EXPECT_FALSE(dt::parse_redis_address("localhost", &host, &port, &err));
  EXPECT_EQ(err, "'localhost': expected HOST:PORT or a unix socket path (with a '/'), e.g. 127.0.0.1:6379");
  EXPECT_FALSE(dt::parse_redis_address("*:6379", &host, &port, &err)) << "redis is connected to, not bound";
}

}  // namespace
