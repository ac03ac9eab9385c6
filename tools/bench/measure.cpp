// measure.cpp - thread CPU time, medians, test runs and the bench's frame.
#include "bench/measure.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "dataplane/policy.h"
#include "frames/packet_builder.h"

namespace dt::bench {

void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

dt_policy policy_or_die(double rate, uint64_t burst) {
  dt_policy p{};
  std::string err;
  if (!dt::make_policy(rate, burst, &p, &err)) die("make_policy: %s", err.c_str());
  p.v6_key_bits = 128;  // a bucket per IPv6 address: the bench varies the low 32 bits
  return p;
}

double run_direct(int fd, const std::vector<uint8_t> &frame, uint32_t repeat, uint32_t *retval) {
  LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_size_in = static_cast<uint32_t>(frame.size()),
              .repeat = static_cast<int>(repeat));
  const uint64_t t0 = thread_cpu_ns();
  if (bpf_prog_test_run_opts(fd, &opts) != 0) die("BPF_PROG_TEST_RUN: %s", strerror(errno));
  const uint64_t t1 = thread_cpu_ns();
  *retval = opts.retval;
  return static_cast<double>(t1 - t0) / repeat;
}

std::vector<uint8_t> make_frame(bool ipv6) {
  // 64 bytes either way: 14 + 20 + 8 + 22 (IPv4) or 14 + 40 + 8 + 2 (IPv6).
  frames::PacketBuilder b;
  if (ipv6) b.ipv6("2001:2::1", "2001:2::ffff:fffe").udp(2);
  else b.ipv4("198.18.0.1", "198.19.255.254").udp(22);
  return b.build();
}

}  // namespace dt::bench
