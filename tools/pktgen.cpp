// pktgen.cpp - bounded test traffic for dthrottle's namespace tests and demo.
//
//   pktgen send   spoofed-source UDP frames over an AF_PACKET socket, paced, bounded
//   pktgen sink   counts UDP datagrams per source address: the independent witness
//                 of what the XDP program let through to the stack
//
// Safety first: `send` transmits only on veth interfaces, only from and to the
// benchmarking ranges 198.18.0.0/15 (RFC 2544) and 2001:2::/48 (RFC 5180), and only
// for a bounded count and duration, so a typo cannot spray spoofed traffic onto a
// real network. Exit codes: 0 success, 1 runtime failure, 2 usage error.
#include <arpa/inet.h>
#include <getopt.h>
#include <linux/ethtool.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;
constexpr double kMaxSeconds = 3600;          // longest --duration
constexpr uint64_t kMaxCount = 1'000'000'000;  // largest --count
constexpr double kMaxRate = 10'000'000;        // packets per second, all sources
constexpr uint64_t kMaxSources = 65536;
constexpr uint16_t kDefaultPort = 9999;
constexpr char kPayload[] = "dthrottle pktgen";  // 16 bytes, no NUL on the wire
constexpr size_t kPayloadLen = sizeof kPayload - 1;

const char kUsage[] =
    "Usage: pktgen send --iface IF --dst-ip A[,A6] --dst-mac MAC\n"
    "                   (--sources S1,S2,... | --src-range FIRST+N)\n"
    "                   --rate PPS --count N --duration D\n"
    "                   [--src-random] [--src-mac MAC] [--dport P] [--size BYTES] [--json]\n"
    "       pktgen sink [--port P] --duration D [--json]\n"
    "\n"
    "Test traffic for dthrottle, for network namespaces joined by veth pairs.\n"
    "\n"
    "send: transmits UDP frames over a raw AF_PACKET socket on IF, each with a spoofed\n"
    "  source address taken round-robin from the sources, paced to PPS frames per\n"
    "  second in total, until N frames are sent or D has passed, whichever comes\n"
    "  first. Prints the frames sent per source. IPv4 sources go to the IPv4\n"
    "  destination, IPv6 sources to the IPv6 one (give both in --dst-ip to mix).\n"
    "  Only veth interfaces, and only addresses in 198.18.0.0/15 and 2001:2::/48\n"
    "  (the benchmarking ranges) are accepted.\n"
    "    --iface IF          veth interface to send on\n"
    "    --dst-ip A[,A6]     destination: one IPv4 and/or one IPv6 address\n"
    "    --dst-mac MAC       destination MAC (the peer veth's address)\n"
    "    --src-mac MAC       source MAC (default: IF's own address)\n"
    "    --sources LIST      comma-separated source addresses\n"
    "    --src-random        each frame's source drawn at random from the sources\n"
    "                        (a spoofed flood) instead of round-robin\n"
    "    --src-range A+N     N consecutive source addresses starting at A (may be\n"
    "                        combined with --sources)\n"
    "    --rate PPS          frames per second, all sources together\n"
    "    --count N           stop after N frames in total (required)\n"
    "    --duration D        stop after D, e.g. 2s, 500ms (required, at most 1h)\n"
    "    --dport P           destination UDP port (default 9999)\n"
    "    --size BYTES        length of each frame, Ethernet header included, 100 to\n"
    "                        1514 (default: the shortest, 58 IPv4 / 78 IPv6)\n"
    "\n"
    "sink: counts the UDP datagrams arriving on port P per source address (IPv4 and\n"
    "  IPv6) for D, or until SIGINT/SIGTERM, then prints the counts. Prints\n"
    "  \"listening\" on stderr once it is ready to receive.\n"
    "    --port P            UDP port (default 9999)\n"
    "    --duration D        how long to listen (required, at most 1h)\n"
    "\n"
    "Both:\n"
    "    --json              print the result as JSON instead of a table\n"
    "    -h, --help          show this help\n"
    "\n"
    "Example:\n"
    "  pktgen send --iface veth0 --dst-ip 198.18.0.2 --dst-mac 02:00:00:00:00:02 \\\n"
    "      --src-range 198.18.1.1+4 --rate 4000 --count 8000 --duration 3s\n";

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// SIGINT/SIGTERM end a run early but still print what was counted. No SA_RESTART:
// the blocking call in progress returns EINTR and the loop sees g_stop.
void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void sleep_until(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000ull), static_cast<long>(ns % 1'000'000'000ull)};
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
}

int usage_error(const std::string &msg) {
  fprintf(stderr, "pktgen: %s\nTry 'pktgen --help' for more information.\n", msg.c_str());
  return kExitUsage;
}

int runtime_error(const std::string &msg) {
  fprintf(stderr, "pktgen: %s\n", msg.c_str());
  return kExitRuntime;
}

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) return out;
    start = pos + 1;
  }
}

// --- values ---------------------------------------------------------------------

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool parse_uint(const std::string &s, uint64_t max, uint64_t *out) {
  if (s.empty() || s.size() > 19 || !std::all_of(s.begin(), s.end(), is_digit)) return false;
  *out = std::stoull(s);
  return *out <= max;
}

// A positive decimal number (no sign, no exponent) filling all of s.
bool parse_positive(const std::string &s, double *out) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return is_digit(c) || c == '.'; }))
    return false;
  char *end = nullptr;
  *out = strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(*out) && *out > 0;
}

// "2s", "500ms", "1.5" (seconds), "1m" or "1h", at most kMaxSeconds.
bool parse_duration(const std::string &s, double *seconds) {
  static const struct { const char *suffix; double scale; } kUnits[] = {
      {"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}};
  std::string num = s;
  double scale = 1;
  for (const auto &u : kUnits) {
    size_t n = strlen(u.suffix);
    if (num.size() > n && num.compare(num.size() - n, n, u.suffix) == 0) {
      num.resize(num.size() - n);
      scale = u.scale;
      break;
    }
  }
  double v;
  if (!parse_positive(num, &v)) return false;
  *seconds = v * scale;
  return *seconds <= kMaxSeconds;
}

using Mac = std::array<uint8_t, 6>;

bool parse_mac(const std::string &s, Mac *out) {
  unsigned v[6];
  char tail;
  if (sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
             &tail) != 6)
    return false;
  for (int i = 0; i < 6; i++) (*out)[i] = static_cast<uint8_t>(v[i]);
  return true;
}

// --- addresses --------------------------------------------------------------------

struct Addr {
  int family = 0;                 // AF_INET or AF_INET6
  std::array<uint8_t, 16> b{};    // IPv4: b[0..3]
  size_t len() const { return family == AF_INET ? 4 : 16; }
  bool operator<(const Addr &o) const { return family != o.family ? family < o.family : b < o.b; }
};

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

// 198.18.0.0/15 (RFC 2544) or 2001:2::/48 (RFC 5180): reserved for benchmarking.
bool in_test_range(const Addr &a) {
  if (a.family == AF_INET) return a.b[0] == 198 && (a.b[1] & 0xfe) == 18;
  static const uint8_t kPrefix6[6] = {0x20, 0x01, 0x00, 0x02, 0x00, 0x00};
  return memcmp(a.b.data(), kPrefix6, sizeof kPrefix6) == 0;
}

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

// "198.18.1.1+4" -> 198.18.1.1 .. 198.18.1.4.
bool expand_range(const std::string &s, std::vector<Addr> *out, std::string *err) {
  size_t plus = s.rfind('+');
  Addr first, last;
  uint64_t n = 0;
  if (plus == std::string::npos || !parse_addr(s.substr(0, plus), &first) ||
      !parse_uint(s.substr(plus + 1), kMaxSources, &n) || n == 0) {
    *err = "--src-range '" + s + "': expected FIRST+N, e.g. 198.18.1.1+4 (N from 1 to " +
           std::to_string(kMaxSources) + ")";
    return false;
  }
  if (!addr_add(first, n - 1, &last) || !in_test_range(first) || !in_test_range(last)) {
    *err = "--src-range '" + s + "' leaves 198.18.0.0/15 and 2001:2::/48; pktgen only " +
           "spoofs addresses reserved for benchmarking";
    return false;
  }
  for (uint64_t i = 0; i < n; i++) {
    Addr a;
    addr_add(first, i, &a);
    out->push_back(a);
  }
  return true;
}

// --- frames -------------------------------------------------------------------------

void put16(uint8_t *p, uint16_t v) { p[0] = static_cast<uint8_t>(v >> 8), p[1] = static_cast<uint8_t>(v); }

// Internet checksum (RFC 1071) over big-endian 16-bit words, accumulated in `sum`.
uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n) {
  for (size_t i = 0; i + 1 < n; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (n & 1) sum += static_cast<uint32_t>(p[n - 1] << 8);
  return sum;
}

uint16_t csum_fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// One complete Ethernet + IPv4/IPv6 + UDP frame; the payload is constant, so each
// source's frame is built once and sent as is.
// `size` (0: the default) is the whole frame's length, Ethernet header included: the
// payload repeats kPayload to fill it (at least kPayloadLen bytes).
std::vector<uint8_t> build_frame(const Mac &dst_mac, const Mac &src_mac, const Addr &src,
                                 const Addr &dst, uint16_t sport, uint16_t dport, size_t size = 0) {
  const bool v6 = src.family == AF_INET6;
  const size_t ip_len = v6 ? 40 : 20;
  const size_t payload = size > 14 + ip_len + 8 + kPayloadLen ? size - 14 - ip_len - 8 : kPayloadLen;
  const size_t udp_len = 8 + payload;
  std::vector<uint8_t> f(14 + ip_len + udp_len, 0);
  memcpy(&f[0], dst_mac.data(), 6);
  memcpy(&f[6], src_mac.data(), 6);
  put16(&f[12], v6 ? 0x86dd : 0x0800);
  uint8_t *ip = &f[14], *udp = ip + ip_len;

  put16(&udp[0], sport);
  put16(&udp[2], dport);
  put16(&udp[4], static_cast<uint16_t>(udp_len));
  for (size_t i = 0; i < payload; i++) udp[8 + i] = static_cast<uint8_t>(kPayload[i % kPayloadLen]);

  uint8_t pseudo[40] = {};  // the checksum's pseudo header: addresses, protocol, length
  memcpy(pseudo, src.b.data(), src.len());
  memcpy(pseudo + src.len(), dst.b.data(), dst.len());
  size_t plen = 2 * src.len();
  pseudo[plen + 1] = IPPROTO_UDP;
  put16(&pseudo[plen + 2], static_cast<uint16_t>(udp_len));
  uint16_t uc = csum_fold(csum_add(csum_add(0, pseudo, plen + 4), udp, udp_len));
  put16(&udp[6], uc ? uc : 0xffff);  // 0 means "no checksum" (and is invalid over IPv6)

  if (v6) {
    ip[0] = 0x60;
    put16(&ip[4], static_cast<uint16_t>(udp_len));
    ip[6] = IPPROTO_UDP;
    ip[7] = 64;  // hop limit
    memcpy(&ip[8], src.b.data(), 16);
    memcpy(&ip[24], dst.b.data(), 16);
  } else {
    ip[0] = 0x45;
    put16(&ip[2], static_cast<uint16_t>(ip_len + udp_len));
    put16(&ip[6], 0x4000);  // don't fragment
    ip[8] = 64;             // TTL
    ip[9] = IPPROTO_UDP;
    memcpy(&ip[12], src.b.data(), 4);
    memcpy(&ip[16], dst.b.data(), 4);
    put16(&ip[10], csum_fold(csum_add(0, ip, 20)));
  }
  return f;
}

// --- send -----------------------------------------------------------------------------

struct SendOptions {
  std::string iface;
  std::vector<Addr> dsts, sources;
  Mac dst_mac{}, src_mac{};
  bool have_dst_mac = false, have_src_mac = false, json = false;
  bool random = false;  // --src-random
  double rate = 0, seconds = 0;
  uint64_t count = 0;
  uint16_t dport = kDefaultPort;
  uint64_t size = 0;  // frame length; 0: the shortest
};

// Returns -1 to go on, else the exit code (help or a usage error).
int parse_send(int argc, char **argv, SendOptions *o) {
  enum { kIface = 1000, kDstIp, kDstMac, kSrcMac, kSources, kSrcRange, kRate, kCount, kDuration,
         kDport, kSize, kJson, kSrcRandom };
  static const option kLong[] = {
      {"iface", required_argument, nullptr, kIface},
      {"dst-ip", required_argument, nullptr, kDstIp},
      {"dst-mac", required_argument, nullptr, kDstMac},
      {"src-mac", required_argument, nullptr, kSrcMac},
      {"sources", required_argument, nullptr, kSources},
      {"src-range", required_argument, nullptr, kSrcRange},
      {"rate", required_argument, nullptr, kRate},
      {"count", required_argument, nullptr, kCount},
      {"duration", required_argument, nullptr, kDuration},
      {"dport", required_argument, nullptr, kDport},
      {"size", required_argument, nullptr, kSize},
      {"json", no_argument, nullptr, kJson},
      {"src-random", no_argument, nullptr, kSrcRandom},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  bool have_count = false;
  std::string err;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", kLong, nullptr)) != -1) {
    const std::string v = optarg ? optarg : "";
    uint64_t n = 0;
    switch (c) {
      case kIface: o->iface = v; break;
      case kDstIp:
        for (const auto &s : split(v, ',')) {
          Addr a;
          if (!parse_addr(s, &a)) return usage_error("--dst-ip: '" + s + "' is not an IP address");
          for (const auto &d : o->dsts)
            if (d.family == a.family)
              return usage_error("--dst-ip: give at most one IPv4 and one IPv6 destination");
          o->dsts.push_back(a);
        }
        break;
      case kDstMac:
        if (!parse_mac(v, &o->dst_mac)) return usage_error("--dst-mac: '" + v + "' is not a MAC address like 02:00:00:00:00:01");
        o->have_dst_mac = true;
        break;
      case kSrcMac:
        if (!parse_mac(v, &o->src_mac)) return usage_error("--src-mac: '" + v + "' is not a MAC address like 02:00:00:00:00:01");
        o->have_src_mac = true;
        break;
      case kSources:
        for (const auto &s : split(v, ',')) {
          Addr a;
          if (!parse_addr(s, &a)) return usage_error("--sources: '" + s + "' is not an IP address");
          o->sources.push_back(a);
        }
        break;
      case kSrcRange:
        if (!expand_range(v, &o->sources, &err)) return usage_error(err);
        break;
      case kRate:
        if (!parse_positive(v, &o->rate) || o->rate > kMaxRate)
          return usage_error("--rate: '" + v + "' is not a rate from 0 (excluded) to 10000000 frames per second");
        break;
      case kCount:
        if (!parse_uint(v, kMaxCount, &o->count) || o->count == 0)
          return usage_error("--count: '" + v + "' is not a whole number from 1 to 1000000000");
        have_count = true;
        break;
      case kDuration:
        if (!parse_duration(v, &o->seconds))
          return usage_error("--duration: '" + v + "' is not a time from 1ms to 1h such as 2s or 500ms");
        break;
      case kDport:
        if (!parse_uint(v, 65535, &n) || n == 0) return usage_error("--dport: '" + v + "' is not a port from 1 to 65535");
        o->dport = static_cast<uint16_t>(n);
        break;
      case kSize:
        if (!parse_uint(v, 1514, &o->size) || o->size < 100)
          return usage_error("--size: '" + v + "' is not a frame length from 100 to 1514 bytes");
        break;
      case kJson: o->json = true; break;
      case kSrcRandom: o->random = true; break;
      case 'h': fputs(kUsage, stdout); return 0;
      case ':': return usage_error(std::string("option ") + argv[optind - 1] + " needs a value");
      default: return usage_error(std::string("unknown option ") + argv[optind - 1]);
    }
  }
  if (optind < argc) return usage_error(std::string("unexpected argument '") + argv[optind] + "'");
  if (o->iface.empty()) return usage_error("send: --iface is required");
  if (o->dsts.empty()) return usage_error("send: --dst-ip is required");
  if (!o->have_dst_mac) return usage_error("send: --dst-mac is required");
  if (o->sources.empty()) return usage_error("send: give the spoofed sources with --sources or --src-range");
  if (o->rate == 0) return usage_error("send: --rate is required");
  if (!have_count || o->seconds == 0)
    return usage_error("send: both --count and --duration are required, so that every run is bounded");
  if (o->sources.size() > kMaxSources) return usage_error("send: at most 65536 sources");

  std::set<Addr> seen;
  for (const auto &a : o->sources) {
    if (!in_test_range(a))
      return usage_error("source " + addr_str(a) + " is outside 198.18.0.0/15 and 2001:2::/48; "
                         "pktgen only spoofs addresses reserved for benchmarking");
    if (!seen.insert(a).second) return usage_error("source " + addr_str(a) + " is given twice");
    if (std::none_of(o->dsts.begin(), o->dsts.end(), [&](const Addr &d) { return d.family == a.family; }))
      return usage_error("source " + addr_str(a) + " has no --dst-ip of its family (" +
                         (a.family == AF_INET ? "IPv4" : "IPv6") + ")");
  }
  for (const auto &d : o->dsts)
    if (!in_test_range(d))
      return usage_error("destination " + addr_str(d) + " is outside 198.18.0.0/15 and 2001:2::/48; "
                         "pktgen only sends to addresses reserved for benchmarking");
  return -1;
}

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
  if (iface.size() >= IFNAMSIZ || *ifindex == 0) {
    *err = "unknown interface '" + iface + "' in this network namespace";
    close(fd);
    return -1;
  }
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  ifr.ifr_data = reinterpret_cast<char *>(&info);
  if (ioctl(fd, SIOCETHTOOL, &ifr) != 0 || strcmp(info.driver, "veth") != 0) {
    const std::string driver = info.driver[0] ? "driver " + std::string(info.driver) : "no driver";
    *err = "refusing to send on " + iface + ": it is not a veth interface (" + driver +
           "); pktgen only sends inside test namespaces";
    close(fd);
    return -1;
  }
  if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0 || !(ifr.ifr_flags & IFF_UP)) {
    *err = "interface " + iface + " is down (ip link set dev " + iface + " up)";
    close(fd);
    return -1;
  }
  if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) {
    *err = "cannot read the MAC address of " + iface + ": " + strerror(errno);
    close(fd);
    return -1;
  }
  memcpy(mac->data(), ifr.ifr_hwaddr.sa_data, 6);
  return fd;
}

int cmd_send(int argc, char **argv) {
  SendOptions o;
  if (int rc = parse_send(argc, argv, &o); rc >= 0) return rc;

  std::string err;
  int ifindex = 0;
  Mac own_mac{};
  int fd = open_packet_socket(o.iface, &ifindex, &own_mac, &err);
  if (fd < 0) return runtime_error(err);
  if (!o.have_src_mac) o.src_mac = own_mac;

  const size_t n = o.sources.size();
  std::vector<std::vector<uint8_t>> frames;
  for (size_t i = 0; i < n; i++) {
    const Addr &src = o.sources[i];
    const Addr &dst = *std::find_if(o.dsts.begin(), o.dsts.end(),
                                    [&](const Addr &d) { return d.family == src.family; });
    frames.push_back(build_frame(o.dst_mac, o.src_mac, src, dst,
                                 static_cast<uint16_t>(40000 + i % 20000), o.dport, o.size));
  }
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_ifindex = ifindex;
  to.sll_halen = 6;
  memcpy(to.sll_addr, o.dst_mac.data(), 6);

  install_stop_handlers();
  std::vector<uint64_t> sent(n, 0), failed(n, 0);
  const uint64_t start = now_ns();
  const uint64_t deadline = start + static_cast<uint64_t>(o.seconds * 1e9);
  uint64_t k = 0, first = 0, last = 0;
  std::mt19937_64 rng(start ^ static_cast<uint64_t>(getpid()));
  // Frame k is due at start + k / rate: sleep until the next one is due, then send
  // every frame due by now (catching up after a late wake-up keeps the average rate).
  while (k < o.count && !g_stop) {
    const uint64_t t = now_ns();
    if (t >= deadline) break;
    const uint64_t due = std::min<uint64_t>(
        o.count, static_cast<uint64_t>(static_cast<double>(t - start) * o.rate / 1e9) + 1);
    for (; k < due; k++) {
      const size_t i = o.random ? static_cast<size_t>(rng() % n) : k % n;
      // A frame's time is when its send began: a slow first send (a fresh socket, a slow
      // kernel) must not shorten the measured span between the first and the last frame.
      const uint64_t began = now_ns();
      if (sendto(fd, frames[i].data(), frames[i].size(), 0, reinterpret_cast<sockaddr *>(&to),
                 sizeof to) == static_cast<ssize_t>(frames[i].size())) {
        last = began;
        if (!first) first = began;
        sent[i]++;
      } else if (errno == ENOBUFS || errno == EAGAIN || errno == ENOMEM) {
        failed[i]++;  // transient: the frame is lost, the run goes on
      } else {
        err = "sending on " + o.iface + " failed: " + strerror(errno);
        close(fd);
        return runtime_error(err);
      }
    }
    const uint64_t next = start + static_cast<uint64_t>(std::ceil(static_cast<double>(k) * 1e9 / o.rate));
    if (k >= o.count || next >= deadline) break;
    sleep_until(next);
  }
  close(fd);

  const double elapsed = first ? static_cast<double>(last - first) / 1e9 : 0.0;
  uint64_t total = 0, total_failed = 0;
  for (size_t i = 0; i < n; i++) total += sent[i], total_failed += failed[i];
  if (o.json) {
    printf("{\"iface\":\"%s\",\"rate\":%.3f,\"elapsed_s\":%.6f,\"sent\":%llu,\"failed\":%llu,"
           "\"interrupted\":%s,\"sources\":[",
           o.iface.c_str(), o.rate, elapsed, static_cast<unsigned long long>(total),
           static_cast<unsigned long long>(total_failed), g_stop ? "true" : "false");
    for (size_t i = 0; i < n; i++)
      printf("%s{\"source\":\"%s\",\"sent\":%llu,\"failed\":%llu}", i ? "," : "",
             addr_str(o.sources[i]).c_str(), static_cast<unsigned long long>(sent[i]),
             static_cast<unsigned long long>(failed[i]));
    printf("]}\n");
  } else {
    printf("pktgen: sent %llu frames (%llu failed) in %.3f s on %s, %.0f frames/s offered%s\n",
           static_cast<unsigned long long>(total), static_cast<unsigned long long>(total_failed),
           elapsed, o.iface.c_str(), o.rate, g_stop ? " (interrupted)" : "");
    printf("%-40s %12s %8s\n", "SOURCE", "SENT", "FAILED");
    for (size_t i = 0; i < n; i++)
      printf("%-40s %12llu %8llu\n", addr_str(o.sources[i]).c_str(),
             static_cast<unsigned long long>(sent[i]), static_cast<unsigned long long>(failed[i]));
  }
  return 0;
}

// --- sink -------------------------------------------------------------------------------

// One dual-stack UDP socket (IPv4 arrives as ::ffff:a.b.c.d), or IPv4 only where
// the kernel has no IPv6.
int open_sink_socket(uint16_t port, std::string *err) {
  int one = 1, zero = 0, rcvbuf = 8 << 20;
  int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_storage ss{};
  socklen_t len;
  if (fd >= 0) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    auto *a6 = reinterpret_cast<sockaddr_in6 *>(&ss);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(port);
    len = sizeof *a6;
  } else if (errno == EAFNOSUPPORT) {
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    auto *a4 = reinterpret_cast<sockaddr_in *>(&ss);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(port);
    len = sizeof *a4;
  }
  if (fd < 0) {
    *err = std::string("cannot open a UDP socket: ") + strerror(errno);
    return -1;
  }
  // A large buffer so that bursts are counted, not lost; SO_RXQ_OVFL reports any
  // loss anyway, so a short count is never silent.
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr *>(&ss), len) != 0) {
    *err = "cannot listen on UDP port " + std::to_string(port) + ": " + strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

Addr source_of(const sockaddr_storage &ss) {
  Addr a;
  if (ss.ss_family == AF_INET) {
    a.family = AF_INET;
    memcpy(a.b.data(), &reinterpret_cast<const sockaddr_in &>(ss).sin_addr, 4);
    return a;
  }
  const auto &in6 = reinterpret_cast<const sockaddr_in6 &>(ss).sin6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&in6)) {
    a.family = AF_INET;
    memcpy(a.b.data(), &in6.s6_addr[12], 4);
  } else {
    a.family = AF_INET6;
    memcpy(a.b.data(), &in6, 16);
  }
  return a;
}

int cmd_sink(int argc, char **argv) {
  enum { kPort = 1000, kDuration, kJson };
  static const option kLong[] = {{"port", required_argument, nullptr, kPort},
                                 {"duration", required_argument, nullptr, kDuration},
                                 {"json", no_argument, nullptr, kJson},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  uint16_t port = kDefaultPort;
  double seconds = 0;
  bool json = false;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", kLong, nullptr)) != -1) {
    const std::string v = optarg ? optarg : "";
    uint64_t n = 0;
    switch (c) {
      case kPort:
        if (!parse_uint(v, 65535, &n) || n == 0) return usage_error("--port: '" + v + "' is not a port from 1 to 65535");
        port = static_cast<uint16_t>(n);
        break;
      case kDuration:
        if (!parse_duration(v, &seconds))
          return usage_error("--duration: '" + v + "' is not a time from 1ms to 1h such as 5s or 500ms");
        break;
      case kJson: json = true; break;
      case 'h': fputs(kUsage, stdout); return 0;
      case ':': return usage_error(std::string("option ") + argv[optind - 1] + " needs a value");
      default: return usage_error(std::string("unknown option ") + argv[optind - 1]);
    }
  }
  if (optind < argc) return usage_error(std::string("unexpected argument '") + argv[optind] + "'");
  if (seconds == 0) return usage_error("sink: --duration is required, so that every run is bounded");

  std::string err;
  int fd = open_sink_socket(port, &err);
  if (fd < 0) return runtime_error(err);
  install_stop_handlers();
  fprintf(stderr, "pktgen sink: listening on UDP port %u for %.3f s\n", port, seconds);

  std::map<Addr, uint64_t> counts;
  uint64_t total = 0;
  uint32_t socket_drops = 0;
  const uint64_t start = now_ns(), deadline = start + static_cast<uint64_t>(seconds * 1e9);
  char buf[2048];
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(uint32_t))];
  while (!g_stop) {
    const uint64_t t = now_ns();
    if (t >= deadline) break;
    pollfd p{fd, POLLIN, 0};
    // Wake at least every 100 ms to notice the deadline.
    if (poll(&p, 1, static_cast<int>(std::min<uint64_t>((deadline - t) / 1'000'000 + 1, 100))) <= 0)
      continue;
    for (;;) {  // drain everything queued
      sockaddr_storage from{};
      iovec iov{buf, sizeof buf};
      msghdr msg{};
      msg.msg_name = &from;
      msg.msg_namelen = sizeof from;
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = ctrl;
      msg.msg_controllen = sizeof ctrl;
      if (recvmsg(fd, &msg, MSG_DONTWAIT) < 0) break;
      counts[source_of(from)]++;
      total++;
      for (cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL)
          memcpy(&socket_drops, CMSG_DATA(cm), sizeof socket_drops);
    }
  }
  close(fd);

  const double elapsed = static_cast<double>(now_ns() - start) / 1e9;
  if (json) {
    printf("{\"port\":%u,\"elapsed_s\":%.6f,\"received\":%llu,\"socket_drops\":%u,\"sources\":[",
           port, elapsed, static_cast<unsigned long long>(total), socket_drops);
    bool first = true;
    for (const auto &[a, cnt] : counts) {
      printf("%s{\"source\":\"%s\",\"received\":%llu}", first ? "" : ",", addr_str(a).c_str(),
             static_cast<unsigned long long>(cnt));
      first = false;
    }
    printf("]}\n");
  } else {
    printf("pktgen sink: received %llu datagrams on UDP port %u in %.3f s (%u lost in the socket "
           "buffer)\n",
           static_cast<unsigned long long>(total), port, elapsed, socket_drops);
    printf("%-40s %12s\n", "SOURCE", "RECEIVED");
    for (const auto &[a, cnt] : counts)
      printf("%-40s %12llu\n", addr_str(a).c_str(), static_cast<unsigned long long>(cnt));
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string mode = argc >= 2 ? argv[1] : "";
  if (mode == "send") return cmd_send(argc - 1, argv + 1);
  if (mode == "sink") return cmd_sink(argc - 1, argv + 1);
  if (mode == "-h" || mode == "--help" || mode == "help") return fputs(kUsage, stdout), 0;
  return usage_error(mode.empty() ? "say what to do: send or sink"
                                  : "unknown mode '" + mode + "' (expected send or sink)");
}
