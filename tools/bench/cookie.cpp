// cookie.cpp - Part 1h (`bench cookies`): SYN cookies per packet, beside the SYN's usual paths.
//
// Three objects, rules on, rule 0 a per-source budget no packet here exhausts:
//   plain    no prefix budgets: a SYN is admitted (PASS)
//   budgets  v4/16 and v6/48 prefix budgets the prefill spent: a SYN is dropped by them (DROP)
//   cookies  the same, with syn_cookies: a SYN is answered with a SYN-ACK carrying a
//            cookie (XDP_TX); the handshake's ACK with that cookie passes and verifies its
//            source, an ACK with a bad cookie is dropped by the prefix budget
// Each row for IPv4 and for IPv6 (its "vs" columns against its own family's rows).
// The SYNs carry the options a Linux SYN does (40-byte TCP header: the SYN-ACK is 16 bytes
// shorter, the frame cut by bpf_xdp_adjust_tail). They come from a source without a bucket (as a spoofed flood's), the
// ACKs from the client the cookie was made for (its SYN-ACK: one test run, whose output frame the test run returns).
// Every frame goes through dt_bench_replay, which writes the frame back before each repetition and expires the client's
// verified entry, so each ACK is checked anew and each SYN answered anew; its own cost is the "empty" row. Each
// measurement is runs of kBatch repetitions, the verified ring drained between runs (untimed), so it never fills, and
// the counters checked after each run.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/measure.h"
#include "bench/parts.h"
#include "bench/programs.h"
#include "common/clock.h"
#include "dataplane/policy.h"
#include "frames/packet_builder.h"

namespace dt::bench {

namespace {

constexpr uint32_t kBatch = 2000;  // repetitions per run: under the verified ring's 2,048 records
constexpr int kRunsPerSample = 50;
constexpr uint16_t kPort = 80;
constexpr uint32_t kClientSeq = 1000;

// Rule 0: a per-source budget, with v4/16 and v6/48 prefix budgets (burst 1, never refilled
// within the bench) if `flags` has DT_POL_PREFIX.
void set_rule(const Throttle &t, uint32_t flags) {
  dt_policy pol = policy_or_die(1e6, DT_BURST_MAX);
  pol.flags |= flags;
  dt_prefix_policy pp{};
  pp.n_v4 = 1;
  pp.v4[0] = policy_or_die(DT_RATE_MIN, 1);
  pp.v4[0].v4_key_bits = 16;
  pp.n_v6 = 1;
  pp.v6[0] = policy_or_die(DT_RATE_MIN, 1);
  pp.v6[0].v6_key_bits = 48;
  dt::RuleMaps maps = t.rule_maps();
  maps.prefix_fd = t.fd.prefix_policy;
  if (int rc = dt::publish_rules(maps, {pol}, {}, {}, {pp}); rc != 0) die("publish_rules: %s", strerror(-rc));
  // Rules on, as a rules file turns them (syn_cookies comes only in one): TCP flags are read.
  if (dt::update_config_flags(t.fd.config, DT_CFG_RULES, 0) != 0) die("cannot write the config map");
}

dt_key verified_key_v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  dt_key k{};
  k.addr[10] = k.addr[11] = 0xff;
  k.addr[12] = a, k.addr[13] = b, k.addr[14] = c, k.addr[15] = d;
  k.rule = DT_VERIFIED_V4;
  return k;
}

dt_key verified_key_v6(const char *addr) {
  dt_key k{};
  if (inet_pton(AF_INET6, addr, k.addr) != 1) die("bad IPv6 address %s", addr);
  k.rule = DT_VERIFIED_V6;
  return k;
}

// One family's addresses: a client, a spoofed source of the same prefix (/16, /48).
struct Family {
  const char *name, *client, *spoofed;
  bool v6;
  dt_key client_key;
};

frames::PacketBuilder from(const Family &f, const char *src) {
  frames::PacketBuilder b;
  f.v6 ? b.ipv6(src) : b.ipv4(src);
  return b;
}

std::vector<uint8_t> syn_from(const Family &f, const char *src) {
  return from(f, src).tcp(kPort, 0x02).tcp_seq(kClientSeq).tcp_mss(1460).tcp_syn_options().build();
}

// The SYN-ACK `t` answers the client's SYN with: its sequence number, the cookie.
uint32_t cookie_for_client(const Throttle &t, const Family &f) {
  const std::vector<uint8_t> syn = syn_from(f, f.client);
  std::vector<uint8_t> out(256);
  LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = syn.data(), .data_out = out.data(),
              .data_size_in = static_cast<uint32_t>(syn.size()), .data_size_out = static_cast<uint32_t>(out.size()));
  if (bpf_prog_test_run_opts(t.fd.xdp, &opts) != 0) die("BPF_PROG_TEST_RUN of the SYN: %s", strerror(errno));
  const size_t tcp_off = frames::kEthHdrLen + (f.v6 ? 40 : 20), kSeqOff = tcp_off + 4;
  if (opts.retval != XDP_TX || opts.data_size_out < kSeqOff + 4 || out[tcp_off + 13] != 0x12)
    die("the %s client's SYN was not answered with a SYN-ACK (verdict %u, %u bytes)", f.name, opts.retval,
        opts.data_size_out);
  return static_cast<uint32_t>(out[kSeqOff]) << 24 | out[kSeqOff + 1] << 16 | out[kSeqOff + 2] << 8 | out[kSeqOff + 3];
}

// The last cookie "sent" now: ACKs are checked only within DT_COOKIE_ACK_WINDOW_NS of one.
void cookies_being_sent(const Throttle &t) {
  uint32_t zero = 0;
  dt_syncookie sc{};
  if (bpf_map_lookup_elem(t.fd.syncookie, &zero, &sc) != 0) die("cannot read the syncookie map: %s", strerror(errno));
  sc.last_sent_ns = dt::mono_now_ns();
  if (bpf_map_update_elem(t.fd.syncookie, &zero, &sc, BPF_ANY) != 0) die("cannot write the syncookie map");
}

int discard_record(void *, void *, size_t) { return 0; }

// One row: a target, its frame, the verdict and the counter every repetition must move.
struct CookieRow {
  std::string what;
  const Throttle *t;  // null: the empty program
  std::vector<uint8_t> frame;
  uint32_t verdict;
  __u64 dt_stats::*counter;
  dt_key client;     // the verified source the wrapper expires before each repetition
  size_t first = 0;  // its family's first row (admitted; the prefix drop follows)
};

class CookieBench {
 public:
  CookieBench(Replayer &rep, const Throttle &cookies)
      : rep_(rep),
        cookies_(cookies),
        ring_(ring_buffer__new(cookies.fd.verified_ring, discard_record, nullptr, nullptr), ring_buffer__free) {
    if (!ring_) die("cannot read the verified ring: %s", strerror(errno));
  }

  // ns per frame of kRunsPerSample runs of `row` (test runs timed, nothing else).
  double sample(const CookieRow &row) {
    double ns = 0;
    for (int run = 0; run < kRunsPerSample; run++) {
      ring_buffer__consume(ring_.get());
      cookies_being_sent(cookies_);
      const dt_stats before = row.t ? row.t->stats() : dt_stats{};
      uint32_t retval = 0;
      ns += rep_.run(row.t ? row.t->fd.xdp : rep_.empty_fd(), row.frame, row.client, kBatch, &retval);
      if (retval != row.verdict)
        die("%s: the last frame returned %u, expected %u", row.what.c_str(), retval, row.verdict);
      if (!row.t) continue;
      const uint64_t moved = row.t->stats().*row.counter - before.*row.counter;
      if (moved != kBatch)
        die("%s: %llu of %u frames counted", row.what.c_str(), static_cast<unsigned long long>(moved), kBatch);
    }
    return ns / kRunsPerSample;
  }

 private:
  Replayer &rep_;
  const Throttle &cookies_;
  std::unique_ptr<ring_buffer, void (*)(ring_buffer *)> ring_;
};

void print_cookie_table(const std::vector<CookieRow> &rows, const std::vector<std::vector<double>> &ns) {
  std::vector<double> med;
  for (const auto &v : ns) med.push_back(median(v));
  const double empty = med.back();
  printf(
      "\nPart 1h: SYN cookies, ns per frame (IPv4, then IPv6 against its own admitted and dropped\n"
      "  SYN; each frame written back before every repetition by the bench wrapper, whose own cost\n"
      "  is the last row and is taken off for \"net\"; median of %d rounds of %d runs of %u;\n"
      "  XDP_TX is the verdict only: a test run transmits nothing)\n\n",
      kRounds, kRunsPerSample, kBatch);
  printf("  %-62s %8s %8s | %-13s | %-13s\n", "row", "ns/frame", "net", "vs admitted", "vs prefix drop");
  for (size_t i = 0; i < rows.size(); i++) {
    printf("  %-62s %8.1f", rows[i].what.c_str(), med[i]);
    const double admit = med[rows[i].first] - empty, drop = med[rows[i].first + 1] - empty;
    if (i + 1 < rows.size())
      printf(" %8.1f | %12.2fx | %12.2fx", med[i] - empty, (med[i] - empty) / admit, (med[i] - empty) / drop);
    printf("\n");
  }
  printf("  spread (min - max ns):");
  for (const auto &v : ns) {
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    printf("  %.1f-%.1f", *lo, *hi);
  }
  printf("\n");
}

}  // namespace

// Family `f`'s five rows (`first`: the index of its first).
void add_family_rows(std::vector<CookieRow> *rows, const Family &f, const Throttle &plain, const Throttle &budgets,
                     const Throttle &cookies) {
  const size_t first = rows->size();
  const std::vector<uint8_t> spoofed_syn = syn_from(f, f.spoofed);
  uint32_t retval = 0;
  for (const Throttle *t : {&budgets, &cookies}) run_direct(t->fd.xdp, spoofed_syn, 1, &retval);  // spends the prefix
  const uint32_t cookie = cookie_for_client(cookies, f);
  const auto ack = [&f](uint32_t ack_no) {
    return from(f, f.client).tcp(kPort, 0x10).tcp_seq(kClientSeq + 1).tcp_ack(ack_no).build();
  };
  const std::string v = std::string(f.name) + " ";
  rows->push_back({v + "SYN, admitted (no prefix budget): PASS", &plain, spoofed_syn, XDP_PASS, &dt_stats::passed,
                   f.client_key, first});
  rows->push_back(
      {v + "SYN, prefix budget spent: DROP", &budgets, spoofed_syn, XDP_DROP, &dt_stats::dropped, f.client_key, first});
  rows->push_back({v + "SYN, prefix budget spent, syn_cookies: SYN-ACK, XDP_TX", &cookies, spoofed_syn, XDP_TX,
                   &dt_stats::cookie_sent, f.client_key, first});
  rows->push_back({v + "ACK, valid cookie: checked, source verified, PASS", &cookies, ack(cookie + 1), XDP_PASS,
                   &dt_stats::cookie_ack_valid, f.client_key, first});
  rows->push_back({v + "ACK, bad cookie: checked, DROP (prefix budget)", &cookies, ack(cookie + 1 + (1u << 24)),
                   XDP_DROP, &dt_stats::cookie_ack_invalid, f.client_key, first});
}

void syncookie_part() {
  const dt_policy per_source = policy_or_die(1e6, DT_BURST_MAX);
  Throttle plain(1024, per_source), budgets(1024, per_source), cookies(1024, per_source);
  set_rule(plain, 0);
  set_rule(budgets, DT_POL_PREFIX);
  set_rule(cookies, DT_POL_PREFIX | DT_POL_SYN_COOKIES);
  const Family v4{"IPv4", "198.18.0.1", "198.18.9.9", false, verified_key_v4(198, 18, 0, 1)};
  const Family v6{"IPv6", "2001:2::1", "2001:2:0:9::9", true, verified_key_v6("2001:2::1")};
  std::vector<CookieRow> rows;
  add_family_rows(&rows, v4, plain, budgets, cookies);
  add_family_rows(&rows, v6, plain, budgets, cookies);
  rows.push_back(
      {"empty (the wrapper's own cost)", nullptr, syn_from(v4, v4.spoofed), XDP_PASS, nullptr, v4.client_key, 0});
  Replayer rep(cookies);
  CookieBench bench(rep, cookies);
  for (const CookieRow &row : rows) bench.sample(row);  // warm-up: every bucket and entry made
  std::vector<std::vector<double>> ns(rows.size());
  for (int round = 0; round < kRounds; round++)
    for (size_t i = 0; i < rows.size(); i++) {
      const size_t r = round % 2 ? rows.size() - 1 - i : i;
      ns[r].push_back(bench.sample(rows[r]));
    }
  print_cookie_table(rows, ns);
}

}  // namespace dt::bench
