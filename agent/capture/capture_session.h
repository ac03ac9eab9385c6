// capture_session.h - one run of `agent capture`: arm the sampler, write what the ring
// brings to the file, renew the lease every second, stop at --count, --duration or a
// signal, and switch sampling off again.
#pragma once

#include <string>

#include "capture/capture_options.h"

namespace dt {

// Runs the capture of `o` (parsed): the process exit code (0, or 1 with the error on stderr).
int run_capture(const CaptureOptions &o);

// What decided a packet, for its comment: the rule's name, "default" for an unnamed rule 0,
// "#ID" for another unnamed rule, "@ban", "@deny-list", "@allow-list" or "@none".
std::string capture_rule_label(uint16_t rule, const std::string &name);
// The comment a packet carries: "verdict=dropped rule=NAME hook=xdp cpu=N".
std::string capture_comment(uint8_t verdict, const std::string &rule_label, uint8_t hook, uint16_t cpu);

}  // namespace dt
