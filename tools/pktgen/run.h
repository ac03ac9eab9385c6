// run.h - what pktgen's send and sink share: exit codes and limits, error reports, the
// monotonic clock, and the stop flag SIGINT/SIGTERM set.
#pragma once

#include <signal.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dt::pktgen {

constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;
constexpr uint64_t kMaxDurationNs = 3600'000'000'000ull;  // longest --duration: 1h
constexpr uint64_t kMaxCount = 1'000'000'000;             // largest --count
constexpr double kMaxRate = 10'000'000;                   // packets per second, all sources
constexpr uint64_t kMaxSources = 65536;
constexpr uint16_t kDefaultPort = 9999;

// Prints "pktgen: MSG" and a pointer to --help on stderr; returns kExitUsage.
int usage_error(const std::string &msg);
// Prints "pktgen: MSG" on stderr; returns kExitRuntime.
int runtime_error(const std::string &msg);

std::vector<std::string> split(const std::string &s, char sep);

uint64_t now_ns();  // CLOCK_MONOTONIC
void sleep_until(uint64_t ns);

// Set by SIGINT/SIGTERM once install_stop_handlers() ran: the run ends early but still
// prints what it counted.
extern volatile sig_atomic_t g_stop;
void install_stop_handlers();

}  // namespace dt::pktgen
