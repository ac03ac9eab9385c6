// send.h - `pktgen send`: spoofed-source UDP frames (or TCP SYNs) over an AF_PACKET socket on a veth
// interface, paced, bounded by a count and a duration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pktgen/addr.h"
#include "pktgen/run.h"

namespace dt::pktgen {

struct SendOptions {
  std::string iface;
  std::vector<Addr> dsts, sources;
  Mac dst_mac{}, src_mac{};
  bool have_dst_mac = false, have_src_mac = false, json = false;
  bool random = false;   // --src-random
  bool tcp_syn = false;  // --tcp-syn: TCP SYNs with an MSS option, a new sequence number each
  // --steady: frames that fell due while the sender was late are skipped, not sent at once,
  // so that no window of time sees more than PPS (each source more than its share).
  bool steady = false;
  double rate = 0;
  uint64_t duration_ns = 0;
  uint64_t count = 0;
  uint16_t dport = kDefaultPort;
  uint16_t sport = 0;  // 0: 40000 + the source's index (one flow per source)
  uint64_t size = 0;   // frame length; 0: the shortest
  // --start-at: the first frame at this CLOCK_REALTIME time (ns since the epoch; 0: at
  // once), so that senders started one after the other begin together.
  uint64_t start_at_unix_ns = 0;
};

// Sends as `o` says (its values already checked) and prints the frames sent per source.
// Returns the exit code.
int run_send(SendOptions o);

}  // namespace dt::pktgen
