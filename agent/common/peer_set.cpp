// peer_set.cpp - which peers this host takes something from (peer_set.h).
#include "common/peer_set.h"

#include <algorithm>

#include "common/report_types.h"

namespace dt {

bool PeerSet::allows(const std::string &node_id) const {
  if (who == Who::All) return true;
  if (who == Who::None) return false;
  return std::find(peers.begin(), peers.end(), node_id) != peers.end();
}

std::string PeerSet::text() const {
  if (who != Who::List) return who == Who::All ? "all" : "none";
  std::string s;
  for (const std::string &p : peers) s += (s.empty() ? "" : ",") + p;
  return s;
}

bool parse_peer_set(const std::string &text, PeerSet *out, std::string *err) {
  if (text == "all" || text == "none") {
    *out = PeerSet{text == "all" ? PeerSet::Who::All : PeerSet::Who::None, {}};
    return true;
  }
  PeerSet list{PeerSet::Who::List, {}};
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string id = text.substr(start, comma - start);
    if (!valid_node_id(id))
      return *err =
                 "'" + text + "' is not all, none or a list of node ids (NODE[,NODE...]; '" + id + "' is no node id)",
             false;
    list.peers.push_back(id);
    start = comma + 1;
  }
  *out = std::move(list);
  return true;
}

std::string describe_peer_set_change(const std::string &flag, const PeerSet &prev, const PeerSet &next) {
  if (prev.text() == next.text()) return "";
  return flag + ": " + next.text() + " (was " + prev.text() + ")";
}

}  // namespace dt
