// capture_options.h - `agent capture`'s command line (docs/capture.md).
#pragma once

#include <cstdint>
#include <string>

#include "capture/pcap_writer.h"
#include "dthrottle/capture.h"

namespace dt {

// agent capture (--iface IFACE | --pin-dir DIR) -w FILE [--dropped] [--would-drop] [--passed]
//   [--rule NAME] [--source PREFIX] [--count N] [--duration D] [--snaplen N] [--per-cpu-rate K]
//   [--format pcapng|pcap]
struct CaptureOptions {
  std::string iface, pin_dir;
  std::string output;        // -w: the file ("-": standard output)
  uint8_t verdicts = 0;      // DT_CAP_* given; 0: dropped and would-drop
  std::string rule;          // --rule NAME ("": any)
  std::string source;        // --source PREFIX ("": any)
  uint64_t count = 100;      // packets to write, then stop
  uint64_t duration_ns = 0;  // stop after this long (0: no limit)
  uint32_t snaplen = 128;
  uint32_t per_cpu_rate = DT_CAPTURE_DEFAULT_RATE;
  PcapFormat format = PcapFormat::Pcapng;
};

// Parses argv (argv[0] is "capture"): -1 to go on, else the exit code (help, or the error).
int parse_capture_command(int argc, char **argv, CaptureOptions *o);

}  // namespace dt
