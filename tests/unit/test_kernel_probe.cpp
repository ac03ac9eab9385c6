// test_kernel_probe.cpp - the kernel floor's message from a (fake) uname release and probe results,
// and the refusal of syn_cookies rules at --attach tc or without the SYN cookie helpers.
#include <gtest/gtest.h>
#include <unistd.h>

#include "dataplane/kernel_probe.h"

namespace dt {
namespace {

KernelProbe probe(int syscall_prog, int bpf_loop, int ringbuf) { return KernelProbe{syscall_prog, bpf_loop, ringbuf}; }

TEST(KernelFloor, Ubuntu2204WithoutBpfLoop) {
  EXPECT_EQ(kernel_floor_error("5.15.0-91-generic", probe(1, 0, 1)),
            "dthrottle needs Linux 5.17 or later (bpf_loop); this is 5.15.0");
}

TEST(KernelFloor, EverythingThereIsNoError) {
  EXPECT_EQ(kernel_floor_error("6.1.0-18-amd64", probe(1, 1, 1)), "");
  EXPECT_EQ(kernel_floor_error("6.18.44-fc-v669", probe(1, 1, 1)), "");
}

TEST(KernelFloor, TheProbeDecidesNotTheVersion) {
  // RHEL 9: 5.14 with bpf_loop backported loads fine.
  EXPECT_EQ(kernel_floor_error("5.14.0-362.8.1.el9_3.x86_64", probe(1, 1, 1)), "");
  // A probe that failed (say EPERM) proves nothing: the load will tell.
  EXPECT_EQ(kernel_floor_error("5.15.0", probe(-1, -1, -1)), "");
  EXPECT_EQ(kernel_floor_error("5.15.0", probe(1, -22, 1)), "");
}

TEST(KernelFloor, NamesEverythingMissing) {
  EXPECT_EQ(kernel_floor_error("5.4.0-150-generic", probe(0, 0, 0)),
            "dthrottle needs Linux 5.17 or later (bpf_loop, BPF_PROG_TYPE_SYSCALL, the BPF ring buffer); "
            "this is 5.4.0");
  EXPECT_EQ(kernel_floor_error("5.10.0-28-amd64", probe(0, 0, 1)),
            "dthrottle needs Linux 5.17 or later (bpf_loop, BPF_PROG_TYPE_SYSCALL); this is 5.10.0");
}

TEST(KernelFloor, VersionFromRelease) {
  EXPECT_EQ(kernel_version("5.15.0-91-generic"), "5.15.0");
  EXPECT_EQ(kernel_version("6.1.0-18-amd64"), "6.1.0");
  EXPECT_EQ(kernel_version("5.14.0-362.8.1.el9_3.x86_64"), "5.14.0");
  EXPECT_EQ(kernel_version("6.8.0"), "6.8.0");
  EXPECT_EQ(kernel_version("6.8"), "6.8");
  EXPECT_EQ(kernel_version("6.8-rc3"), "6.8");
  EXPECT_EQ(kernel_version("6."), "");
  EXPECT_EQ(kernel_version("linux"), "");
  EXPECT_EQ(kernel_version(""), "");
  // An unreadable release is quoted as it is.
  EXPECT_EQ(kernel_floor_error("weird", probe(1, 0, 1)),
            "dthrottle needs Linux 5.17 or later (bpf_loop); this is 'weird'");
}

TEST(KernelFloor, ThisKernelPassesItsOwnProbe) {
  // The machine running the tests loads the object (the BPF suite does), so its probe
  // must not refuse it. Needs root for the probes; without, they fail and prove nothing.
  if (geteuid() != 0) GTEST_SKIP() << "the kernel probes need root";
  EXPECT_EQ(check_kernel_floor(), "");
  const KernelProbe p = probe_kernel();
  EXPECT_EQ(p.syscall_prog, 1) << "BPF_PROG_TYPE_SYSCALL probe (run as root)";
  EXPECT_EQ(p.bpf_loop, 1) << "bpf_loop probe (run as root)";
  EXPECT_EQ(p.ringbuf, 1) << "ring buffer probe (run as root)";
}

TEST(SynCookieKernel, NothingAskedNothingRefused) { EXPECT_EQ(syn_cookies_error({}, true, 0, "5.17.0"), ""); }

TEST(SynCookieKernel, RefusedAtTcWhateverTheKernel) {
  EXPECT_EQ(syn_cookies_error({"web"}, true, 1, "6.18.0"),
            "syn_cookies (rule 'web') needs the XDP hook: at --attach tc the program cannot send the SYN-ACK back out "
            "of the port (XDP_TX); attach at XDP, or drop syn_cookies from the rules");
}

TEST(SynCookieKernel, RefusedWithoutTheHelpersNamingLinux60) {
  EXPECT_EQ(syn_cookies_error({"web", "ssh"}, false, 0, "5.19.0-50-generic"),
            "syn_cookies (rule 'web', 'ssh') needs Linux 6.0 or later (bpf_tcp_raw_gen_syncookie_ipv4); this is "
            "5.19.0: drop syn_cookies from the rules, or upgrade the kernel");
  EXPECT_EQ(syn_cookies_error({"web"}, false, 1, "6.1.0-18-amd64"), "") << "the helpers are there";
  EXPECT_EQ(syn_cookies_error({"web"}, false, -1, "6.1.0"), "") << "an unknown probe is not held against it";
}

TEST(SynCookieKernel, ThisKernelHasTheHelpers) {
  // The BPF suite's SYN cookie tests run here (Linux 6.0 or later); needs root for the probe.
  if (geteuid() != 0) GTEST_SKIP() << "the kernel probes need root";
  EXPECT_EQ(probe_syncookie_helpers(), 1);
  EXPECT_EQ(check_syn_cookies({"web"}, false), "");
}

}  // namespace
}  // namespace dt
