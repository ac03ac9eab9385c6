// lists.cpp - Part 1d (`bench lists`): a deny list of 1,000,000 prefixes per family: how long
// it takes to load (publish_lists, as the agent does), the kernel memory it holds, and what
// it adds per packet, measured side by side with the same traffic without a list.
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "bench/measure.h"
#include "bench/parts.h"
#include "bench/programs.h"
#include "dataplane/list_maps.h"

namespace dt::bench {
namespace {

constexpr uint32_t kPrefixes = 1'000'000;

// kPrefixes distinct IPv4 prefixes spread over the address space, half /24 and half /32
// (as real feeds mix networks and hosts), none holding 198.18.0.1 (the unlisted source);
// 198.18.0.2 (the listed source) is the last one.
std::vector<dt_list_v4_key> v4_prefixes() {
  std::vector<dt_list_v4_key> out;
  std::unordered_set<uint64_t> seen;
  for (uint64_t i = 0; out.size() < kPrefixes - 1; i++) {
    uint32_t a = static_cast<uint32_t>(i * 2654435761u);
    const uint32_t len = (i & 1) ? 24 : 32;
    if (len == 24) a &= 0xffffff00u;
    if ((a >> 8) == (0xc6120000u >> 8) || !seen.insert((uint64_t{a} << 8) | len).second) continue;  // 198.18.0.x
    dt_list_v4_key k{len,
                     {static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16), static_cast<uint8_t>(a >> 8),
                      static_cast<uint8_t>(a)}};
    out.push_back(k);
  }
  out.push_back(dt_list_v4_key{32, {198, 18, 0, 2}});
  return out;
}

// The same for IPv6: /48s and /128s spread over 2000::/8 (where the sources are), 2001:2::2 the
// last.
std::vector<dt_list_v6_key> v6_prefixes() {
  std::vector<dt_list_v6_key> out;
  out.reserve(kPrefixes);
  for (uint32_t i = 0; out.size() < kPrefixes - 1; i++) {
    const uint32_t h = i * 2654435761u;
    dt_list_v6_key k{(i & 1) ? 48u : 128u, {0x20}};
    memcpy(k.addr + 1, &h, 4);
    if (memcmp(k.addr, "\x20\x01\x00\x02\x00\x00", 6) == 0) continue;  // 2001:2::/48 holds the sources
    if (k.prefixlen == 128) memcpy(k.addr + 12, &i, 4);
    out.push_back(k);
  }
  out.push_back(dt_list_v6_key{128, {0x20, 0x01, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}});
  return out;
}

// Kernel memory of the set in slot `list` of the outer map `outer`: its memlock (what the
// kernel charges for it; on 6.x the map's actual memory), in bytes; 0 if none.
long slot_memlock(int outer, uint32_t list) {
  uint32_t id = 0;
  if (bpf_map_lookup_elem(outer, &list, &id) != 0) return 0;
  const int fd = bpf_map_get_fd_by_id(id);
  if (fd < 0) return 0;
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(fd));
  std::string line;
  long bytes = 0;
  while (std::getline(in, line))
    if (sscanf(line.c_str(), "memlock: %ld", &bytes) == 1) break;
  close(fd);
  return bytes;
}

// The frame `make_frame` builds, from `last` as the last byte of its source (198.18.0.x, 2001:2::x).
std::vector<uint8_t> frame_from(bool ipv6, uint8_t last) {
  std::vector<uint8_t> f = make_frame(ipv6);
  f[ipv6 ? 14 + 8 + 15 : 14 + 12 + 3] = last;
  return f;
}

// Per-packet cost of one family: dt_xdp with and without the list, pass and drop paths.
void family_rows(bool ipv6, const Throttle &pass_listed, const Throttle &pass_plain, const Throttle &drop_plain) {
  constexpr uint32_t kRepeat = 2'000'000;
  const std::vector<uint8_t> unlisted = frame_from(ipv6, 1), listed = frame_from(ipv6, 2);
  struct Row {
    const char *name;
    int fd;
    const std::vector<uint8_t> *frame;
    uint32_t want;
    std::vector<double> ns;
  } rows[] = {{"pass, no list", pass_plain.fd.xdp, &unlisted, XDP_PASS, {}},
              {"pass, 1M list", pass_listed.fd.xdp, &unlisted, XDP_PASS, {}},
              {"drop, bucket", drop_plain.fd.xdp, &listed, XDP_DROP, {}},
              {"drop, 1M list", pass_listed.fd.xdp, &listed, XDP_DROP, {}}};
  uint32_t retval = 0;
  for (Row &r : rows) run_direct(r.fd, *r.frame, 1000, &retval);  // buckets created, drop's emptied
  for (int round = 0; round < kRounds; round++)
    for (int i = 0; i < 4; i++) {
      Row &r = rows[round % 2 ? 3 - i : i];
      r.ns.push_back(run_direct(r.fd, *r.frame, kRepeat, &retval));
      if (retval != r.want) die("lists %s: the last frame returned %u, expected %u", r.name, retval, r.want);
    }
  for (int i = 0; i < 4; i += 2)
    printf("  %s %-14s %6.1f   %-14s %6.1f   +%.1f ns\n", ipv6 ? "IPv6" : "IPv4", rows[i].name, median(rows[i].ns),
           rows[i + 1].name, median(rows[i + 1].ns), median(rows[i + 1].ns) - median(rows[i].ns));
}

}  // namespace

void lists_part() {
  Throttle pass_listed(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX));
  Throttle pass_plain(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX));
  Throttle drop_plain(kBucketCapacity, policy_or_die(DT_RATE_MIN, 1));
  ListPrefixes deny;
  deny.v4 = v4_prefixes();
  deny.v6 = v6_prefixes();
  const auto t0 = std::chrono::steady_clock::now();
  std::string err;
  const ListMapFds maps{pass_listed.fd.lists_v4, pass_listed.fd.lists_v6, pass_listed.fd.features};
  if (publish_lists(maps, ListPrefixes{}, deny, nullptr, nullptr, &err) != 0) die("%s", err.c_str());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long mem4 = slot_memlock(maps.v4, DT_LIST_DENY), mem6 = slot_memlock(maps.v6, DT_LIST_DENY);
  printf("\nPart 1d: a deny list of %u IPv4 + %u IPv6 prefixes (half networks, half hosts)\n",
         static_cast<unsigned>(deny.v4.size()), static_cast<unsigned>(deny.v6.size()));
  printf("  loaded in %.2f s (ranges merged, indexed and written into one array per family: %.2f us a prefix)\n", secs,
         secs * 1e6 / static_cast<double>(deny.size()));
  printf(
      "  kernel memory (memlock of the sets): IPv4 %.1f MB, %.1f bytes a prefix; IPv6 %.1f MB, %.1f bytes a prefix\n",
      mem4 / 1e6, static_cast<double>(mem4) / static_cast<double>(deny.v4.size()), mem6 / 1e6,
      static_cast<double>(mem6) / static_cast<double>(deny.v6.size()));
  printf("  per packet (BPF_PROG_TEST_RUN of dt_xdp, ns per frame, median of %d; one source, its bucket warm):\n",
         kRounds);
  family_rows(false, pass_listed, pass_plain, drop_plain);
  family_rows(true, pass_listed, pass_plain, drop_plain);
  printf(
      "  (pass: a source on no list, its bucket admits it; drop: a listed source, dropped by the list,\n"
      "   against the same source dropped by its empty bucket without a list)\n");
}

}  // namespace dt::bench
