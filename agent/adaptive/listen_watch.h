// listen_watch.h - the built-in kernel-side busy signal for adaptive limits: are the
// TCP listeners on some local ports overloaded? Needs no change to the application.
//
// Each poll() dumps the TCP listeners with NETLINK_SOCK_DIAG (IPv4 and IPv6). For a
// listening socket the kernel reports the accept queue length (sk_ack_backlog) as
// idiag_rqueue and the listen() backlog (sk_max_ack_backlog) as idiag_wqueue. The
// kernel turns new connections away once sk_ack_backlog > sk_max_ack_backlog, so the
// queue really holds backlog + 1; a listener is called full here as soon as its queue
// is non-empty and reaches the backlog (queued >= backlog): one more connection fits,
// the one after that is refused (counted in TcpExtListenOverflows).
//
// It also reads TcpExtListenOverflows and TcpExtListenDrops from netstat. These count
// for the whole network namespace, not per port: a poll's increase is attributed to
// every watched port that had a non-empty accept queue at that poll. That is a
// heuristic: another port's overflow is blamed on any port that merely had a backlog,
// and ports with an empty queue are never blamed.
//
// Limits:
//   - sampled once per poll (the 200 ms report period): a queue that fills and drains
//     between two polls is missed unless the overflow counter moved;
//   - only TCP listeners, IPv4 and IPv6, in one network namespace: the one of the
//     thread that constructs the watch (the netlink socket and the netstat file are
//     opened then; /proc/thread-self, since /proc/net follows the main thread; after
//     a failure poll() reopens them in the polling thread's namespace);
//   - only the accept queue, not the SYN queue (half-open connections): with SYN
//     cookies on (the default) a SYN-queue overflow is not even counted as a drop.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/no_copy.h"

namespace dt {

// The namespace-wide listener counters of /proc/net/netstat.
struct ListenCounters {
  uint64_t overflows = 0;  // TcpExtListenOverflows: accept queue full
  uint64_t drops = 0;      // TcpExtListenDrops: every overflow, plus other drops at
                           // listeners (SYN queue full without cookies, bad cookies,
                           // ICMP aborts, no memory)
};

// Parses the text of /proc/net/netstat (pairs of "TcpExt: <names>" / "TcpExt: <values>"
// lines). False with a sentence in *err if the TcpExt counters are missing or malformed.
bool parse_listen_counters(std::string_view netstat, ListenCounters *out, std::string *err);

class ListenQueueWatch : NoCopy {
 public:
  explicit ListenQueueWatch(std::vector<uint16_t> ports);
  ~ListenQueueWatch();

  struct PortState {
    uint16_t port = 0;
    uint32_t listeners = 0;  // listening sockets on the port (both families, reuseport)
    // The fullest listener's accept queue length and backlog: a full one if any,
    // else the one with the longest queue.
    uint32_t queued = 0;
    uint32_t backlog = 0;
    bool full = false;  // some listener has queued >= backlog (queue non-empty)
    // Increase of ListenOverflows / ListenDrops since the previous successful poll, if
    // this port had a non-empty queue now (else 0); 0 at the first poll. Heuristic:
    // the counters are per namespace. busy() uses only overflows (drops is noisier).
    uint64_t overflows = 0;
    uint64_t drops = 0;
    bool busy() const { return full || (overflows > 0 && queued > 0); }
  };

  // Reads the listeners now: one PortState per port given, in that order. False with
  // a sentence in *err on a netlink or netstat failure (then *out is not touched and
  // the next poll's counter increase spans both periods).
  bool poll(std::vector<PortState> *out, std::string *err);

 private:
  bool open_files(std::string *err);
  void close_files();
  bool dump_family(int family, std::vector<PortState> *states, std::string *err);
  bool read_counters(ListenCounters *out, std::string *err);

  std::vector<uint16_t> ports_;
  int nl_fd_ = -1;
  int netstat_fd_ = -1;
  uint32_t seq_ = 0;
  bool have_counters_ = false;
  ListenCounters last_{};
  std::vector<char> buf_;
};

}  // namespace dt
