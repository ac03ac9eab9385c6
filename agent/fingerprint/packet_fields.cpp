// packet_fields.cpp - Ethernet / VLAN / IP / transport header fields of a captured frame.
#include "fingerprint/packet_fields.h"

#include <arpa/inet.h>

#include <cstring>

namespace dt {
namespace {

uint16_t be16(const std::string &d, size_t at) {
  return static_cast<uint16_t>((static_cast<uint8_t>(d[at]) << 8) | static_cast<uint8_t>(d[at + 1]));
}

// The transport header at `at`, for a first fragment.
void take_transport(const std::string &d, size_t at, PacketFields *f) {
  if ((f->proto == 6 || f->proto == 17) && d.size() >= at + 4) {
    f->has_ports = true;
    f->sport = be16(d, at), f->dport = be16(d, at + 2);
  }
  if (f->proto == 6 && d.size() >= at + 14) {
    f->has_flags = true;
    f->tcp_flags = static_cast<uint8_t>(d[at + 13]);
  }
}

bool take_ipv4(const std::string &d, size_t at, PacketFields *f) {
  if (d.size() < at + 20) return false;
  const size_t ihl = (static_cast<uint8_t>(d[at]) & 0x0f) * 4u;
  if ((static_cast<uint8_t>(d[at]) >> 4) != 4 || ihl < 20) return false;
  f->ttl = static_cast<uint8_t>(d[at + 8]);
  f->proto = static_cast<uint8_t>(d[at + 9]);
  memcpy(f->src, d.data() + at + 12, 4);
  const bool first_fragment = (be16(d, at + 6) & 0x1fff) == 0;
  if (first_fragment) take_transport(d, at + ihl, f);
  return true;
}

bool take_ipv6(const std::string &d, size_t at, PacketFields *f) {
  if (d.size() < at + 40 || (static_cast<uint8_t>(d[at]) >> 4) != 6) return false;
  f->v6 = true;
  f->proto = static_cast<uint8_t>(d[at + 6]);
  f->ttl = static_cast<uint8_t>(d[at + 7]);
  memcpy(f->src, d.data() + at + 8, 16);
  take_transport(d, at + 40, f);
  return true;
}

}  // namespace

bool parse_fields(const std::string &d, uint32_t orig_len, PacketFields *out) {
  *out = PacketFields{};
  out->len = orig_len;
  size_t at = 12;
  for (int tags = 0; tags <= 2; tags++) {
    if (d.size() < at + 2) return false;
    const uint16_t type = be16(d, at);
    if (type == 0x0800) return take_ipv4(d, at + 2, out);
    if (type == 0x86DD) return take_ipv6(d, at + 2, out);
    if (type != 0x8100 && type != 0x88A8) return false;
    at += 4;  // a VLAN tag: its TCI, then the next type
  }
  return false;
}

std::string source_text(const PacketFields &f) {
  char buf[INET6_ADDRSTRLEN] = "";
  inet_ntop(f.v6 ? AF_INET6 : AF_INET, f.src, buf, sizeof buf);
  return buf;
}

}  // namespace dt
