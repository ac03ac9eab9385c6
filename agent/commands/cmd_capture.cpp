// cmd_capture.cpp - `agent capture`: samples of decided packets into a pcap file
// (agent/capture/, docs/capture.md).
#include "capture/capture_options.h"
#include "capture/capture_session.h"
#include "commands/commands.h"

namespace dt {

int cmd_capture(int argc, char **argv) {
  CaptureOptions opt;
  if (int code = parse_capture_command(argc, argv, &opt); code >= 0) return code;
  return run_capture(opt);
}

}  // namespace dt
