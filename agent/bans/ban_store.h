// ban_store.h - the bans in the pinned maps (bans_v4, bans_v6, ban_info, ban_counts):
// set, remove, list, sweep. Used by `agent ban/unban/bans`, the query socket's BAN, the
// cluster's ban sync and the CrowdSec bouncer; no running agent needed (docs/bans.md).
//
// API contract (m-crowdsec and others build on it):
//   auto store = BanStore::open(pin_dir, &err);      // pin_dir: resolve_pin_dir(iface, ...)
//   Ban b; parse_ban_prefix("198.18.0.0/24", &b.prefix, &err);
//   b.expires_ns = mono_now_ns() + 600'000'000'000;  // CLOCK_MONOTONIC
//   b.reason = "..."; b.origin = "crowdsec"; b.who = "crowdsec bouncer";
//   store->set(b, &err);                 // idempotent by prefix: a second set updates it
//   store->remove(prefix, &found, &err);
//   store->list(&bans, &err);            // every ban, expired ones included, with counts
// Every change holds an flock on /run/dthrottle/<pin dir>.bans (so the CLI, the query
// socket, the bouncer and the daemon never interleave) and bumps the generation in that
// file, by which the daemon notices changes made by other processes (BanSync).
// set_unix_ms 0 means "now"; slot, remote-ness of an existing ban and counts are the
// store's business (a set keeps the slot and counts of the ban it updates).
// The family's bit in the features map (dataplane/features.h) is set before a ban is
// written and cleared when a removal (or sweep) leaves its trie empty: the packet path
// skips an empty trie without a lookup, and never a trie holding a ban.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bans/ban_types.h"
#include "common/no_copy.h"

namespace dt {

// The four ban maps, by fd (not owned by this struct), and the features map whose `bans`
// word says which tries the packet path looks at (dataplane/features.h; -1: pins of an
// agent whose program looks at both always).
struct BanMapFds {
  int v4 = -1, v6 = -1, info = -1, counts = -1, features = -1;
};

class BanStore : NoCopy {
 public:
  ~BanStore();

  // The pins of the agent of pin_dir. Null with a sentence in *err (what to do) when
  // there are none, or pins of an agent too old to have bans.
  static std::unique_ptr<BanStore> open(const std::string &pin_dir, std::string *err);
  // Over maps this store does not own (tests): no lock, the generation kept in memory.
  static std::unique_ptr<BanStore> over(const BanMapFds &fds);

  // Sets `ban` (or updates the ban of the same prefix: expiry, reason, origin, who,
  // remote). False with *err when the maps are full or cannot be written.
  bool set(const Ban &ban, std::string *err);
  // Removes the ban of exactly `prefix`; *found false when there is none (not an error).
  bool remove(const BanPrefix &prefix, bool *found, std::string *err);
  // Every ban, with its counts summed over CPUs when with_counts.
  bool list(std::vector<Ban> *out, std::string *err, bool with_counts = true);
  // The ban of exactly `prefix`, or nullopt.
  std::optional<Ban> find(const BanPrefix &prefix);
  // The longest ban covering the 16-byte address (IPv4 mapped), or nullopt (agent explain).
  std::optional<Ban> covering(const uint8_t *addr);
  // Removes the bans that expired by now_ns (monotonic); how many. Also turns on the
  // features bit of a trie that holds a ban without it (one written by a store of an
  // agent before the features map): the daemon's every period.
  size_t sweep(uint64_t now_ns);
  // Changes whenever any process changes the bans of this pin directory.
  uint64_t generation();

 private:
  BanStore() = default;
  bool lock(int how);
  void unlock();
  void bump_generation();
  std::optional<Ban> find_locked(const BanPrefix &prefix);
  bool write_new(Ban ban, std::string *err);
  bool erase_locked(const Ban &ban);
  bool announce_locked(const BanPrefix &p, std::string *err);
  int trie_fd(const BanPrefix &p) const { return p.is_v6 ? fds_.v6 : fds_.v4; }

  BanMapFds fds_;
  bool owned_ = false;       // the fds were opened from pins: closed by the destructor
  int lock_fd_ = -1;         // the flock()ed file holding the generation; -1: none (over())
  uint64_t generation_ = 0;  // without a lock file
};

}  // namespace dt
