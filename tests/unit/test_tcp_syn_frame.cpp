// test_tcp_syn_frame.cpp - pktgen's TCP SYNs (tools/frames/packet_builder.h): valid
// checksums, the MSS option, and a sequence number rewritten in place with the checksum
// kept valid (what pktgen send --tcp-syn does for every frame).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "frames/packet_builder.h"

namespace dt::frames {
namespace {

constexpr size_t kV4Tcp = kEthHdrLen + kIPv4HdrLen, kV6Tcp = kEthHdrLen + kIPv6HdrLen;

// The one's-complement sum of the pseudo header and the segment: 0xffff when the checksum
// in it is right (how a receiving stack checks it).
uint16_t verify_sum(const std::vector<uint8_t> &f, bool v6) {
  const size_t l4 = v6 ? kV6Tcp : kV4Tcp, len = f.size() - l4;
  uint32_t sum = 0;
  const auto add = [&](size_t from, size_t n) {
    for (size_t i = 0; i < n; i += 2) sum += static_cast<uint32_t>(f[from + i] << 8 | f[from + i + 1]);
  };
  if (v6) add(kEthHdrLen + 8, 32);
  else add(kEthHdrLen + 12, 8);
  sum += IPPROTO_TCP + static_cast<uint32_t>(len);
  add(l4, len);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

std::vector<uint8_t> syn(bool v6, uint32_t seq) {
  PacketBuilder b;
  if (v6) b.ipv6("2001:2::4:1", "2001:2::2");
  else b.ipv4("198.18.4.1", "198.18.0.2");
  return b.tcp(8080, 0x02).tcp_mss(1460).ports(40001, 8080).tcp_seq(seq).build();
}

TEST(TcpSynFrame, ChecksumsAndMssOption) {
  for (bool v6 : {false, true}) {
    const auto f = syn(v6, 12345);
    const size_t l4 = v6 ? kV6Tcp : kV4Tcp;
    ASSERT_EQ(f.size(), l4 + 24) << "a SYN with an MSS option is 24 bytes of TCP";
    EXPECT_EQ(f[l4 + 12], 0x60) << "data offset: 6 words";
    EXPECT_EQ(f[l4 + 13], 0x02) << "SYN";
    EXPECT_EQ(std::vector<uint8_t>(f.begin() + static_cast<long>(l4) + 20, f.end()),
              (std::vector<uint8_t>{2, 4, 1460 >> 8, 1460 & 0xff}));
    EXPECT_EQ(verify_sum(f, v6), 0xffff) << (v6 ? "IPv6" : "IPv4") << " TCP checksum";
  }
}

TEST(TcpSynFrame, SequenceRewrittenInPlaceKeepsTheChecksum) {
  for (bool v6 : {false, true}) {
    for (uint32_t seq : {0u, 1u, 0xffffu, 0x10000u, 0xdeadbeefu, 0xffffffffu}) {
      auto f = syn(v6, 7);
      set_tcp_seq(f, v6 ? kV6Tcp : kV4Tcp, seq);
      EXPECT_EQ(f, syn(v6, seq)) << "seq " << seq << (v6 ? " IPv6" : " IPv4") << ": not the frame built with it";
      EXPECT_EQ(verify_sum(f, v6), 0xffff) << "seq " << seq;
    }
  }
}

}  // namespace
}  // namespace dt::frames
