// sink.h - `pktgen sink`: counts the UDP datagrams per source address, the independent
// witness of what the XDP program let through to the stack.
#pragma once

#include <cstdint>

#include "pktgen/run.h"

namespace dt::pktgen {

struct SinkOptions {
  uint16_t port = kDefaultPort;
  uint64_t duration_ns = 0;
  bool json = false;
};

// Listens for o.duration_ns (or until SIGINT/SIGTERM) and prints the counts; returns the exit code.
int run_sink(const SinkOptions &o);

}  // namespace dt::pktgen
