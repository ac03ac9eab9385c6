// cpus.cpp - runs a program on several CPUs at once (Part 4 and Part 1g's every-CPU load).
#include "bench/cpus.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sched.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "bench/measure.h"

namespace dt::bench {

// CPUs this process may run on.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) die("sched_getaffinity: %s", strerror(errno));
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// Pins the calling thread on `cpu` (0, else the errno) and makes it real-time for the run,
// so that on a busy machine the threads do run at once (a few hundred ms; the kernel's RT
// throttling bounds it anyway); *fifo says whether SCHED_FIFO was granted.
static int pin_realtime(int cpu, char *fifo) {
  cpu_set_t only{};
  CPU_SET(cpu, &only);
  const int err = sched_setaffinity(0, sizeof only, &only) == 0 ? 0 : errno;
  const sched_param realtime{.sched_priority = 1};
  *fifo = sched_setscheduler(0, SCHED_FIFO, &realtime) == 0;
  return err;
}

double run_on_cpus(int prog_fd, const std::vector<uint8_t> &frame, const std::vector<int> &cpus, uint32_t repeat,
                   uint32_t want) {
  std::vector<double> ns(cpus.size());
  std::vector<int> err(cpus.size());
  std::vector<uint32_t> verdict(cpus.size());
  std::vector<char> fifo(cpus.size());
  std::atomic<size_t> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cpus.size(); i++)
    threads.emplace_back([&, i] {
      err[i] = pin_realtime(cpus[i], &fifo[i]);
      ready++;
      while (!go.load()) std::this_thread::yield();
      if (err[i]) return;
      LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_size_in = static_cast<uint32_t>(frame.size()),
                  .repeat = static_cast<int>(repeat));
      const uint64_t t0 = thread_cpu_ns();
      if (bpf_prog_test_run_opts(prog_fd, &opts) != 0) err[i] = errno;
      ns[i] = static_cast<double>(thread_cpu_ns() - t0) / repeat;
      verdict[i] = opts.retval;
    });
  while (ready.load() < cpus.size()) std::this_thread::yield();
  go = true;
  for (auto &t : threads) t.join();
  for (size_t i = 0; i < cpus.size(); i++) {
    if (err[i]) die("CPU %d: pinning or BPF_PROG_TEST_RUN failed: %s", cpus[i], strerror(err[i]));
    if (verdict[i] != want) die("CPU %d: the last frame returned %u, expected %u", cpus[i], verdict[i], want);
    if (!fifo[i]) die("CPU %d: cannot run the thread SCHED_FIFO (root needed): %s", cpus[i], strerror(EPERM));
  }
  return median(ns);
}

}  // namespace dt::bench
