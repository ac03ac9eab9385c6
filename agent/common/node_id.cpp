// node_id.cpp - the default node id from the host name and the interface's MAC address.
#include "common/node_id.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdio>

#include "common/report_types.h"

namespace dt {
namespace {

constexpr size_t kSuffixLen = 7;  // "-" and 6 hex digits

uint64_t fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

bool all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return false;
  return true;
}

// The first IPv4 address of `iface` (else its first IPv6 one), as text; "" if none.
std::string first_address(const ifaddrs *list, const std::string &iface) {
  std::string v6;
  for (const ifaddrs *a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || iface != a->ifa_name) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in *>(a->ifa_addr)->sin_addr, buf, sizeof buf);
      return buf;
    }
    if (a->ifa_addr->sa_family == AF_INET6 && v6.empty()) {
      inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6 *>(a->ifa_addr)->sin6_addr, buf, sizeof buf);
      v6 = buf;
    }
  }
  return v6;
}

}  // namespace

std::string make_node_id(const std::string &host, const uint8_t *hw, size_t len, const std::string &fallback) {
  std::string base = valid_node_id(host) ? host : "dthrottle";
  uint64_t h = 0;
  if (len && !all_zero(hw, len)) h = fnv1a(hw, len);
  else if (!fallback.empty()) h = fnv1a(reinterpret_cast<const uint8_t *>(fallback.data()), fallback.size());
  else return base;
  if (base.size() > 64 - kSuffixLen) base.resize(64 - kSuffixLen);
  char suffix[16];
  snprintf(suffix, sizeof suffix, "-%06llx", static_cast<unsigned long long>(h >> 40));
  return base + suffix;
}

std::string default_node_id(const std::string &iface) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  ifaddrs *list = nullptr;
  if (getifaddrs(&list) != 0) return make_node_id(host, nullptr, 0, "");
  const uint8_t *hw = nullptr;
  size_t len = 0;
  for (const ifaddrs *a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_PACKET || iface != a->ifa_name) continue;
    const auto *ll = reinterpret_cast<const sockaddr_ll *>(a->ifa_addr);
    hw = ll->sll_addr;
    len = ll->sll_halen <= sizeof ll->sll_addr ? ll->sll_halen : 0;
    break;
  }
  std::string id = make_node_id(host, hw, len, first_address(list, iface));
  freeifaddrs(list);
  return id;
}

}  // namespace dt
