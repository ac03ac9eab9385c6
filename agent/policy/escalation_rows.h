// escalation_rows.h - escalation's decision counters, listed once for the status file's
// "escalation" object (daemon/escalation_driver.cpp) and the metric
// dthrottle_escalation_total{what} and its HELP (metrics/metrics_render.cpp), in the order
// both show them. `failed` is the driver's (EscalationStatus), the rest the logic's.
#pragma once

#include <cstdint>

#include "policy/escalation.h"

namespace dt {

struct EscalationCounterRow {
  const char *json;                              // its key in the status file
  const char *what;                              // its `what` label in the metric
  const char *meaning;                           // what it counts (the metric's HELP)
  uint64_t (*value)(const EscalationStatus &s);  // its value
};

inline constexpr EscalationCounterRow kEscalationCounterRows[] = {
    {"bans", "ban", "automatic bans made", [](const EscalationStatus &s) { return s.counters.bans; }},
    {"would_ban", "would_ban", "dry run: bans it would have made",
     [](const EscalationStatus &s) { return s.counters.would_ban; }},
    {"cap_reached", "cap_reached", "not made: --auto-ban-max automatic bans in force",
     [](const EscalationStatus &s) { return s.counters.cap_reached; }},
    {"exempt", "exempt", "offenders never banned: allow list, verified, the cluster's peers, too wide",
     [](const EscalationStatus &s) { return s.counters.exempt; }},
    {"failed", "failed", "the ban could not be written", [](const EscalationStatus &s) { return s.failed; }},
    {"offences", "offence", "offences started", [](const EscalationStatus &s) { return s.counters.offences; }},
    {"evicted", "evicted", "offenders forgotten to stay within the tracking cap",
     [](const EscalationStatus &s) { return s.counters.evicted; }},
    {"learned", "learned", "peers' automatic bans taken into the offenders' history",
     [](const EscalationStatus &s) { return s.counters.learned; }},
};

}  // namespace dt
