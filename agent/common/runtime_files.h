// runtime_files.h - the files an agent keeps under /run/dthrottle beside its pinned
// maps: its lock, the outcome of its last reload, its status for `agent stats`.
// Every name is defined here, once; the files of one agent are named after its pin
// directory, so agents on several interfaces never meet.
#pragma once

#include <string>

namespace dt {

constexpr const char *kRuntimeDir = "/run/dthrottle";

// Suffixes of the files of one agent (see runtime_file).
constexpr const char *kLockFile = ".lock";      // flock()ed while it runs; holds its PID
constexpr const char *kReloadFile = ".reload";  // "<generation> ok|partial|error <text>"
constexpr const char *kClusterStatusJson = ".cluster.json";
constexpr const char *kClusterStatusText = ".cluster.txt";
constexpr const char *kAdaptiveStatusJson = ".adaptive.json";
constexpr const char *kAdaptiveStatusText = ".adaptive.txt";
constexpr const char *kEscalationStatusJson = ".escalation.json";  // daemon/escalation_driver.h
constexpr const char *kEscalationStatusText = ".escalation.txt";
constexpr const char *kEventsStatusJson = ".events.json";  // the events' counters (docs/events.md)
constexpr const char *kEventsStatusText = ".events.txt";
constexpr const char *kExplainRequest = ".explain.req";  // "<id> <address> <window ms>" from `agent explain`
constexpr const char *kExplainAnswer = ".explain.json";  // the peers that reported it (daemon/explain_watch)
// How the program is attached (first line: "native mode", "tc ingress, tcx link", ...) and,
// on a second line "clsact-created", that dthrottle created the clsact qdisc. It outlives the
// agent as the attachment does (for `agent stats` and the next agent); removed on detach.
constexpr const char *kAttachFile = ".attach";
// The node's boot counter without keys, or when the key's directory is read-only
// (cluster/boot_counter.h). Kept after the agent exits: the next boot counts on.
constexpr const char *kBootCounterFile = ".boot";

// The file with `suffix` of the agent that pins its maps in `pin_dir`
// (/run/dthrottle/<pin_dir with '/' as '_'><suffix>).
std::string runtime_file(const std::string &pin_dir, const std::string &suffix);

}  // namespace dt
