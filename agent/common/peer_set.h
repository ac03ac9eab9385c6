// peer_set.h - which peers this host takes something from (--peer-bans, --peer-verified):
// all of them, none, or the node ids listed.
#pragma once

#include <string>
#include <vector>

namespace dt {

struct PeerSet {
  enum class Who { All, None, List } who = Who::All;
  std::vector<std::string> peers;  // Who::List: node ids
  bool allows(const std::string &node_id) const;
  std::string text() const;  // "all", "none" or "NODE,NODE"
};

// "all", "none", or "NODE[,NODE...]" (valid node ids). False with *err, *out unchanged.
bool parse_peer_set(const std::string &text, PeerSet *out, std::string *err);

// "--peer-verified: h1,h2 (was all)" for `flag` going from `prev` to `next`; "" when unchanged.
std::string describe_peer_set_change(const std::string &flag, const PeerSet &prev, const PeerSet &next);

}  // namespace dt
