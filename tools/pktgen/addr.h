// addr.h - pktgen's addresses: IPv4 or IPv6 as bytes, the benchmarking ranges it may spoof
// (198.18.0.0/15, RFC 2544; 2001:2::/48, RFC 5180), source ranges and MAC addresses.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "frames/packet_builder.h"

namespace dt::pktgen {

using Mac = frames::Mac;

struct Addr {
  int family = 0;               // AF_INET or AF_INET6
  std::array<uint8_t, 16> b{};  // IPv4: b[0..3]
  size_t len() const { return family == AF_INET ? 4 : 16; }
  bool operator<(const Addr &o) const { return family != o.family ? family < o.family : b < o.b; }
};

bool parse_addr(const std::string &s, Addr *out);
std::string addr_str(const Addr &a);
bool in_test_range(const Addr &a);

// "198.18.1.1+4" -> 198.18.1.1 .. 198.18.1.4 appended to *out (N at most kMaxSources, all of
// them in the benchmarking ranges); false with *err saying why.
bool expand_range(const std::string &s, std::vector<Addr> *out, std::string *err);

// "02:00:00:00:00:01".
bool parse_mac(const std::string &s, Mac *out);

}  // namespace dt::pktgen
