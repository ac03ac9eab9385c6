// addr.cpp - parsing, printing and counting pktgen's addresses.
#include "pktgen/addr.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

#include "common/parse_values.h"
#include "pktgen/run.h"

namespace dt::pktgen {

bool parse_addr(const std::string &s, Addr *out) {
  *out = Addr{};
  if (inet_pton(AF_INET, s.c_str(), out->b.data()) == 1) return out->family = AF_INET, true;
  if (inet_pton(AF_INET6, s.c_str(), out->b.data()) == 1) return out->family = AF_INET6, true;
  return false;
}

std::string addr_str(const Addr &a) {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(a.family, a.b.data(), buf, sizeof buf);
  return buf;
}

bool in_test_range(const Addr &a) {
  if (a.family == AF_INET) return a.b[0] == 198 && (a.b[1] & 0xfe) == 18;
  static const uint8_t kPrefix6[6] = {0x20, 0x01, 0x00, 0x02, 0x00, 0x00};
  return memcmp(a.b.data(), kPrefix6, sizeof kPrefix6) == 0;
}

namespace {

// a + n, big-endian over the address bytes; false if it wraps past the top.
bool addr_add(Addr a, uint64_t n, Addr *out) {
  for (size_t i = a.len(); i-- > 0 && n;) {
    uint64_t v = a.b[i] + (n & 0xff);
    a.b[i] = static_cast<uint8_t>(v);
    n = (n >> 8) + (v >> 8);
  }
  *out = a;
  return n == 0;
}

}  // namespace

bool expand_range(const std::string &s, std::vector<Addr> *out, std::string *err) {
  size_t plus = s.rfind('+');
  Addr first, last;
  uint64_t n = 0;
  std::string count_err;
  if (plus == std::string::npos || !parse_addr(s.substr(0, plus), &first) ||
      !dt::parse_count(s.substr(plus + 1), 1, kMaxSources, &n, &count_err)) {
    *err = "'" + s + "': expected FIRST+N, e.g. 198.18.1.1+4 (N from 1 to " + std::to_string(kMaxSources) + ")";
    return false;
  }
  if (!addr_add(first, n - 1, &last) || !in_test_range(first) || !in_test_range(last)) {
    *err =
        "'" + s + "' leaves 198.18.0.0/15 and 2001:2::/48; pktgen only " + "spoofs addresses reserved for benchmarking";
    return false;
  }
  for (uint64_t i = 0; i < n; i++) {
    Addr a;
    addr_add(first, i, &a);
    out->push_back(a);
  }
  return true;
}

bool parse_mac(const std::string &s, Mac *out) {
  unsigned v[6];
  char tail;
  if (sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
    return false;
  for (int i = 0; i < 6; i++) (*out)[i] = static_cast<uint8_t>(v[i]);
  return true;
}

}  // namespace dt::pktgen
