// boot_counter.h - a node's boots only move forward: every agent start takes a boot
// counter above every earlier one of its node, and puts it in the high 32 bits of its
// boot id (peer_protocol.h: boot_counter()). Receivers with keys compare boots by it
// (peer_tracker.h): a signed boot below the current one is an old boot replayed, refused
// for good; one above it is the node's restart, taken at once.
//
// The counter is max(stored + 1, the wall clock in seconds), stored back before the
// first report goes out. The file keeps it forward across a clock stepped back; the
// clock keeps it forward if the file is lost (a new host, a wiped directory, a reboot
// for the runtime directory). With keys the file lives next to the key (web1.key ->
// web1.boot: a node's identity and its boots stay together) if that directory is
// writable; else, and without keys, under /run/dthrottle (the units keep it across
// restarts: RuntimeDirectoryPreserve; /etc is read-only under ProtectSystem=strict).
#pragma once

#include <cstdint>
#include <string>

namespace dt {

// The boot counter file of the node whose key is `curve_key_file`: its path with ".key"
// replaced by (or, without that suffix, followed by) ".boot".
std::string boot_counter_path(const std::string &curve_key_file);

// Where the node keeps its counter: boot_counter_path(curve_key_file) if the key is given
// and its directory is writable, else `fallback` (a runtime file).
std::string choose_boot_file(const std::string &curve_key_file, const std::string &fallback);

// The next boot counter of the node whose counter is stored at `path` ("" for none), at
// wall clock `unix_s`, stored back. A file that cannot be read (missing: the first start)
// or written leaves the clock alone to order boots: *warn says why (else "").
uint32_t next_boot_counter(const std::string &path, uint64_t unix_s, std::string *warn);

// A boot id: the counter above random bits.
inline uint64_t make_boot_id(uint32_t counter, uint32_t random_bits) {
  return static_cast<uint64_t>(counter) << 32 | random_bits;
}

}  // namespace dt
