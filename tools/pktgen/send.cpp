// send.cpp - `pktgen send`: the packet socket, the frames, the paced loop and its report.
#include "pktgen/send.h"

#include <linux/ethtool.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>

#include "frames/packet_builder.h"

namespace dt::pktgen {
namespace {

constexpr char kPayload[] = "dthrottle pktgen";  // 16 bytes, no NUL on the wire
constexpr size_t kPayloadLen = sizeof kPayload - 1;

// Opens an AF_PACKET socket on a veth interface that is up; fills in its MAC.
int open_packet_socket(const std::string &iface, int *ifindex, Mac *mac, std::string *err) {
  // Protocol 0: this socket only transmits, it never receives a copy of the traffic.
  int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = std::string("cannot open a packet socket: ") + strerror(errno) +
           (errno == EPERM ? " (needs root or CAP_NET_RAW)" : "");
    return -1;
  }
  ifreq ifr{};
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", iface.c_str());
  *ifindex = static_cast<int>(if_nametoindex(iface.c_str()));
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  if (iface.size() >= IFNAMSIZ || *ifindex == 0) {
    *err = "unknown interface '" + iface + "' in this network namespace";
  } else if (ifr.ifr_data = reinterpret_cast<char *>(&info);
             ioctl(fd, SIOCETHTOOL, &ifr) != 0 || strcmp(info.driver, "veth") != 0) {
    const std::string driver = info.driver[0] ? "driver " + std::string(info.driver) : "no driver";
    *err = "refusing to send on " + iface + ": it is not a veth interface (" + driver +
           "); pktgen only sends inside test namespaces";
  } else if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0 || !(ifr.ifr_flags & IFF_UP)) {
    *err = "interface " + iface + " is down (ip link set dev " + iface + " up)";
  } else if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) {
    *err = "cannot read the MAC address of " + iface + ": " + strerror(errno);
  } else {
    memcpy(mac->data(), ifr.ifr_hwaddr.sa_data, 6);
    return fd;
  }
  close(fd);
  return -1;
}

constexpr uint16_t kSynMss = 1460;  // the MSS option of --tcp-syn's SYNs

// One complete Ethernet + IPv4/IPv6 + UDP frame per source (the payload is constant, so each
// is built once and sent as is), to the destination of its family. `o.size` (0: the default)
// is the whole frame's length: the payload repeats kPayload to fill it (at least kPayloadLen).
// With o.tcp_syn a TCP SYN with an MSS option instead (no payload; send_paced gives each one
// a new sequence number).
std::vector<std::vector<uint8_t>> build_frames(const SendOptions &o) {
  std::vector<std::vector<uint8_t>> frames;
  for (size_t i = 0; i < o.sources.size(); i++) {
    const Addr &src = o.sources[i];
    const Addr &dst =
        *std::find_if(o.dsts.begin(), o.dsts.end(), [&](const Addr &d) { return d.family == src.family; });
    const bool v6 = src.family == AF_INET6;
    const size_t headers = frames::kEthHdrLen + (v6 ? frames::kIPv6HdrLen : frames::kIPv4HdrLen) + frames::kUdpHdrLen;
    const size_t payload = o.size > headers + kPayloadLen ? o.size - headers : kPayloadLen;
    frames::PacketBuilder b;
    b.macs(o.dst_mac, o.src_mac);
    if (v6) b.ipv6(addr_str(src), addr_str(dst));
    else b.ipv4(addr_str(src), addr_str(dst));
    const uint16_t sport = o.sport ? o.sport : static_cast<uint16_t>(40000 + i % 20000);
    if (o.tcp_syn) b.tcp(o.dport, 0x02).tcp_mss(kSynMss).ports(sport, o.dport);
    else b.udp(payload).ports(sport, o.dport).payload(kPayload);
    frames.push_back(b.build());
  }
  return frames;
}

// Where the TCP header of a frame from `src` begins (no VLAN tag, no IP options).
size_t tcp_offset(const Addr &src) {
  return frames::kEthHdrLen + (src.family == AF_INET6 ? frames::kIPv6HdrLen : frames::kIPv4HdrLen);
}

constexpr size_t kLongestGaps = 16;  // the report's "longest_gaps_s": a stalled sender shows there

struct SendCounts {
  std::vector<uint64_t> sent, failed;
  uint64_t first = 0, last = 0;  // when the first and the last frame's send began
  // The longest spans between two frames sent one after the other, longest first (at most
  // kLongestGaps): a receiver's token bucket wastes the refill of a long one, which a test
  // of its accuracy must credit rather than blame on the bucket.
  std::vector<uint64_t> longest_gaps;
  int64_t unix_minus_mono = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC: first and last as Unix times
  uint64_t skipped = 0;         // --steady: frames not sent because they fell due while late
};

// Notes a frame sent at `began` (after one sent at c->last, if any).
void note_sent(SendCounts *c, uint64_t began) {
  if (c->last) {
    const uint64_t gap = began - c->last;
    auto &g = c->longest_gaps;
    if (g.size() < kLongestGaps || gap > g.back()) {
      g.insert(std::upper_bound(g.begin(), g.end(), gap, std::greater<uint64_t>()), gap);
      if (g.size() > kLongestGaps) g.pop_back();
    }
  }
  c->last = began;
  if (!c->first) c->first = began;
}

uint64_t unix_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Frame k is due at start + k / rate: sleeps until the next one is due, then sends every
// frame due by now (catching up after a late wake-up keeps the average rate; with --steady
// the frames due while late are skipped and only the latest is sent). The sources take
// turns by frames sent, not by k: a skip costs every source alike (a sender late by the
// same amount at each wake-up, skipping every other k, would otherwise never send to half
// of them). Returns false
// with *err on a send error that is not transient.
// With o.tcp_syn, frame k carries sequence number seq0 + k * 7919 (a prime: each SYN a new
// one, so a stack takes none for a retransmission).
bool send_paced(int fd, const sockaddr_ll &to, const SendOptions &o, std::vector<std::vector<uint8_t>> &frames,
                SendCounts *c, std::string *err) {
  const size_t n = frames.size();
  c->sent.assign(n, 0);
  c->failed.assign(n, 0);
  if (o.start_at_unix_ns) {
    timespec at{static_cast<time_t>(o.start_at_unix_ns / 1'000'000'000ull),
                static_cast<long>(o.start_at_unix_ns % 1'000'000'000ull)};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, nullptr) == EINTR && !g_stop) {
    }
  }
  const uint64_t start = now_ns(), deadline = start + o.duration_ns;
  c->unix_minus_mono = static_cast<int64_t>(unix_ns()) - static_cast<int64_t>(now_ns());
  std::mt19937_64 rng(start ^ static_cast<uint64_t>(getpid()));
  const uint32_t seq0 = static_cast<uint32_t>(rng());
  uint64_t turn = 0;  // frames tried: the next source in turn (k without --steady's skips)
  for (uint64_t k = 0; k < o.count && !g_stop;) {
    const uint64_t t = now_ns();
    if (t >= deadline) break;
    const uint64_t due =
        std::min<uint64_t>(o.count, static_cast<uint64_t>(static_cast<double>(t - start) * o.rate / 1e9) + 1);
    if (o.steady && due > k + 1) c->skipped += due - 1 - k, k = due - 1;
    for (; k < due; k++) {
      const size_t i = o.random ? static_cast<size_t>(rng() % n) : turn++ % n;
      if (o.tcp_syn) frames::set_tcp_seq(frames[i], tcp_offset(o.sources[i]), seq0 + static_cast<uint32_t>(k) * 7919u);
      // A frame's time is when its send began: a slow first send (a fresh socket, a slow
      // kernel) must not shorten the measured span between the first and the last frame.
      const uint64_t began = now_ns();
      if (began >= deadline || g_stop) break;  // a rate above what the link takes: D still ends it
      if (sendto(fd, frames[i].data(), frames[i].size(), 0, reinterpret_cast<const sockaddr *>(&to), sizeof to) ==
          static_cast<ssize_t>(frames[i].size())) {
        note_sent(c, began);
        c->sent[i]++;
      } else if (errno == ENOBUFS || errno == EAGAIN || errno == ENOMEM) {
        c->failed[i]++;  // transient: the frame is lost, the run goes on
      } else {
        *err = "sending on " + o.iface + " failed: " + strerror(errno);
        return false;
      }
    }
    const uint64_t next = start + static_cast<uint64_t>(std::ceil(static_cast<double>(k) * 1e9 / o.rate));
    if (k >= o.count || next >= deadline) break;
    sleep_until(next);
  }
  return true;
}

void print_send(const SendOptions &o, const SendCounts &c) {
  const size_t n = o.sources.size();
  const double elapsed = c.first ? static_cast<double>(c.last - c.first) / 1e9 : 0.0;
  uint64_t total = 0, total_failed = 0;
  for (size_t i = 0; i < n; i++) total += c.sent[i], total_failed += c.failed[i];
  if (o.json) {
    const auto unix_s = [&](uint64_t mono) {
      return mono ? static_cast<double>(static_cast<int64_t>(mono) + c.unix_minus_mono) / 1e9 : 0.0;
    };
    printf(
        "{\"iface\":\"%s\",\"rate\":%.3f,\"elapsed_s\":%.6f,\"first_unix_s\":%.6f,\"last_unix_s\":%.6f,"
        "\"sent\":%llu,\"failed\":%llu,\"skipped\":%llu,\"interrupted\":%s,",
        o.iface.c_str(), o.rate, elapsed, unix_s(c.first), unix_s(c.last), static_cast<unsigned long long>(total),
        static_cast<unsigned long long>(total_failed), static_cast<unsigned long long>(c.skipped),
        g_stop ? "true" : "false");
    printf("\"longest_gaps_s\":[");
    for (size_t i = 0; i < c.longest_gaps.size(); i++)
      printf("%s%.6f", i ? "," : "", static_cast<double>(c.longest_gaps[i]) / 1e9);
    printf("],\"sources\":[");
    for (size_t i = 0; i < n; i++)
      printf("%s{\"source\":\"%s\",\"sent\":%llu,\"failed\":%llu}", i ? "," : "", addr_str(o.sources[i]).c_str(),
             static_cast<unsigned long long>(c.sent[i]), static_cast<unsigned long long>(c.failed[i]));
    printf("]}\n");
    return;
  }
  printf("pktgen: sent %llu %s (%llu failed, %llu skipped) in %.3f s on %s, %.0f frames/s offered%s\n",
         static_cast<unsigned long long>(total), o.tcp_syn ? "TCP SYNs" : "frames",
         static_cast<unsigned long long>(total_failed), static_cast<unsigned long long>(c.skipped), elapsed,
         o.iface.c_str(), o.rate, g_stop ? " (interrupted)" : "");
  printf("%-40s %12s %8s\n", "SOURCE", "SENT", "FAILED");
  for (size_t i = 0; i < n; i++)
    printf("%-40s %12llu %8llu\n", addr_str(o.sources[i]).c_str(), static_cast<unsigned long long>(c.sent[i]),
           static_cast<unsigned long long>(c.failed[i]));
}

}  // namespace

int run_send(SendOptions o) {
  std::string err;
  int ifindex = 0;
  Mac own_mac{};
  int fd = open_packet_socket(o.iface, &ifindex, &own_mac, &err);
  if (fd < 0) return runtime_error(err);
  if (!o.have_src_mac) o.src_mac = own_mac;
  std::vector<std::vector<uint8_t>> frames = build_frames(o);
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_ifindex = ifindex;
  to.sll_halen = 6;
  memcpy(to.sll_addr, o.dst_mac.data(), 6);

  if (o.start_at_unix_ns > unix_ns() + kMaxDurationNs)
    return runtime_error("--start-at is more than an hour away: give a Unix time in seconds such as $(date +%s) + 2");
  install_stop_handlers();
  SendCounts counts;
  const bool ok = send_paced(fd, to, o, frames, &counts, &err);
  close(fd);
  if (!ok) return runtime_error(err);
  print_send(o, counts);
  return 0;
}

}  // namespace dt::pktgen
