// node_id.h - the default node id: the host name and a short hash of the interface's MAC
// address, so that agents on hosts that share a host name (cloned images, network
// namespaces) still tell each other apart. An explicit --node-id always wins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dt {

// "<host>-<6 hex digits of a hash of `hw`>" (the host cut to fit 64 characters, "dthrottle"
// if it is not a valid node id). With no hardware address (len 0 or all zero bytes), the
// hash is of `fallback` (the interface's address, say), and with neither, the host alone.
std::string make_node_id(const std::string &host, const uint8_t *hw, size_t len, const std::string &fallback);

// make_node_id of this host's name and the MAC address of `iface` (its first IP
// address if it has no MAC), read in the current network namespace.
std::string default_node_id(const std::string &iface);

}  // namespace dt
