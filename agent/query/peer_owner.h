// peer_owner.h - which local user is at the other end of an accepted TCP connection.
#pragma once

#include <sys/types.h>

namespace dt {

// The uid owning the client's socket of the accepted TCP connection `fd`, if that socket is
// one of this host's (this network namespace's: a loopback client, or one connecting to an
// address of its own host): asked of the kernel with sock_diag (NETLINK_SOCK_DIAG, inet_diag
// for the exact address and port pair, the client's side). kRemotePeers (slot_quota.h) if it
// is not, or if it cannot be told (the client already gone, netlink refused).
uid_t tcp_peer_owner(int fd);

}  // namespace dt
