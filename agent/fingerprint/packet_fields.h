// packet_fields.h - the header fields `agent fingerprint` compares, read from a captured
// frame: Ethernet (up to two VLAN tags), IPv4 or IPv6 (no extension headers followed),
// then TCP, UDP or ICMP. Pure; every read is bounds-checked (a capture keeps the first
// snaplen bytes only).
#pragma once

#include <cstdint>
#include <string>

namespace dt {

struct PacketFields {
  bool v6 = false;
  uint8_t src[16] = {};    // the source address (IPv4: its 4 bytes first)
  uint8_t proto = 0;       // IP protocol (6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6)
  uint8_t ttl = 0;         // TTL, hop limit
  bool has_ports = false;  // TCP or UDP with its ports captured, first fragment
  uint16_t sport = 0, dport = 0;
  bool has_flags = false;  // TCP with its flags captured
  uint8_t tcp_flags = 0;   // FIN 0x01 SYN 0x02 RST 0x04 PSH 0x08 ACK 0x10 URG 0x20 ECE 0x40 CWR 0x80
  uint32_t len = 0;        // the frame's length (as a rule's `len` compares it)
};

// The fields of one frame of `orig_len` bytes, `data` its captured start. False for a
// frame that is not IPv4 or IPv6 (or whose IP header was cut off).
bool parse_fields(const std::string &data, uint32_t orig_len, PacketFields *out);

// The source address as text ("198.18.7.9", "2001:2::1").
std::string source_text(const PacketFields &f);

}  // namespace dt
