// link_senders.cpp - which member a message on our SUB socket comes from (see link_senders.h).
#include "cluster/link_senders.h"

#include <set>

#include "common/address.h"
#include "common/endpoint.h"

namespace dt {
namespace {

// The address as key_to_string writes it ("" unless `text` is a literal IPv4 or IPv6
// address): an IPv4 address and its IPv4-mapped IPv6 form are one.
std::string canonical(const std::string &text) {
  dt_key k{};
  return key_from_string(text, &k) ? key_to_string(k) : std::string();
}

}  // namespace

void LinkSenders::configure(const std::vector<std::pair<std::string, std::string>> &links) {
  nodes_.clear();
  std::set<std::string> taken;  // addresses of more than one connection, or of a hub's
  for (const auto &[endpoint, node_id] : links) {
    HostPort hp;
    std::string addr;
    if (!parse_host_port(endpoint, {.tcp_scheme = true}, &hp) || (addr = canonical(hp.host)).empty())
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
  const auto it = nodes_.find(canonical(peer_address));
  return it == nodes_.end() ? kNone : it->second;
}

}  // namespace dt
