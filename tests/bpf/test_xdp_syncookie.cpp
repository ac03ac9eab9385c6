// test_xdp_syncookie.cpp - SYN cookies while a prefix budget is spent (syn_cookies,
// bpf/syncookie.bpf.h): the SYN-ACK the XDP program sends back (XDP_TX), IPv4 and IPv6,
// VLAN kept, checksums valid; the same SYN under budget passes; dry run counts and
// passes; the handshake's ACK with the cookie verifies its source, which then skips the
// prefix budget but never its own bucket; a wrong ACK verifies nothing.
//
// Rule 0 throttles with a prefix level whose burst is 1 (no refill within a test): the
// first SYN of the prefix spends it, the next ones only the prefix refuses.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <netinet/in.h>

#include <cstring>
#include <string>
#include <vector>

#include "bpf_fixture.h"
#include "dataplane/policy.h"
#include "dataplane/verified_maps.h"

namespace dt::test {
namespace {

constexpr double kNoRefill = 0.001;
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kAck = 0x10;
constexpr uint16_t kMss = 1460;
constexpr uint32_t kClientSeq = 0x12345678;
const uint8_t kClientMac[6] = {0x02, 0, 0, 0, 0, 0x0c}, kServerMac[6] = {0x02, 0, 0, 0, 0, 0x05};

struct Seg {
  std::string src, dst;
  uint16_t sport = 40000, dport = 443;
  uint32_t seq = kClientSeq, ack = 0;
  uint8_t flags = kSyn;
  bool options = true;  // a SYN's MSS, SACK-permitted, timestamps, window scale (40-byte header)
  int vlans = 0;
};

bool is_v6(const Seg &s) { return s.src.find(':') != std::string::npos; }

void put16(std::vector<uint8_t> &f, size_t at, uint16_t v) {
  f[at] = v >> 8;
  f[at + 1] = v & 0xff;
}
void put32(std::vector<uint8_t> &f, size_t at, uint32_t v) {
  put16(f, at, v >> 16);
  put16(f, at + 2, v & 0xffff);
}
uint16_t get16(const std::vector<uint8_t> &f, size_t at) { return static_cast<uint16_t>(f[at] << 8 | f[at + 1]); }
uint32_t get32(const std::vector<uint8_t> &f, size_t at) {
  return static_cast<uint32_t>(get16(f, at)) << 16 | get16(f, at + 2);
}

uint32_t sum16(const uint8_t *p, size_t n, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (n & 1) sum += static_cast<uint32_t>(p[n - 1] << 8);
  return sum;
}
uint16_t fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// The ones' complement checksum over the TCP segment at `l4` (length `len`) with its
// pseudo-header: 0 when the segment's checksum is right.
uint16_t tcp_csum(const std::vector<uint8_t> &f, size_t l3, size_t l4, size_t len, bool v6) {
  uint32_t s = v6 ? sum16(&f[l3 + 8], 32) : sum16(&f[l3 + 12], 8);
  s += IPPROTO_TCP + static_cast<uint32_t>(len);
  return fold(sum16(&f[l4], len, s));
}

size_t l3_of(const Seg &s) { return 14 + 4 * static_cast<size_t>(s.vlans); }

std::vector<uint8_t> frame(const Seg &s) {
  const bool v6 = is_v6(s);
  const size_t l3 = l3_of(s), ip_len = v6 ? 40 : 20, tcp_len = s.options ? 40 : 20, l4 = l3 + ip_len;
  std::vector<uint8_t> f(l4 + tcp_len, 0);
  memcpy(&f[0], kServerMac, 6);
  memcpy(&f[6], kClientMac, 6);
  for (int i = 0; i < s.vlans; i++) {
    put16(f, 12 + 4 * i, 0x8100);
    put16(f, 14 + 4 * i, static_cast<uint16_t>(100 + i));
  }
  put16(f, l3 - 2, v6 ? 0x86dd : 0x0800);
  if (v6) {
    f[l3] = 0x60;
    put16(f, l3 + 4, static_cast<uint16_t>(tcp_len));
    f[l3 + 6] = IPPROTO_TCP;
    f[l3 + 7] = 57;
    EXPECT_EQ(inet_pton(AF_INET6, s.src.c_str(), &f[l3 + 8]), 1) << s.src;
    EXPECT_EQ(inet_pton(AF_INET6, s.dst.c_str(), &f[l3 + 24]), 1) << s.dst;
  } else {
    f[l3] = 0x45;
    put16(f, l3 + 2, static_cast<uint16_t>(ip_len + tcp_len));
    f[l3 + 8] = 57;
    f[l3 + 9] = IPPROTO_TCP;
    EXPECT_EQ(inet_pton(AF_INET, s.src.c_str(), &f[l3 + 12]), 1) << s.src;
    EXPECT_EQ(inet_pton(AF_INET, s.dst.c_str(), &f[l3 + 16]), 1) << s.dst;
    put16(f, l3 + 10, fold(sum16(&f[l3], 20)));
  }
  put16(f, l4, s.sport);
  put16(f, l4 + 2, s.dport);
  put32(f, l4 + 4, s.seq);
  put32(f, l4 + 8, s.ack);
  f[l4 + 12] = static_cast<uint8_t>(tcp_len / 4) << 4;
  f[l4 + 13] = s.flags;
  put16(f, l4 + 14, 64240);
  if (s.options) {  // MSS, SACK-permitted, timestamps, NOP, window scale 7 (as Linux sends)
    const uint8_t o[20] = {2, 4, kMss >> 8, kMss & 0xff, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7};
    memcpy(&f[l4 + 20], o, sizeof o);
  }
  put16(f, l4 + 16, tcp_csum(f, l3, l4, tcp_len, v6));
  return f;
}

class XdpSyncookie : public BpfFixture {
 protected:
  // Rule 0: `burst` per source (no refill), a prefix level of burst 1 per IPv4 /24 and
  // IPv6 /48, syn_cookies on (and dry run if asked); rules on, as a rules file turns them.
  void set_cookie_rule(uint64_t burst, bool dry_run = false) {
    dt_policy p{};
    std::string err;
    ASSERT_TRUE(make_policy(kNoRefill, burst, &p, &err)) << err;
    PrefixLimit v4, v6;
    v4.v4 = true, v4.bits = 24, v4.rate = kNoRefill, v4.burst = 1;
    v6.v4 = false, v6.bits = 48, v6.rate = kNoRefill, v6.burst = 1;
    p.flags |= DT_POL_PREFIX | DT_POL_SYN_COOKIES | (dry_run ? DT_POL_DRY_RUN : 0);
    ASSERT_EQ(publish_rules(rule_maps(), {p}, {}, {}, {compile_prefix_limits({v4, v6})}), 0);
    ASSERT_EQ(update_config_flags(config_fd(), DT_CFG_RULES, 0), 0);
    ASSERT_TRUE(live_config().flags & DT_CFG_SYN_COOKIES) << "publish_rules sets it for a syn_cookies rule";
  }

  // One frame through dt_xdp: its verdict and the frame as it left.
  int run_out(const std::vector<uint8_t> &in, std::vector<uint8_t> *out) {
    out->assign(in.size() + 64, 0);
    LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in.data(), .data_out = out->data(),
                .data_size_in = static_cast<uint32_t>(in.size()), .data_size_out = static_cast<uint32_t>(out->size()),
                .repeat = 1);
    if (bpf_prog_test_run_opts(xdp_fd(), &o) != 0) {
      ADD_FAILURE() << "BPF_PROG_TEST_RUN: " << strerror(errno);
      return -1;
    }
    out->resize(o.data_size_out);
    return static_cast<int>(o.retval);
  }

  // Spends the prefix of `s` with a first SYN from another source of it (it passes).
  void spend_prefix(const Seg &s, const std::string &other) {
    Seg first = s;
    first.src = other;
    ASSERT_EQ(run(frame(first)), XDP_PASS) << "the prefix's first SYN has its token";
  }

  // Checks `out` is the SYN-ACK answering SYN `s`; returns its cookie (seq).
  uint32_t expect_synack(const Seg &s, const std::vector<uint8_t> &out) {
    const bool v6 = is_v6(s);
    const size_t l3 = l3_of(s), l4 = l3 + (v6 ? 40 : 20);
    const std::vector<uint8_t> in = frame(s);
    EXPECT_EQ(out.size(), l4 + 24) << "the SYN-ACK's frame: headers and a 24-byte TCP header";
    if (out.size() < l4 + 24) return 0;
    EXPECT_EQ(memcmp(&out[0], kClientMac, 6), 0) << "destination MAC: the client's";
    EXPECT_EQ(memcmp(&out[6], kServerMac, 6), 0) << "source MAC: ours";
    EXPECT_EQ(memcmp(&out[12], &in[12], l3 - 12), 0) << "VLAN tags and EtherType kept";
    if (v6) {
      EXPECT_EQ(memcmp(&out[l3 + 8], &in[l3 + 24], 16), 0) << "IPv6 source: the SYN's destination";
      EXPECT_EQ(memcmp(&out[l3 + 24], &in[l3 + 8], 16), 0) << "IPv6 destination: the SYN's source";
      EXPECT_EQ(get16(out, l3 + 4), 24) << "payload length";
      EXPECT_EQ(out[l3 + 6], IPPROTO_TCP);
      EXPECT_EQ(out[l3 + 7], 64) << "hop limit";
    } else {
      EXPECT_EQ(memcmp(&out[l3 + 12], &in[l3 + 16], 4), 0) << "IPv4 source: the SYN's destination";
      EXPECT_EQ(memcmp(&out[l3 + 16], &in[l3 + 12], 4), 0) << "IPv4 destination: the SYN's source";
      EXPECT_EQ(out[l3], 0x45);
      EXPECT_EQ(get16(out, l3 + 2), 44) << "total length";
      EXPECT_EQ(out[l3 + 8], 64) << "TTL";
      EXPECT_EQ(fold(sum16(&out[l3], 20)), 0) << "IPv4 header checksum";
    }
    EXPECT_EQ(get16(out, l4), s.dport) << "source port: the SYN's destination port";
    EXPECT_EQ(get16(out, l4 + 2), s.sport) << "destination port: the SYN's source port";
    EXPECT_EQ(get32(out, l4 + 8), s.seq + 1) << "ack = the client's seq + 1";
    EXPECT_EQ(out[l4 + 12] >> 4, 6) << "data offset: 24 bytes";
    EXPECT_EQ(out[l4 + 13], kSyn | kAck) << "flags SYN and ACK";
    EXPECT_EQ(get16(out, l4 + 14), 0) << "window 0, as SYNPROXY's";
    EXPECT_EQ(out[l4 + 20], 2) << "MSS option kind";
    EXPECT_EQ(out[l4 + 21], 4) << "MSS option length";
    const uint16_t mss = get16(out, l4 + 22);
    EXPECT_GT(mss, 500) << "an MSS of the cookie's table";
    // Without an option the kernel assumes 536 (IPv4) or 1220 (IPv6: its minimum MTU - 60).
    EXPECT_LE(mss, s.options ? kMss : (v6 ? 1220 : 536)) << "never more than the client's";
    EXPECT_EQ(tcp_csum(out, l3, l4, 24, v6), 0) << "TCP checksum";
    return get32(out, l4 + 4);
  }

  // The handshake's ACK answering a SYN-ACK with cookie `cookie` (ack_offset: added to
  // cookie + 1, nonzero for a wrong one).
  static std::vector<uint8_t> ack_of(Seg s, uint32_t cookie, uint32_t ack_offset = 0) {
    s.flags = kAck;
    s.options = false;
    s.seq = kClientSeq + 1;
    s.ack = cookie + 1 + ack_offset;
    return frame(s);
  }

  // Answers SYN `s` in its spent prefix (`other` spends it): its cookie.
  uint32_t cookie_for(const Seg &s, const std::string &other) {
    spend_prefix(s, other);
    std::vector<uint8_t> out;
    EXPECT_EQ(run_out(frame(s), &out), XDP_TX) << "a SYN only the prefix refuses is answered";
    return expect_synack(s, out);
  }
};

TEST_F(XdpSyncookie, ASynInASpentPrefixIsAnsweredWithACookieIpv4) {
  ASSERT_NO_FATAL_FAILURE(set_cookie_rule(5));
  Seg s{"198.18.7.2", "198.18.0.254"};
  s.vlans = 1;
  cookie_for(s, "198.18.7.1");
  const dt_stats st = stats();
  EXPECT_EQ(st.cookie_sent, 1u) << stats_to_string(st);
  EXPECT_EQ(st.dropped, 0u) << "answered, not dropped: " << stats_to_string(st);
  EXPECT_FALSE(bucket("198.18.7.2")) << "a source without a bucket gets its cookie without one (a spoofed flood "
                                        "creates no bucket)";
}

TEST_F(XdpSyncookie, ASourceWithABucketPaysItsCookieWithAToken) {
  ASSERT_NO_FATAL_FAILURE(set_cookie_rule(2));
  Seg s{"198.18.7.2", "198.18.0.254"};
  ASSERT_EQ(run(frame(s)), XDP_PASS) << "its first SYN spends the prefix's only token and its own first";
  std::vector<uint8_t> out;
  EXPECT_EQ(run_out(frame(s), &out), XDP_TX) << "the prefix is spent: a cookie, for its second token";
  expect_synack(s, out);
  ASSERT_TRUE(bucket("198.18.7.2"));
  EXPECT_EQ(bucket("198.18.7.2")->passed, 2u) << "the cookie's token counts as passed in the source's bucket";
  EXPECT_EQ(run(frame(s)), XDP_DROP) << "its own bucket is empty: no cookie, dropped as before";
  const dt_stats st = stats();
  EXPECT_EQ(st.cookie_sent, 1u) << stats_to_string(st);
  EXPECT_EQ(st.dropped, 1u) << stats_to_string(st);
}

TEST_F(XdpSyncookie, ASynInASpentPrefixIsAnsweredWithACookieIpv6TwoTagsNoOptions) {
  ASSERT_NO_FATAL_FAILURE(set_cookie_rule(5));
  Seg s{"2001:2:7::2", "2001:2::fe"};
  s.vlans = 2;
  s.options = false;  // the frame grows by 4 bytes for the MSS option
  cookie_for(s, "2001:2:7::1");
  EXPECT_EQ(stats().cookie_sent, 1u) << stats_to_string(stats());
}

TEST_F(XdpSyncookie, ASynUnderBudgetPassesAndOtherSegmentsAreDroppedAsBefore) {
  ASSERT_NO_FATAL_FAILURE(set_cookie_rule(5));
  Seg s{"198.18.7.2", "198.18.0.254"};
  EXPECT_EQ(run(frame(s)), XDP_PASS) << "the prefix has its token: the SYN passes as today";
  Seg fin = s;
  fin.src = "198.18.7.3";
  fin.flags = kFin | kAck;
  EXPECT_EQ(run(frame(fin)), XDP_DROP) << "not a SYN: the spent prefix drops it as before";
  EXPECT_EQ(stats().cookie_sent, 0u) << stats_to_string(stats());
}

TEST_F(XdpSyncookie, DryRunCountsTheCookieAndSendsNone) {
  ASSERT_NO_FATAL_FAILURE(set_cookie_rule(5, /*dry_run=*/true));
  Seg s{"198.18.7.2", "198.18.0.254"};
  spend_prefix(s, "198.18.7.1");
  EXPECT_EQ(run(frame(s)), XDP_PASS) << "dry run decides as today: passed, as a would-drop";
  const dt_stats st = stats();
  EXPECT_EQ(st.cookie_would_send, 1u) << stats_to_string(st);
  EXPECT_EQ(st.cookie_sent, 0u) << stats_to_string(st);
  EXPECT_EQ(would_drop_of_rule0(), 1u);
}

TEST_F(XdpSyncookie, AnAckWithTheCookieVerifiesItsSource) {
  ASSERT_NO_FATAL_FAILURE(set_cookie_rule(5));
  for (const Seg &s : {Seg{"198.18.7.2", "198.18.0.254"}, Seg{"2001:2:7::2", "2001:2::fe"}}) {
    const uint32_t cookie = cookie_for(s, is_v6(s) ? "2001:2:7::1" : "198.18.7.1");
    EXPECT_EQ(run(ack_of(s, cookie)), XDP_PASS) << s.src << ": verified, the ACK itself skips the spent prefix";
    EXPECT_EQ(run(frame(s)), XDP_PASS) << s.src << ": verified, its SYN skips the spent prefix";
  }
  const dt_stats st = stats();
  EXPECT_EQ(st.cookie_ack_valid, 2u) << stats_to_string(st);
  EXPECT_EQ(st.cookie_ack_invalid, 0u) << stats_to_string(st);
  EXPECT_EQ(st.verified_hits, 4u) << "the ACK and the SYN of each: " << stats_to_string(st);
  dt_key k{};
  dt_verified v{};
  ASSERT_EQ(inet_pton(AF_INET6, "::ffff:198.18.7.2", k.addr), 1);
  k.rule = DT_VERIFIED_V4;
  ASSERT_EQ(bpf_map_lookup_elem(map_fd(DT_MAP_VERIFIED), &k, &v), 0) << "198.18.7.2 is in the verified map";
  EXPECT_EQ(v.hits, 2u);
  EXPECT_GT(v.expires_ns, start_ns_ + DT_DEFAULT_VERIFIED_TTL_NS / 2) << "verified for the TTL";
  // Each source verified is told to the agent once, through the ring (for its peers).
  dt::VerifiedRing ring(map_fd("verified_ring"));
  ASSERT_TRUE(ring.ok());
  int err = 0;
  const std::vector<dt_verified_rec> recs = ring.drain(&err);
  EXPECT_EQ(err, 0);
  ASSERT_EQ(recs.size(), 2u) << "one record per source verified, none for the verified SYNs";
  EXPECT_EQ(memcmp(&recs[0].key, &k, sizeof k), 0) << "the IPv4 source first, keyed as in the map";
  EXPECT_EQ(recs[0].expires_ns, v.expires_ns) << "the expiry written in the map";
  EXPECT_EQ(recs[1].key.rule, DT_VERIFIED_V6);
  EXPECT_TRUE(ring.drain(&err).empty()) << "drained: told once";
}

TEST_F(XdpSyncookie, AWrongAckCountsInvalidAndVerifiesNothing) {
  ASSERT_NO_FATAL_FAILURE(set_cookie_rule(5));
  Seg s{"198.18.7.2", "198.18.0.254"};
  const uint32_t cookie = cookie_for(s, "198.18.7.1");
  EXPECT_EQ(run(ack_of(s, cookie, 1)), XDP_DROP) << "not verified: the spent prefix drops the ACK";
  EXPECT_EQ(run(frame(s)), XDP_TX) << "not verified: its next SYN is answered again";
  const dt_stats st = stats();
  EXPECT_EQ(st.cookie_ack_invalid, 1u) << stats_to_string(st);
  EXPECT_EQ(st.cookie_ack_valid, 0u) << stats_to_string(st);
  EXPECT_EQ(st.verified_hits, 0u) << stats_to_string(st);
  dt::VerifiedRing ring(map_fd("verified_ring"));
  int err = 0;
  EXPECT_TRUE(ring.drain(&err).empty()) << "nothing verified, nothing told";
}

TEST_F(XdpSyncookie, AVerifiedSourceOverItsOwnBucketIsStillDropped) {
  ASSERT_NO_FATAL_FAILURE(set_cookie_rule(2));
  Seg s{"198.18.7.2", "198.18.0.254"};
  const uint32_t cookie = cookie_for(s, "198.18.7.1");  // no bucket yet: no token taken
  EXPECT_EQ(run(ack_of(s, cookie)), XDP_PASS) << "verified: the ACK takes its first token";
  EXPECT_EQ(run(frame(s)), XDP_PASS) << "verified: its next SYN takes its second token";
  EXPECT_EQ(run(frame(s)), XDP_DROP) << "verified, but its own bucket is empty";
  EXPECT_EQ(stats().cookie_ack_valid, 1u) << stats_to_string(stats());
}

TEST_F(XdpSyncookie, WithoutTheFlagASpentPrefixDropsTheSyn) {
  dt_policy p{};
  std::string err;
  ASSERT_TRUE(make_policy(kNoRefill, 5, &p, &err)) << err;
  PrefixLimit v4;
  v4.v4 = true, v4.bits = 24, v4.rate = kNoRefill, v4.burst = 1;
  p.flags |= DT_POL_PREFIX;
  ASSERT_EQ(publish_rules(rule_maps(), {p}, {}, {}, {compile_prefix_limits({v4})}), 0);
  ASSERT_EQ(update_config_flags(config_fd(), DT_CFG_RULES, 0), 0);
  EXPECT_FALSE(live_config().flags & DT_CFG_SYN_COOKIES);
  Seg s{"198.18.7.2", "198.18.0.254"};
  spend_prefix(s, "198.18.7.1");
  EXPECT_EQ(run(frame(s)), XDP_DROP);
  EXPECT_EQ(stats().cookie_sent, 0u);
}

}  // namespace
}  // namespace dt::test
