// address.cpp - source addresses to and from text.
#include "common/address.h"

#include <arpa/inet.h>

namespace dt {

std::string key_to_string(const dt_key &k) {
  char buf[INET6_ADDRSTRLEN];
  if (addr_is_v4(k.addr)) inet_ntop(AF_INET, &k.addr[12], buf, sizeof buf);
  else inet_ntop(AF_INET6, k.addr, buf, sizeof buf);
  return buf;
}

bool key_from_string(const std::string &s, dt_key *out) {
  *out = dt_key{};
  if (inet_pton(AF_INET, s.c_str(), &out->addr[12]) == 1) {
    out->addr[10] = out->addr[11] = 0xff;
    return true;
  }
  return inet_pton(AF_INET6, s.c_str(), out->addr) == 1;
}

}  // namespace dt
