// peer_tracker.h - what this agent knows about each peer: which reports it already
// applied (so a report is applied once), what it lost, and whether the peer is alive.
//
// A peer is identified by its node id. Its messages carry (boot_id, seq): seq counts
// messages from 1 within one run of the peer's agent (boot). Rules:
//   seq == last + 1           accepted
//   seq >  last + 1           accepted; the missing ones are counted as a gap
//   seq <= last               rejected: duplicate or replay (never applied twice)
//   new boot_id               the peer restarted: accepted if the message is not older
//                             than the last one accepted (sent_unix_ms), tracking restarts
// Liveness: a peer not heard from for `down_after_ns` is down; it comes back up with
// its next accepted message. Transitions are returned so the caller can log them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster/peer_protocol.h"

namespace dt {

struct PeerState {
  uint64_t boot_id = 0;
  uint64_t last_seq = 0;
  uint64_t last_sent_unix_ms = 0;
  uint64_t last_heard_ns = 0;  // monotonic
  bool up = false;
  uint64_t accepted = 0;
  uint64_t duplicates = 0;     // seq <= last within a boot, or a stale boot
  uint64_t lost = 0;           // messages missing in sequence gaps
  uint64_t restarts = 0;
};

enum class Verdict { Accept, Duplicate };

struct LivenessChange {
  std::string node_id;
  bool up;
  uint64_t silent_ns;  // for a down transition: how long it has been silent
};

class PeerTracker {
 public:
  explicit PeerTracker(uint64_t down_after_ns) : down_after_ns_(down_after_ns) {}

  // Decides about one decoded message received at monotonic time now_ns and records
  // it. `came_up` is set when this message brought the peer (back) up.
  Verdict on_message(const ReportHeader &h, uint64_t now_ns, bool *came_up);

  // Marks peers silent for longer than down_after_ns as down; returns the changes.
  std::vector<LivenessChange> check_liveness(uint64_t now_ns);

  const std::map<std::string, PeerState> &peers() const { return peers_; }
  size_t up_count() const;
  // A peer removed from the cluster (agent reload): no longer listed, up or down.
  void forget(const std::string &node_id) { peers_.erase(node_id); }

 private:
  uint64_t down_after_ns_;
  std::map<std::string, PeerState> peers_;
};

}  // namespace dt
