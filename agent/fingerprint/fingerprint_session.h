// fingerprint_session.h - one run of `agent fingerprint`: read the capture, label its
// samples, print the dominant values and the proposed rule.
#pragma once

#include <string>
#include <vector>

#include "fingerprint/fingerprint.h"
#include "fingerprint/fingerprint_options.h"
#include "fingerprint/pcapng_reader.h"

namespace dt {

// The samples of a capture's packets (dropped and would-drop: dropped; passed: passed),
// ordinary ones marked; *skipped counts packets that are not IP or carry no verdict.
std::vector<Sample> samples_of(const std::vector<CapturedPacket> &packets, uint64_t *skipped);

// The report: the samples read, each field's dominant values, the fingerprint and its rule.
std::string render_fingerprint(const std::vector<Sample> &samples, uint64_t skipped, const FingerprintOptions &opt);

// The same as one JSON document (agent fingerprint --json; docs/capture.md).
std::string render_fingerprint_json(const std::vector<Sample> &samples, uint64_t skipped,
                                    const FingerprintOptions &opt);

// Runs the command: 0, or 1 with the error on stderr.
int run_fingerprint(const FingerprintOptions &opt);

}  // namespace dt
