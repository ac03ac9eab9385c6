// report_cadence.h - when an agent sends what (docs/cluster-scale.md "Cadence"). Pure
// logic on the caller's clock; the agent's Cluster and the simulator (tools/sim) run it.
//
// Every message is signed (64 bytes) and has a header (about 60 bytes): under many light
// sources over many hosts those, not the entries, were the report traffic (a report to
// each of 39 peers every period saying "alive", and a directed message to each owner every
// period holding two or three entries). So:
//   - A period with nothing to say to everyone (no entries, tags or factors) sends nothing
//     to everyone, unless a peer would otherwise not hear from us for heartbeat_ns: then an
//     empty report (a heartbeat: signed, in our sequence, as before). After a report that
//     had something to say, the next message to everyone comes within tail_ns (a report
//     or a heartbeat; the heartbeat or half the report max age, whichever is shorter): a
//     lost report shows as a gap in our sequence at the latest then, and is asked again
//     while it is fresh.
//   - A message to one owner (directed) says "alive" to that owner as well as a report to
//     everyone would (the receiver counts it as the peer's liveness).
//   - Entries for one owner wait in a batch, unless urgent: 2 hits or more in the period,
//     or a source that already waits there (it is not a one-off). A batch goes when it has
//     an urgent entry, holds max_batch_entries, is batch_wait_ns old (or has had no new
//     entry for batch_quiet_ns), or its owner would otherwise not hear from us in time. A
//     one-hit source thus reaches its owner up to batch_wait_ns late: per host at most one
//     of its hits waits longer than a period.
//   - A new subscriber on our --listen port (a peer (re)connected: it started after our
//     last message to everyone, or a partition healed) gets a heartbeat at the next
//     period's end (force_broadcast): it hears us without waiting for heartbeat_ns.
// A peer that says nothing for 2 heartbeats and a period is down (the default
// --down-after, cluster.h: peer_down_after_ns()); with link liveness (CurveZMQ, full mesh)
// also at once when its link drops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/key_hash.h"
#include "common/report_types.h"

namespace dt {

constexpr uint64_t kHeartbeatPeriods = 5;  // the default heartbeat: every 5 periods (1 s)
constexpr size_t kMaxBatchEntries = 256;   // a directed batch goes when it holds this many
// With link liveness (cluster.h: link_liveness()): a signed heartbeat every 20 s (the
// report sequence, lost reports), and one-hit sources wait for their owner until its batch
// has had no new entry for 1 s, 8 s at most (a spray of light sources: one batch).
constexpr uint64_t kLinkHeartbeatNs = 20'000'000'000ull;
constexpr uint64_t kLinkBatchWaitNs = 8'000'000'000ull;
constexpr uint64_t kLinkBatchQuietNs = 1'000'000'000ull;

struct CadenceOptions {
  uint64_t period_ns = 200'000'000;
  uint64_t heartbeat_ns = kHeartbeatPeriods * 200'000'000ull;  // every peer hears from us this often
  size_t max_batch_entries = kMaxBatchEntries;
  // After a report with something to say, the next message to everyone within this (a
  // lost one then shows as a gap while it can be asked again); 0: heartbeat_ns.
  uint64_t tail_ns = 0;
  // A directed batch goes once its oldest entry is this old; 0: heartbeat_ns.
  uint64_t batch_wait_ns = 0;
  // ... or once its newest entry is this old (no new one-hit source for its owner); 0: no.
  uint64_t batch_quiet_ns = 0;
};

// What to send at the end of a period.
struct PeriodPlan {
  std::vector<std::pair<std::string, std::vector<ReportEntry>>> directed;  // owner id, its batch
  bool broadcast = false;  // a message to everyone: the report, or an empty one (a heartbeat)
  bool heartbeat = false;  // ... and it has nothing to say
};

class ReportCadence {
 public:
  explicit ReportCadence(const CadenceOptions &o = {}) : opt_(o) {}

  // This period's entries for the owner `to` (a node id); they wait in its batch.
  void queue(const std::string &to, const std::vector<ReportEntry> &entries, uint64_t now_ns);
  // The end of a period. `peers`: the node ids that must hear from us (with owners, the
  // members but us; empty: broadcasts reach everyone and are the only messages). `content`:
  // the report to everyone has entries, tags or factors.
  PeriodPlan plan(const std::vector<std::string> &peers, bool content, uint64_t now_ns);
  // A message to everyone sent outside plan() (an owner's relay: `content`).
  void sent_to_everyone(bool content, uint64_t now_ns);
  // The next plan() sends to everyone (a heartbeat if nothing else): a peer (re)connected.
  void force_broadcast() { force_ = true; }
  // Every batch, taken out (the owner scheme paused: they go to everyone).
  std::vector<ReportEntry> take_all();

  size_t waiting() const;                                  // entries in batches
  uint64_t lazy_entries() const { return lazy_entries_; }  // entries that waited a period or more
  const CadenceOptions &options() const { return opt_; }

 private:
  struct Batch {
    std::vector<ReportEntry> entries;
    std::unordered_map<dt_key, size_t, KeyHash, KeyEq> index;  // key -> its entry
    uint64_t since_ns = 0;                                     // the oldest entry's period
    uint64_t last_ns = 0;                                      // the newest entry's period
    bool urgent = false;
  };
  bool heard_lately(const std::string &peer, uint64_t now_ns) const;  // within heartbeat_ns
  bool older_than_heartbeat(uint64_t since_ns, uint64_t now_ns) const;
  bool older_than(uint64_t since_ns, uint64_t span_ns, uint64_t now_ns) const;
  void take_due(bool for_liveness, uint64_t now_ns, PeriodPlan *p);

  CadenceOptions opt_;
  std::map<std::string, Batch> batches_;
  std::map<std::string, uint64_t> last_directed_ns_;  // per owner: our last message to it alone
  bool broadcast_yet_ = false;
  uint64_t last_broadcast_ns_ = 0;
  bool last_had_content_ = false;
  bool force_ = false;
  uint64_t lazy_entries_ = 0;
};

}  // namespace dt
