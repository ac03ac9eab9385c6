// link_senders.cpp - which member a message on our SUB socket comes from (see link_senders.h).
#include "cluster/link_senders.h"

#include <unordered_set>

#include "common/address.h"
#include "common/endpoint.h"

namespace dt {

void LinkSenders::configure(const std::vector<std::pair<std::string, std::string>> &links) {
  nodes_.clear();
  std::unordered_set<dt_key, KeyHash, KeyEq> taken;  // addresses of more than one connection, or of a hub's
  for (const auto &[endpoint, node_id] : links) {
    HostPort hp;
    dt_key addr;
    if (!parse_host_port(endpoint, {.tcp_scheme = true}, &hp) || !key_from_string(hp.host, &addr))
      return nodes_.clear();  // a name: no address speaks for anyone
    if (node_id.empty() || taken.count(addr) || nodes_.count(addr)) {
      nodes_.erase(addr);
      taken.insert(addr);
      continue;
    }
    nodes_[addr] = node_id;
  }
}

const std::string &LinkSenders::node_of(const std::string &peer_address) const {
  static const std::string kNone;
  dt_key addr;
  if (nodes_.empty() || !key_from_string(peer_address, &addr)) return kNone;
  const auto it = nodes_.find(addr);
  return it == nodes_.end() ? kNone : it->second;
}

}  // namespace dt
