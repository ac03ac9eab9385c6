// link_senders.h - which member a message on our SUB socket comes from, by its connection.
//
// With keys our SUB socket connects to each peer's --listen endpoint as a CurveZMQ client,
// with the server key of the .pub file that names that endpoint: the handshake proves the
// other end holds that node's CURVE secret, and every frame after it is sealed with the
// session's keys. A message on that connection is that node's, whatever it says, and its
// signing key is derived from the same secret (report_signing.h): its signature proves
// nothing more. ZeroMQ tells which connection a message came on only by the peer's address
// (the message's "Peer-Address"), so an address speaks for a node only when exactly one
// connection can have it: every configured endpoint (peers and hubs) a literal address,
// each address once, and a hub's never (a hub relays every member's messages on one
// connection). One endpoint named by a host name (it may resolve anywhere, now or later)
// and no address speaks for anyone: every message's signature is checked, as before.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/key_hash.h"

namespace dt {

class LinkSenders {
 public:
  // `links`: each endpoint our SUB socket connects to ("tcp://HOST:PORT") with the node id
  // whose key authenticates it: a member's, or "" for a hub (or a peer without a node key).
  void configure(const std::vector<std::pair<std::string, std::string>> &links);
  // The member whose connection `peer_address` is (ZeroMQ's "Peer-Address"), or "" when it
  // cannot be told.
  const std::string &node_of(const std::string &peer_address) const;
  size_t size() const { return nodes_.size(); }

 private:
  // The address (an IPv4 address as its IPv4-mapped IPv6 form, rule 0) -> node id.
  std::unordered_map<dt_key, std::string, KeyHash, KeyEq> nodes_;
};

}  // namespace dt
