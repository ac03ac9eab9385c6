// packet_builder.h - the one builder of Ethernet frames for the BPF tests, bench and pktgen
// (and v4/v6: the tests' usual UDP frame from a source).
//
//   auto f = PacketBuilder().vlan(100).ipv4("198.18.0.1").udp(16).build();
//   auto g = PacketBuilder().ipv6("2001:2::1").icmpv6(135).build();
//   auto h = PacketBuilder().ipv4("198.18.0.1").ipv4_options(3).truncate(20).build();
//   auto t = PacketBuilder().ipv6("2001:2::1").ipv6_ext(Ipv6Ext::HopByHop).tcp(443, 0x02).build();
//   auto p = PacketBuilder().macs(dst, src).ipv4(a, b).udp(16).ports(40000, 9999).payload("x").build();
//
// Modelled: any number of VLAN tags (the parser accepts two; a third is a test case), IPv4
// with options (IHL > 5), its fragment field and the fields that make a header invalid
// (version, IHL), IPv6 with hop limit and extension headers, UDP and TCP (with their
// checksums: pktgen's frames reach a real stack), TCP ports, flags, sequence number and an
// MSS option, ICMP and ICMPv6, ARP, any other protocol.
// Addresses must be test ranges (198.18.0.0/15, 2001:2::/48); the builder refuses anything
// else, so no frame it builds can name a real host even by accident.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dt::frames {

constexpr uint16_t kTpid8021Q = 0x8100, kTpid8021AD = 0x88a8;               // VLAN tags
constexpr uint16_t kEthIPv4 = 0x0800, kEthIPv6 = 0x86dd, kEthARP = 0x0806;  // EtherTypes
constexpr size_t kEthHdrLen = 14, kVlanHdrLen = 4;                          // header lengths
constexpr size_t kIPv4HdrLen = 20, kIPv6HdrLen = 40, kUdpHdrLen = 8, kTcpHdrLen = 20;
constexpr uint8_t kIpProtoUdp = 17, kIpProtoIcmpv6 = 58;

using Mac = std::array<uint8_t, 6>;

// IPv6 extension headers: 8 bytes each (options padded with PadN); a first fragment has
// offset 0 and more to come, a later one offset 800 bytes.
enum class Ipv6Ext { HopByHop, DestOpts, FragFirst, FragLater };

class PacketBuilder {
 public:
  PacketBuilder &macs(const Mac &dst, const Mac &src) {
    src_mac_ = src;
    return set(&dst_mac_, dst);
  }
  // Appends a VLAN tag (the first call is the outermost tag).
  PacketBuilder &vlan(uint16_t vid, uint16_t tpid = kTpid8021Q) {
    tags_.emplace_back(tpid, vid);
    return *this;
  }

  PacketBuilder &ipv4(const std::string &src, const std::string &dst = "198.18.0.254") {
    v4_src_ = parse_v4(src), v4_dst_ = parse_v4(dst);
    return set(&l3_, L3::IPv4);
  }
  // IPv4 options of `words` 32-bit words (IHL = 5 + words), filled with NOPs.
  PacketBuilder &ipv4_options(unsigned words) {
    if (words > 10) throw std::invalid_argument("IPv4 options: at most 10 words (IHL 15)");
    return set(&v4_option_words_, words);
  }
  // The flags + fragment offset field: 0x4000 DF (the default), 0x2000 MF (a first
  // fragment), an offset in 8-byte units for a later fragment.
  PacketBuilder &ipv4_frag_field(uint16_t field) { return set(&v4_frag_field_, field); }
  // Overrides the IHL field alone (the header stays 20 bytes + options): for malformed cases.
  PacketBuilder &ipv4_ihl_field(uint8_t ihl) { return set(&v4_ihl_override_, ihl); }
  // Overrides the version nibble of the IP header (IPv4 or IPv6): for malformed cases.
  PacketBuilder &ip_version_field(uint8_t version) { return set(&version_override_, version); }

  PacketBuilder &ipv6(const std::string &src, const std::string &dst = "2001:2::fe") {
    v6_src_ = parse_v6(src), v6_dst_ = parse_v6(dst);
    return set(&l3_, L3::IPv6);
  }
  PacketBuilder &hop_limit(uint8_t h) { return set(&hop_limit_, h); }
  // Appends an extension header (the first call comes right after the fixed header).
  PacketBuilder &ipv6_ext(Ipv6Ext e) {
    v6_exts_.push_back(e);
    return *this;
  }

  // An ICMPv6 message of `type` (code 0) with a 20-byte body (room for an ND target).
  // Sets hop limit 255 unless hop_limit() says otherwise: ND requires 255 (RFC 4861).
  PacketBuilder &icmpv6(uint8_t type, uint8_t code = 0) {
    icmp_type_ = type, icmp_code_ = code;
    return set(&l4_, L4::ICMPv6);
  }
  // An ICMP echo request (IPv4).
  PacketBuilder &icmp_echo() { return icmp(8, 0); }
  // An ICMP message of `type` and `code` (IPv4), 8 bytes: echo's layout for any type.
  PacketBuilder &icmp(uint8_t type, uint8_t code) {
    icmp_type_ = type, icmp_code_ = code;
    return set(&l4_, L4::ICMP);
  }
  // UDP with `payload_len` bytes of payload, from port 40000 to 9 unless ports() says otherwise.
  PacketBuilder &udp(size_t payload_len = 18) {
    payload_len_ = payload_len;
    return set(&l4_, L4::UDP);
  }
  // A 20-byte TCP header (no options unless tcp_mss) from port 40000 to `dport` with `flags` (0x02 SYN, 0x10 ACK).
  PacketBuilder &tcp(uint16_t dport, uint8_t flags) {
    dport_ = dport, tcp_flags_ = flags;
    return set(&l4_, L4::TCP);
  }
  // The TCP sequence number (default 1).
  PacketBuilder &tcp_seq(uint32_t seq) { return set(&tcp_seq_, seq); }
  // The TCP acknowledgment number (default 0), e.g. a SYN-ACK's sequence number + 1.
  PacketBuilder &tcp_ack(uint32_t ack) { return set(&tcp_ack_, ack); }
  // A TCP MSS option (4 bytes: data offset 6), as a SYN a real stack answers carries.
  PacketBuilder &tcp_mss(uint16_t mss) { return set(&tcp_mss_, mss); }
  // After the MSS, the rest of the options a Linux SYN carries: SACK-permitted, timestamps,
  // NOP, window scale 7 (with tcp_mss: a 40-byte header, as Linux sends).
  PacketBuilder &tcp_syn_options() { return set(&tcp_syn_options_, true); }
  // Another protocol number, with `len` bytes of body the parser does not read.
  PacketBuilder &other_l4(uint8_t proto, size_t len) {
    other_proto_ = proto, payload_len_ = len;
    return set(&l4_, L4::Other);
  }
  PacketBuilder &ports(uint16_t sport, uint16_t dport) {
    sport_ = sport;
    return set(&dport_, dport);
  }
  // The UDP payload repeats `pattern` (default: bytes of 0xab).
  PacketBuilder &payload(const std::string &pattern) { return set(&payload_pattern_, pattern); }

  // An ARP request (who has 198.18.0.254, tell 198.18.0.1).
  PacketBuilder &arp() { return set(&l3_, L3::ARP); }

  // Cuts the finished frame to its first n bytes (no-op if it is shorter).
  PacketBuilder &truncate(size_t n) { return set(&truncate_, n); }

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
    std::vector<uint8_t> f(dst_mac_.begin(), dst_mac_.end());
    f.insert(f.end(), src_mac_.begin(), src_mac_.end());
    // Each tag's TPID sits where the previous EtherType would be.
    for (const auto &[tpid, vid] : tags_) {
      put16(f, tpid);
      put16(f, vid & 0x0fff);
    }
    put16(f, ethertype());

    std::vector<uint8_t> l4 = build_l4();
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
  enum class L4 { None, UDP, TCP, ICMP, ICMPv6, Other };

  // Sets one field and returns the builder: every setter above ends so.
  template <class Field, class Value>
  PacketBuilder &set(Field *field, Value v) {
    *field = v;
    return *this;
  }

  static void check_range(bool ok, const std::string &addr) {
    if (!ok) throw std::invalid_argument(addr + " is not a test address (198.18.0.0/15, 2001:2::/48)");
  }
  static std::array<uint8_t, 4> parse_v4(const std::string &s) {
    std::array<uint8_t, 4> a{};
    check_range(inet_pton(AF_INET, s.c_str(), a.data()) == 1 && a[0] == 198 && (a[1] & 0xfe) == 18, s);
    return a;
  }
  static std::array<uint8_t, 16> parse_v6(const std::string &s) {
    std::array<uint8_t, 16> a{};
    static const uint8_t kPrefix[6] = {0x20, 0x01, 0x00, 0x02, 0x00, 0x00};
    check_range(inet_pton(AF_INET6, s.c_str(), a.data()) == 1 && memcmp(a.data(), kPrefix, sizeof kPrefix) == 0, s);
    return a;
  }
  static void put16(std::vector<uint8_t> &f, uint16_t v) {
    f.push_back(static_cast<uint8_t>(v >> 8));
    f.push_back(static_cast<uint8_t>(v));
  }
  // Internet checksum (RFC 1071) over big-endian 16-bit words, accumulated in `sum`.
  static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n) {
    for (size_t i = 0; i + 1 < n; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
    if (n & 1) sum += static_cast<uint32_t>(p[n - 1] << 8);
    return sum;
  }
  static uint16_t csum_fold(uint32_t sum) {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
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

  // The IP protocol number of the L4 part (with none: 253 experimental, IPv6 59 no next header).
  uint8_t l4_proto() const {
    switch (l4_) {
      case L4::UDP: return kIpProtoUdp;
      case L4::TCP: return IPPROTO_TCP;
      case L4::ICMP: return IPPROTO_ICMP;
      case L4::ICMPv6: return kIpProtoIcmpv6;
      case L4::Other: return other_proto_;
      case L4::None: break;
    }
    return l3_ == L3::IPv6 ? 59 : 253;
  }

  std::vector<uint8_t> build_l4() const {
    std::vector<uint8_t> l4;
    switch (l4_) {
      case L4::UDP:
        put16(l4, sport_);
        put16(l4, dport_);
        put16(l4, static_cast<uint16_t>(kUdpHdrLen + payload_len_));
        put16(l4, 0);  // checksum: filled in by udp_checksum once the addresses are known
        for (size_t i = 0; i < payload_len_; i++)
          l4.push_back(payload_pattern_.empty() ? 0xab
                                                : static_cast<uint8_t>(payload_pattern_[i % payload_pattern_.size()]));
        l4_checksum(l4, kIpProtoUdp, 6);
        break;
      case L4::TCP:
        put16(l4, sport_);
        put16(l4, dport_);
        put16(l4, static_cast<uint16_t>(tcp_seq_ >> 16));
        put16(l4, static_cast<uint16_t>(tcp_seq_));
        put16(l4, static_cast<uint16_t>(tcp_ack_ >> 16));
        put16(l4, static_cast<uint16_t>(tcp_ack_));
        l4.push_back(static_cast<uint8_t>((5 + (tcp_mss_ ? 1 : 0) + (tcp_syn_options_ ? 4 : 0)) << 4));  // data offset
        l4.push_back(tcp_flags_);
        put16(l4, 0xffff);  // window
        put16(l4, 0);       // checksum: filled in by l4_checksum once the addresses are known
        put16(l4, 0);       // urgent pointer
        if (tcp_mss_)
          l4.insert(l4.end(), {2, 4, static_cast<uint8_t>(*tcp_mss_ >> 8), static_cast<uint8_t>(*tcp_mss_)});
        if (tcp_syn_options_) l4.insert(l4.end(), {4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7});
        l4_checksum(l4, IPPROTO_TCP, 16);
        break;
      case L4::ICMP: l4 = {icmp_type_, icmp_code_, 0, 0, 0, 1, 0, 1}; break;  // echo request's layout
      case L4::ICMPv6:
        l4 = {icmp_type_, icmp_code_, 0, 0};
        l4.resize(24, 0);  // reserved word + 16-byte target address
        break;
      case L4::Other: l4.assign(payload_len_, 0x5a); break;
      case L4::None: break;
    }
    return l4;
  }

  // The UDP or TCP checksum (at byte `at` of the segment) over the pseudo header (addresses,
  // protocol, length) and the segment: a real stack (pktgen's sink, a TCP listener) drops a
  // segment without one.
  void l4_checksum(std::vector<uint8_t> &seg, uint8_t proto, size_t at) const {
    uint8_t pseudo[40] = {};
    size_t alen = 0;
    if (l3_ == L3::IPv4) {
      memcpy(pseudo, v4_src_.data(), 4), memcpy(pseudo + 4, v4_dst_.data(), 4), alen = 4;
    } else if (l3_ == L3::IPv6) {
      memcpy(pseudo, v6_src_.data(), 16), memcpy(pseudo + 16, v6_dst_.data(), 16), alen = 16;
    } else {
      return;
    }
    uint32_t sum = csum_add(0, pseudo, 2 * alen);
    const uint8_t tail[4] = {0, proto, static_cast<uint8_t>(seg.size() >> 8), static_cast<uint8_t>(seg.size())};
    const uint16_t c = csum_fold(csum_add(csum_add(sum, tail, 4), seg.data(), seg.size()));
    // UDP: 0 means "no checksum" (and is invalid over IPv6); TCP sends 0xffff's equal, 0, as is.
    const uint16_t on_wire = c || proto != kIpProtoUdp ? c : 0xffff;
    seg[at] = static_cast<uint8_t>(on_wire >> 8);
    seg[at + 1] = static_cast<uint8_t>(on_wire);
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
    f.push_back(64);  // TTL
    f.push_back(l4_proto());
    put16(f, 0);  // checksum, filled below
    f.insert(f.end(), v4_src_.begin(), v4_src_.end());
    f.insert(f.end(), v4_dst_.begin(), v4_dst_.end());
    f.resize(start + hlen, 0x01);  // options: NOP
    const uint16_t sum = csum_fold(csum_add(0, &f[start], hlen));
    f[start + 10] = static_cast<uint8_t>(sum >> 8);
    f[start + 11] = static_cast<uint8_t>(sum);
    f.insert(f.end(), l4.begin(), l4.end());
  }

  static uint8_t ext_number(Ipv6Ext e) {
    return e == Ipv6Ext::HopByHop ? IPPROTO_HOPOPTS : e == Ipv6Ext::DestOpts ? IPPROTO_DSTOPTS : IPPROTO_FRAGMENT;
  }

  // The extension headers, each naming the next one; the last names the L4 protocol.
  std::vector<uint8_t> ext_chain() const {
    std::vector<uint8_t> chain;
    for (size_t i = 0; i < v6_exts_.size(); i++) {
      const uint8_t next = i + 1 < v6_exts_.size() ? ext_number(v6_exts_[i + 1]) : l4_proto();
      if (v6_exts_[i] == Ipv6Ext::HopByHop || v6_exts_[i] == Ipv6Ext::DestOpts) {
        chain.insert(chain.end(), {next, 0, 0x01, 0x04, 0, 0, 0, 0});  // 8 bytes: PadN
      } else {
        // offset << 3 | M: the first fragment has offset 0 and more to come.
        const uint16_t off = v6_exts_[i] == Ipv6Ext::FragFirst ? 0x0001 : static_cast<uint16_t>(100 << 3);
        chain.insert(chain.end(),
                     {next, 0, static_cast<uint8_t>(off >> 8), static_cast<uint8_t>(off), 0, 0, 0x12, 0x34});
      }
    }
    return chain;
  }

  void build_ipv6(std::vector<uint8_t> &f, const std::vector<uint8_t> &l4) const {
    const std::vector<uint8_t> chain = ext_chain();
    f.push_back(static_cast<uint8_t>(version_override_.value_or(6) << 4));
    f.push_back(0);
    put16(f, 0);  // flow label
    put16(f, static_cast<uint16_t>(chain.size() + l4.size()));
    f.push_back(v6_exts_.empty() ? l4_proto() : ext_number(v6_exts_[0]));
    f.push_back(hop_limit_.value_or(l4_ == L4::ICMPv6 ? 255 : 64));
    f.insert(f.end(), v6_src_.begin(), v6_src_.end());
    f.insert(f.end(), v6_dst_.begin(), v6_dst_.end());
    f.insert(f.end(), chain.begin(), chain.end());
    f.insert(f.end(), l4.begin(), l4.end());
  }

  static void build_arp(std::vector<uint8_t> &f) {
    static const uint8_t kArp[28] = {0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01,  // request
                                     0x02, 0,    0,    0,    0, 1,              // sender MAC
                                     198,  18,   0,    1,                       // sender IP
                                     0,    0,    0,    0,    0, 0,              // target MAC
                                     198,  18,   0,    254};                    // target IP
    f.insert(f.end(), kArp, kArp + sizeof kArp);
  }

  Mac dst_mac_ = {0x02, 0, 0, 0, 0, 0xfe}, src_mac_ = {0x02, 0, 0, 0, 0, 0x01};
  std::vector<std::pair<uint16_t, uint16_t>> tags_;
  L3 l3_ = L3::None;
  L4 l4_ = L4::None;
  std::array<uint8_t, 4> v4_src_{}, v4_dst_{};
  std::array<uint8_t, 16> v6_src_{}, v6_dst_{};
  unsigned v4_option_words_ = 0;
  uint16_t v4_frag_field_ = 0x4000;  // don't fragment
  std::optional<uint8_t> v4_ihl_override_;
  std::optional<uint8_t> version_override_;
  std::optional<uint8_t> hop_limit_;
  std::vector<Ipv6Ext> v6_exts_;
  uint8_t icmp_type_ = 0, icmp_code_ = 0, tcp_flags_ = 0, other_proto_ = 253;
  uint16_t sport_ = 40000, dport_ = 9;  // 9: discard
  uint32_t tcp_seq_ = 1;
  uint32_t tcp_ack_ = 0;
  std::optional<uint16_t> tcp_mss_;
  bool tcp_syn_options_ = false;
  size_t payload_len_ = 0;
  std::string payload_pattern_;
  std::optional<size_t> truncate_;
};

// Rewrites the sequence number of the TCP segment at `l4` in a built frame to `seq` and
// updates its checksum incrementally (RFC 1624: HC' = ~(~HC + ~m + m')), so that a sender
// varies one field per frame without rebuilding it.
inline void set_tcp_seq(std::vector<uint8_t> &f, size_t l4, uint32_t seq) {
  const auto word = [&](size_t at) { return static_cast<uint32_t>(f[at] << 8 | f[at + 1]); };
  uint32_t sum = ~word(l4 + 16) & 0xffff;
  sum += (~word(l4 + 4) & 0xffff) + (~word(l4 + 6) & 0xffff) + (seq >> 16) + (seq & 0xffff);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  const uint8_t bytes[6] = {static_cast<uint8_t>(seq >> 24), static_cast<uint8_t>(seq >> 16),
                            static_cast<uint8_t>(seq >> 8),  static_cast<uint8_t>(seq),
                            static_cast<uint8_t>(~sum >> 8), static_cast<uint8_t>(~sum)};
  memcpy(&f[l4 + 4], bytes, 4);
  memcpy(&f[l4 + 16], bytes + 4, 2);
}

// The tests' usual frames: UDP from `src`, every other field the builder's default.
inline std::vector<uint8_t> v4(const std::string &src) { return PacketBuilder().ipv4(src).udp().build(); }
inline std::vector<uint8_t> v6(const std::string &src) { return PacketBuilder().ipv6(src).udp().build(); }

}  // namespace dt::frames
