// measure.h - what every part of `bench` measures with: thread CPU time, medians, one
// test run of a program, the policies and the frame the parts feed the programs.
#pragma once

#include <cstdint>
#include <vector>

#include "dthrottle/common.h"

namespace dt::bench {

// Many shortish rounds rather than a few long ones: on a shared machine a burst of
// interference then spoils few samples, and the median drops them.
constexpr int kRounds = 9;
constexpr uint32_t kBucketCapacity = DT_DEFAULT_MAX_SOURCES;  // 1,048,576

// Prints "bench: " and the message on stderr and exits 1.
[[noreturn]] __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...);

// CPU time of this thread, system time (the BPF runs) included.
uint64_t thread_cpu_ns();

double median(std::vector<double> v);

// dt::make_policy(rate, burst) with a bucket per IPv6 address (the bench varies the low 32 bits).
dt_policy policy_or_die(double rate, uint64_t burst);

// BPF_PROG_TEST_RUN of `fd` itself, `repeat` times on `frame`: thread CPU ns per frame and,
// in *retval, the verdict. An XDP program runs on an xdp_buff, a tc one on an skb the kernel
// built once for the whole run (its allocation, which a real packet pays before tc, is not in it).
double run_direct(int fd, const std::vector<uint8_t> &frame, uint32_t repeat, uint32_t *retval);

// A minimal UDP frame of 64 bytes from the first source (198.18.0.1 or 2001:2::1) to a
// destination in the same benchmark range. Never sent anywhere.
std::vector<uint8_t> make_frame(bool ipv6);

}  // namespace dt::bench
