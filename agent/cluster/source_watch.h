// source_watch.h - which peers report one source, watched on request (`agent explain`).
//
// Nothing is recorded until someone asks: explain names an address, the daemon starts a
// watch for a window (a second or so), and every peer report that arrives meanwhile is
// scanned for that address (any rule, any key prefix the sender's rule cut it to). Costs
// nothing while no watch runs (one test per report), and memory is bounded by the number
// of (peer, rule) pairs that reported the address in the window, whatever the flood.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cluster_core/peer_protocol.h"

namespace dt {

class SourceWatch {
 public:
  struct Sighting {
    std::string node;   // the peer's node id
    std::string rule;   // the rule name in the peer's report
    uint64_t hits = 0;  // summed over the window
    uint64_t reports = 0;
  };

  // Watches the 16-byte (IPv4-mapped) address until `until_ns`; replaces a running watch.
  void start(const uint8_t addr[16], uint64_t until_ns);
  bool active() const { return active_; }
  // Adds the entries of one peer's report that carry the watched address.
  void observe(const std::string &node, const ReportBody &body);
  // True once the window is over (and a watch ran).
  bool done(uint64_t now_ns) const { return active_ && now_ns >= until_ns_; }
  // Ends the watch and returns what it saw, by peer then rule.
  std::vector<Sighting> take();

 private:
  bool active_ = false;
  uint8_t addr_[16] = {};
  uint64_t until_ns_ = 0;
  std::map<std::pair<std::string, std::string>, std::pair<uint64_t, uint64_t>> seen_;  // -> hits, reports
};

}  // namespace dt
