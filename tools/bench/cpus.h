// cpus.h - a program run on several CPUs at once: one thread pinned on each, released together.
#pragma once

#include <cstdint>
#include <vector>

namespace dt::bench {

// CPUs this process may run on.
std::vector<int> allowed_cpus();

// Runs `prog_fd` `repeat` times on `frame` from one thread pinned on each of `cpus`
// (SCHED_FIFO for the run, so that on a busy machine they do run at once), all released at
// once (BPF_PROG_TEST_RUN runs every repeat on the caller's CPU). Returns the median over the
// threads of thread CPU ns per frame; dies unless every thread's last verdict was `want`.
double run_on_cpus(int prog_fd, const std::vector<uint8_t> &frame, const std::vector<int> &cpus, uint32_t repeat,
                   uint32_t want);

}  // namespace dt::bench
