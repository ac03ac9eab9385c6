// cluster_exempt.h - the cluster's own connections, which the XDP program passes without
// a bucket: the cluster_exempt map's (address, TCP port, side) entries for the peers, hubs
// and --listen. An entry alone exempts nothing (bpf/exempt.bpf.h): a TCP segment that
// matches one passes only if the host has a socket for its four-tuple (a connection, not
// a listener), or if it is a SYN to our --listen port (and then after the allow list,
// bans and deny list). A UDP flood, ICMP, TCP to any other port from a peer's address, or
// spoofed TCP from its report port with no connection behind it is throttled like any
// other source's.
#pragma once

#include <string>
#include <vector>

#include "dthrottle/common.h"

namespace dt {

// The entries for every address the peers and hubs resolve to now (resolve_endpoint_hosts):
//   a peer's address:  from its report port (its PUB, our SUB's connection), and to our
//                      --listen port if we listen (its SUB's connection to our PUB);
//   a hub's address:   from its frontend port (PORT) and from its backend port (PORT + 1).
// Endpoints are normalised (tcp://host:port; listen "" without one). Unresolvable hosts
// are named in *err and skipped. Sorted (exempt_key_less), without duplicates.
std::vector<dt_exempt_key> cluster_exempt_keys(const std::vector<std::string> &peers,
                                               const std::vector<std::string> &hubs, const std::string &listen,
                                               std::string *err);

// The port bitmaps of `keys` (the cluster_ports map's value).
dt_cluster_ports cluster_ports_of(const std::vector<dt_exempt_key> &keys);

// Makes the cluster_exempt map (exempt_fd) hold exactly the sorted `keys`, then writes their
// port bitmaps to cluster_ports (ports_fd). Entries not in `keys` are removed, whoever wrote
// them (a previous agent's, taken over). Returns what the map held before, sorted (for
// describe_exempt_change); what could not be written is named in *warn ("" if nothing).
std::vector<dt_exempt_key> install_cluster_exempt(int exempt_fd, int ports_fd, const std::vector<dt_exempt_key> &keys,
                                                  std::string *warn);

// The order of cluster_exempt_keys: address, then side, then port.
bool exempt_key_less(const dt_exempt_key &a, const dt_exempt_key &b);
// True if some entry of the sorted `keys` is for the address of `addr` (its rule ignored).
bool exempts_address(const std::vector<dt_exempt_key> &keys, const dt_key &addr);
// "198.18.0.2 tcp from port 7700" / "2001:2::2 tcp to port 7700".
std::string exempt_key_to_string(const dt_exempt_key &k);
// The log line of a change between two sorted sets ("" if they are the same): how many
// entries there are now and which were added and removed (the first few of each).
std::string describe_exempt_change(const std::vector<dt_exempt_key> &before, const std::vector<dt_exempt_key> &after);

}  // namespace dt
