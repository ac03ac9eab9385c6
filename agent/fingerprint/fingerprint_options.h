// fingerprint_options.h - `agent fingerprint`'s command line (docs/capture.md).
#pragma once

#include <cstdint>
#include <string>

namespace dt {

// agent fingerprint -r FILE [--name NAME] [--top N] [--max-packets N] [--json]
struct FingerprintOptions {
  std::string input;                 // -r: a pcapng file agent capture wrote
  std::string name = "fingerprint";  // the proposed rule's name
  uint64_t top = 3;                  // values shown per field
  uint64_t max_packets = 1'000'000;  // samples read at most
  bool json = false;                 // one JSON document instead of the text
};

// The largest file it reads (agent capture's 1,000,000 packets of 512 bytes fit).
inline constexpr uint64_t kFingerprintMaxFileBytes = 1ull << 30;

// Parses argv (argv[0] is "fingerprint"): -1 to go on, else the exit code.
int parse_fingerprint_command(int argc, char **argv, FingerprintOptions *o);

}  // namespace dt
