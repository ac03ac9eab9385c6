// cmd_fingerprint.cpp - `agent fingerprint -r FILE`: the header values that tell an attack
// apart in a capture, and a rule for it (agent/fingerprint/, docs/capture.md).
#include "commands/commands.h"
#include "fingerprint/fingerprint_options.h"
#include "fingerprint/fingerprint_session.h"

namespace dt {

int cmd_fingerprint(int argc, char **argv) {
  FingerprintOptions opt;
  if (int code = parse_fingerprint_command(argc, argv, &opt); code >= 0) return code;
  return run_fingerprint(opt);
}

}  // namespace dt
