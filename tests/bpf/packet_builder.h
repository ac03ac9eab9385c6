// packet_builder.h - a small fluent builder of Ethernet frames for the BPF tests.
//
//   auto f = PacketBuilder().vlan(100).ipv4("198.18.0.1").udp(16).build();
//   auto g = PacketBuilder().ipv6("2001:2::1").icmpv6(135).build();
//   auto h = PacketBuilder().ipv4("198.18.0.1").ipv4_options(3).truncate(20).build();
//
// Only what the parser looks at is modelled: up to any number of VLAN tags (the
// parser accepts two; a third is a test case), IPv4 with options (IHL > 5) and the
// fields that make a header invalid (version, IHL), IPv6 with hop limit and an
// ICMPv6 type, a UDP payload, a TCP header (ports and flags), an IPv4 fragment offset
// or an IPv6 fragment header, ARP. Addresses must be test ranges (198.18.0.0/15,
// 2001:2::/48); the builder refuses anything else, so no test frame can name a
// real host even by accident.
#pragma once

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dt::test {

constexpr uint16_t kTpid8021Q = 0x8100;
constexpr uint16_t kTpid8021AD = 0x88a8;
constexpr uint16_t kEthIPv4 = 0x0800;
constexpr uint16_t kEthIPv6 = 0x86dd;
constexpr uint16_t kEthARP = 0x0806;
constexpr size_t kEthHdrLen = 14;
constexpr size_t kVlanHdrLen = 4;
constexpr size_t kIPv4HdrLen = 20;
constexpr size_t kIPv6HdrLen = 40;
constexpr size_t kUdpHdrLen = 8;
constexpr uint8_t kIpProtoUdp = 17;
constexpr uint8_t kIpProtoTcp = 6;
constexpr uint8_t kIpProtoFragment = 44;
constexpr uint8_t kTcpAck = 0x10;
constexpr uint8_t kIpProtoIcmpv6 = 58;

class PacketBuilder {
 public:
  // Appends a VLAN tag (the first call is the outermost tag).
  PacketBuilder &vlan(uint16_t vid, uint16_t tpid = kTpid8021Q) {
    tags_.emplace_back(tpid, vid);
    return *this;
  }

  PacketBuilder &ipv4(const std::string &src, const std::string &dst = "198.18.0.254") {
    l3_ = L3::IPv4;
    v4_src_ = parse_v4(src);
    v4_dst_ = parse_v4(dst);
    return *this;
  }
  // IPv4 options of `words` 32-bit words (IHL = 5 + words), filled with NOPs.
  PacketBuilder &ipv4_options(unsigned words) {
    if (words > 10) throw std::invalid_argument("IPv4 options: at most 10 words (IHL 15)");
    v4_option_words_ = words;
    return *this;
  }
  // Overrides the IHL field alone (the header stays 20 bytes + options): for malformed cases.
  PacketBuilder &ipv4_ihl_field(uint8_t ihl) {
    v4_ihl_override_ = ihl;
    return *this;
  }
  // Overrides the version nibble of the IP header (IPv4 or IPv6): for malformed cases.
  PacketBuilder &ip_version_field(uint8_t version) {
    version_override_ = version;
    return *this;
  }

  PacketBuilder &ipv6(const std::string &src, const std::string &dst = "2001:2::fe") {
    l3_ = L3::IPv6;
    v6_src_ = parse_v6(src);
    v6_dst_ = parse_v6(dst);
    return *this;
  }
  PacketBuilder &hop_limit(uint8_t h) {
    hop_limit_ = h;
    return *this;
  }
  // An ICMPv6 message of `type` (code 0) with a 20-byte body (room for an ND target).
  // Sets hop limit 255 unless hop_limit() says otherwise: ND requires 255 (RFC 4861).
  PacketBuilder &icmpv6(uint8_t type) {
    l4_ = L4::ICMPv6;
    icmp_type_ = type;
    return *this;
  }

  PacketBuilder &udp(size_t payload_len = 18) {
    l4_ = L4::UDP;
    payload_len_ = payload_len;
    return *this;
  }
  // A UDP datagram between these ports (18 bytes of payload).
  PacketBuilder &udp_ports(uint16_t sport, uint16_t dport) {
    udp();
    sport_ = sport;
    dport_ = dport;
    return *this;
  }
  // A 20-byte TCP header (no payload) between these ports, with these flags.
  PacketBuilder &tcp(uint16_t sport, uint16_t dport, uint8_t flags = kTcpAck) {
    l4_ = L4::TCP;
    sport_ = sport;
    dport_ = dport;
    tcp_flags_ = flags;
    return *this;
  }
  // IPv4: the flags + fragment offset field (default 0x4000, don't fragment); an offset
  // in 8-byte units makes a later fragment.
  PacketBuilder &ipv4_fragment_field(uint16_t field) {
    v4_frag_field_ = field;
    return *this;
  }
  // IPv6: a fragment header before the L4 header, at `offset` 8-byte units (0: the first).
  PacketBuilder &ipv6_fragment(uint16_t offset) {
    v6_frag_offset_ = offset;
    return *this;
  }

  // An ARP request (who has 198.18.0.254, tell 198.18.0.1).
  PacketBuilder &arp() {
    l3_ = L3::ARP;
    return *this;
  }

  // Cuts the finished frame to its first n bytes (no-op if it is shorter).
  PacketBuilder &truncate(size_t n) {
    truncate_ = n;
    return *this;
  }

  // Offset of the L3 header: Ethernet header plus tags.
  size_t l3_offset() const { return kEthHdrLen + kVlanHdrLen * tags_.size(); }
  // Length of the L3 header as built (IPv4 with options, IPv6 fixed header, ARP body).
  size_t l3_len() const {
    switch (l3_) {
      case L3::IPv4: return kIPv4HdrLen + 4 * v4_option_words_;
      case L3::IPv6: return kIPv6HdrLen;
      case L3::ARP: return 28;
      case L3::None: break;
    }
    return 0;
  }

  std::vector<uint8_t> build() const {
    std::vector<uint8_t> f;
    static const uint8_t kDstMac[6] = {0x02, 0, 0, 0, 0, 0xfe};
    static const uint8_t kSrcMac[6] = {0x02, 0, 0, 0, 0, 0x01};
    f.insert(f.end(), kDstMac, kDstMac + 6);
    f.insert(f.end(), kSrcMac, kSrcMac + 6);
    // Each tag's TPID sits where the previous EtherType would be.
    for (const auto &[tpid, vid] : tags_) {
      put16(f, tpid);
      put16(f, vid & 0x0fff);
    }
    put16(f, ethertype());

    const std::vector<uint8_t> l4 = build_l4();
    switch (l3_) {
      case L3::IPv4: build_ipv4(f, l4); break;
      case L3::IPv6: build_ipv6(f, l4); break;
      case L3::ARP: build_arp(f); break;
      case L3::None: break;
    }
    if (truncate_ && *truncate_ < f.size()) f.resize(*truncate_);
    return f;
  }

 private:
  enum class L3 { None, IPv4, IPv6, ARP };
  enum class L4 { None, UDP, TCP, ICMPv6 };

  static void check_range(bool ok, const std::string &addr) {
    if (!ok)
      throw std::invalid_argument(addr + " is not a test address (198.18.0.0/15, 2001:2::/48)");
  }
  static std::array<uint8_t, 4> parse_v4(const std::string &s) {
    std::array<uint8_t, 4> a{};
    check_range(inet_pton(AF_INET, s.c_str(), a.data()) == 1 && a[0] == 198 &&
                    (a[1] & 0xfe) == 18,
                s);
    return a;
  }
  static std::array<uint8_t, 16> parse_v6(const std::string &s) {
    std::array<uint8_t, 16> a{};
    static const uint8_t kPrefix[6] = {0x20, 0x01, 0x00, 0x02, 0x00, 0x00};
    check_range(inet_pton(AF_INET6, s.c_str(), a.data()) == 1 &&
                    memcmp(a.data(), kPrefix, sizeof kPrefix) == 0,
                s);
    return a;
  }
  static void put16(std::vector<uint8_t> &f, uint16_t v) {
    f.push_back(static_cast<uint8_t>(v >> 8));
    f.push_back(static_cast<uint8_t>(v));
  }

  uint16_t ethertype() const {
    switch (l3_) {
      case L3::IPv4: return kEthIPv4;
      case L3::IPv6: return kEthIPv6;
      case L3::ARP: return kEthARP;
      case L3::None: break;
    }
    return 0x88b5;  // IEEE local experimental EtherType
  }

  std::vector<uint8_t> build_l4() const {
    std::vector<uint8_t> l4;
    if (l4_ == L4::UDP) {
      put16(l4, sport_);
      put16(l4, dport_);
      put16(l4, static_cast<uint16_t>(kUdpHdrLen + payload_len_));
      put16(l4, 0);  // no checksum (IPv4); the parser never looks
      l4.resize(kUdpHdrLen + payload_len_, 0xab);
    } else if (l4_ == L4::TCP) {
      put16(l4, sport_);
      put16(l4, dport_);
      l4.insert(l4.end(), {0, 0, 0, 1, 0, 0, 0, 0});  // seq, ack
      l4.push_back(0x50);                           // data offset: 5 words
      l4.push_back(tcp_flags_);
      put16(l4, 0xffff);  // window
      put16(l4, 0);       // checksum: the parser never looks
      put16(l4, 0);       // urgent pointer
    } else if (l4_ == L4::ICMPv6) {
      l4 = {icmp_type_, 0, 0, 0};
      l4.resize(24, 0);  // reserved word + 16-byte target address
    }
    return l4;
  }

  void build_ipv4(std::vector<uint8_t> &f, const std::vector<uint8_t> &l4) const {
    const size_t start = f.size();
    const size_t hlen = l3_len();
    const uint8_t ihl = v4_ihl_override_.value_or(static_cast<uint8_t>(hlen / 4));
    f.push_back(static_cast<uint8_t>((version_override_.value_or(4) << 4) | (ihl & 0x0f)));
    f.push_back(0);  // DSCP/ECN
    put16(f, static_cast<uint16_t>(hlen + l4.size()));
    put16(f, 0x1234);  // identification
    put16(f, v4_frag_field_);
    f.push_back(64);   // TTL
    f.push_back(l4_proto());
    put16(f, 0);       // checksum, filled below
    f.insert(f.end(), v4_src_.begin(), v4_src_.end());
    f.insert(f.end(), v4_dst_.begin(), v4_dst_.end());
    f.resize(start + hlen, 0x01);  // options: NOP
    uint32_t sum = 0;
    for (size_t i = start; i < start + hlen; i += 2) sum += (f[i] << 8) | f[i + 1];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    f[start + 10] = static_cast<uint8_t>(~sum >> 8);
    f[start + 11] = static_cast<uint8_t>(~sum);
    f.insert(f.end(), l4.begin(), l4.end());
  }

  void build_ipv6(std::vector<uint8_t> &f, const std::vector<uint8_t> &l4) const {
    f.push_back(static_cast<uint8_t>(version_override_.value_or(6) << 4));
    f.push_back(0);
    put16(f, 0);  // flow label
    put16(f, static_cast<uint16_t>(l4.size() + (v6_frag_offset_ ? 8 : 0)));
    f.push_back(v6_frag_offset_ ? kIpProtoFragment : l4_ == L4::None ? 59 : l4_proto());
    f.push_back(hop_limit_.value_or(l4_ == L4::ICMPv6 ? 255 : 64));
    f.insert(f.end(), v6_src_.begin(), v6_src_.end());
    f.insert(f.end(), v6_dst_.begin(), v6_dst_.end());
    if (v6_frag_offset_) {
      f.push_back(l4_ == L4::None ? 59 : l4_proto());
      f.push_back(0);
      put16(f, static_cast<uint16_t>(*v6_frag_offset_ << 3 | 1));  // offset, more fragments
      f.insert(f.end(), {0, 0, 0x12, 0x34});                       // identification
    }
    f.insert(f.end(), l4.begin(), l4.end());
  }

  uint8_t l4_proto() const {
    switch (l4_) {
      case L4::UDP: return kIpProtoUdp;
      case L4::TCP: return kIpProtoTcp;
      case L4::ICMPv6: return kIpProtoIcmpv6;
      case L4::None: break;
    }
    return 253;  // experimental
  }

  static void build_arp(std::vector<uint8_t> &f) {
    static const uint8_t kArp[28] = {0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01,  // request
                                     0x02, 0,    0,    0,    0, 1,              // sender MAC
                                     198,  18,   0,    1,                       // sender IP
                                     0,    0,    0,    0,    0, 0,              // target MAC
                                     198,  18,   0,    254};                    // target IP
    f.insert(f.end(), kArp, kArp + sizeof kArp);
  }

  std::vector<std::pair<uint16_t, uint16_t>> tags_;
  L3 l3_ = L3::None;
  L4 l4_ = L4::None;
  std::array<uint8_t, 4> v4_src_{}, v4_dst_{};
  std::array<uint8_t, 16> v6_src_{}, v6_dst_{};
  unsigned v4_option_words_ = 0;
  std::optional<uint8_t> v4_ihl_override_;
  std::optional<uint8_t> version_override_;
  std::optional<uint8_t> hop_limit_;
  uint8_t icmp_type_ = 0;
  uint16_t sport_ = 40000, dport_ = 9;  // UDP by default: to discard
  uint8_t tcp_flags_ = 0;
  uint16_t v4_frag_field_ = 0x4000;
  std::optional<uint16_t> v6_frag_offset_;
  size_t payload_len_ = 0;
  std::optional<size_t> truncate_;
};

}  // namespace dt::test
