// slot_quota.h - who may take one of the query server's connection slots at the cap.
//
// Connections are counted by group: a local user (the unix peer's uid, SO_PEERCRED; a
// loopback TCP client's uid, the owner of its socket: peer_owner.h) or kRemotePeers, every
// client that is not a socket of this host, together. At the cap, when no connection is
// idle enough to be evicted, slot_victim says whose least recently active connection makes
// room for a newcomer:
//   1. a group over its quota (a local user: half the cap; the remote clients together: a
//      quarter), the newcomer's excepted: the one most over it;
//   2. else nobody if the newcomer's group is at its quota (refused);
//   3. else the group holding the most, if it holds at least 2 more than the newcomer's
//      (so every group can get a share while another holds more than it);
//   4. else nobody (refused).
// So no user, over the unix socket, TCP or both, locks the others out, and clients from
// the network never hold more than a quarter against local ones.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <unordered_map>

namespace dt {

// The group of the clients that are not sockets of this host (or whose owner is unknown).
inline constexpr uid_t kRemotePeers = static_cast<uid_t>(-1);

// Connections held, by group.
using SlotHoldings = std::unordered_map<uid_t, size_t>;

// The most connections `group` may hold at the cap.
size_t slot_quota(uid_t group, size_t cap);

// At the cap: the group one of whose connections makes room for a newcomer of `newcomer`,
// or nothing (the newcomer is refused).
std::optional<uid_t> slot_victim(const SlotHoldings &held, uid_t newcomer, size_t cap);

}  // namespace dt
