// pin_dir.h - the pin directory: where it is, on a BPF filesystem, one agent at a time.
//
// Besides the pinned maps and link, an agent keeps beside its pin directory (under
// /run/dthrottle, common/runtime_files.h) a lock file, flock()ed while it runs, and a record
// of how it attached.
#pragma once

#include <string>

namespace dt {

// The pin directory used when --pin-dir is not given.
std::string default_pin_dir(const std::string &iface);

// Makes sure the filesystem under `pin_dir` is a BPF filesystem, mounting bpffs at
// /sys/fs/bpf if that is where pin_dir lives and nothing is mounted there yet.
bool ensure_bpffs(const std::string &pin_dir, std::string *err);

// Creates `path` and its missing parents (mode 0700). False with a sentence in *err.
bool make_pin_dir(const std::string &path, std::string *err);

// Takes the lock of `pin_dir` (one agent per pin directory) and writes our PID in it. Returns
// the lock file's fd, or -1 with a sentence in *err (naming the other agent's PID if it runs).
int lock_pin_dir(const std::string &pin_dir, std::string *err);

// True if an agent holds the lock of `pin_dir` (is running).
bool agent_running(const std::string &pin_dir);

// How the agent pinning in `pin_dir` attached ("native mode", "tc ingress, tcx link", ...), as
// it recorded it; "" if no attachment is recorded (none, or it was removed).
std::string recorded_hook(const std::string &pin_dir);

// Whether the attachment record of `pin_dir` says dthrottle created the clsact qdisc.
bool qdisc_recorded(const std::string &pin_dir);

}  // namespace dt
