// run.cpp - pktgen's error reports, clock and stop flag.
#include "pktgen/run.h"

#include <time.h>

#include <cstdio>

namespace dt::pktgen {

volatile sig_atomic_t g_stop = 0;

namespace {
void on_signal(int) { g_stop = 1; }
}  // namespace

// No SA_RESTART: the blocking call in progress returns EINTR and the loop sees g_stop.
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
  fprintf(stderr, "pktgen: %s\nTry 'pktgen --help'.\n", msg.c_str());
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

}  // namespace dt::pktgen
