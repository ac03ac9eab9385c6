// cluster_sim.h - a deterministic simulator of a dthrottle cluster (what it runs:
// scenario/scenario.h). N hosts each run a node of the agent's cluster core
// (cluster_core/cluster_node.h) and the BPF programs' bucket arithmetic on an injected clock
// (integer ns from 0), with in-memory buckets for the BPF maps:
//   admit    dt_gcra_admit on the host's bucket for the client, passed++ (dt_xdp)
//   report   at each period's end (k*period + offset): dt_collect (hits = passed - reported),
//            then the node's sender to the network
//   receive  the node's tracker and receiver (resends, relays); its debits as dt_gcra_debit
//            (a bucket the host never saw is created full, then debited)
// The network (sim_network.cpp) loses, duplicates and delays messages with a seeded RNG and
// holds those of a cut link, as TCP does, up to ZeroMQ's high-water mark until it heals; in
// an ideal one (no loss, duplicates, jitter or partitions) a message is decoded once and fanned
// out in one event. Hubs: sim_hub.cpp. Adaptive scenarios run the agent's AdaptiveSet on each
// host, fed by its node as in the agent; a busy signal lowers the host's policy at once and
// answers an admitted request only (one since the host's previous signal, cluster-wide).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "adaptive/adaptive.h"
#include "cluster_core/cluster_node.h"
#include "cluster_core/cluster_times.h"
#include "cluster_core/inbound.h"
#include "cluster_core/shared_early.h"
#include "common/key_hash.h"
#include "dthrottle/common.h"
#include "hub/hub_core.h"
#include "scenario/scenario.h"

namespace dt::sim {

// Per client: what it offered and one global bucket would admit (CentralView), what the hosts did.
struct ClientStats : CentralView {
  std::string name;
  uint64_t refused = 0;
  std::vector<uint64_t> admitted_by_host;
  uint64_t admitted() const { return std::accumulate(admitted_by_host.begin(), admitted_by_host.end(), uint64_t{0}); }
};

// Report traffic (every message: reports, directed, relays, resend requests, resends,
// aggregates); a node's in or out per period of the scenario: the total, the busiest period.
struct Traffic {
  uint64_t entries = 0, bytes = 0, messages = 0;
  Traffic &operator+=(const Traffic &o);
};
struct HostTraffic {
  Traffic total, max;
  uint64_t periods = 0;
};

// Per host. Sending side: copies are counted per receiver.
struct HostStats {
  uint64_t admitted = 0, refused = 0;
  uint64_t directed = 0;                           // Scheme::Owner: messages sent to one owner
  uint64_t relayed = 0;                            // ... entries this host relayed as an owner
  uint64_t early_messages = 0, early_entries = 0;  // early reports (copies: per destination)
  uint64_t reports = 0, hits_reported = 0;         // report periods, and their hits
  uint64_t messages_sent = 0, duplicated = 0;      // copies handed to the network, extra ones delivered
  uint64_t lost = 0, cut = 0, queued = 0;          // by random loss; by a partition (queue full); held until it healed
  uint64_t resends = 0, resend_bytes = 0;          // messages sent again on a peer's request, and their bytes
  uint64_t request_bytes = 0, report_bytes = 0;    // resend requests' and reports' bytes
  // Receiving side. rejected: the tracker said Duplicate or Rejected (not applied); recovered:
  // accepted messages that filled a gap; stale: accepted but too old to charge.
  uint64_t received = 0, decode_errors = 0, accepted = 0, rejected = 0, recovered = 0;
  uint64_t stale = 0, stale_hits = 0, hits_debited = 0;
  uint64_t peer_ups = 0, peer_downs = 0;  // liveness transitions seen
  // Adaptive: busy signals received (passed to the controller), the first one, the first
  // time the applied factor fell below 1.
  uint64_t busy = 0;
  Ns first_busy = kNever, first_backoff = kNever;
};

class ClusterSim {
 public:
  // nullptr with a sentence in *err if validate() fails.
  static std::unique_ptr<ClusterSim> create(const Scenario &s, std::string *err);

  // Process every event at a time <= t (advance_past) or < t (advance_to: the events
  // at t are still pending); the clock then reads t. Never goes back in time.
  void advance_past(Ns t) { advance(t, true); }
  void advance_to(Ns t) { advance(t, false); }
  void run() { advance_past(s_.duration); }

  Ns now() const { return now_; }
  const Scenario &scenario() const { return s_; }
  const dt_policy &policy() const { return policy_; }
  const std::vector<ClientStats> &clients() const { return clients_; }
  const std::vector<HostStats> &hosts() const { return host_stats_; }
  // Host h's report traffic received (in) or sent (out): each copy a receiver gets.
  HostTraffic traffic(size_t h, bool in) const;
  const PeerTracker &tracker(size_t host) const { return hosts_[host].node->tracker(); }
  // Scheme::Hub: the summing hubs (2; none otherwise), their traffic as traffic()'s, and
  // host h's aggregate intake counters (which hub it takes, failovers, own hits subtracted).
  size_t hub_count() const { return hubs_.size(); }
  HostTraffic hub_traffic(size_t j, bool in) const;
  AggregateCounters aggregate_counters(size_t h) const;

  // The client's balance on a host now, in thousandths of a token (full if unseen).
  int64_t tokens_milli(size_t host, size_t client) const;
  // Admitted in [from, to), both multiples of the scenario's bin; host -1: all hosts.
  uint64_t admitted_between(size_t client, Ns from, Ns to, int host = -1) const;

  // Adaptive scenarios only (empty / 1.0 otherwise). One row per finished bin.
  std::vector<AdaptiveRow> adaptive_timeline() const;
  // The factor host h enforces now: min(own, live peers').
  double applied_factor(size_t host) const;

 private:
  struct Bucket {
    uint64_t tat = 0, passed = 0, reported = 0;
    uint64_t announced = 0;  // 1 + the host's period in which it was last announced (0: never)
  };
  struct Host {
    std::string node_id;
    // The agent's cluster core: tracker, planner, outbox, receiver, early reports, join guard.
    std::unique_ptr<ClusterNode> node;
    // Owner readiness (report_planner.h) in an ideal network, where the tracker is not run:
    // which peers it has heard (they stay up: every host is heard on time there).
    std::vector<char> heard;
    size_t heard_count = 0, ready_count = SIZE_MAX;
    bool owners = false;
    std::vector<dt_key> announced;  // first admitted in this period since the last tick
    uint64_t boot_id = 0, epoch = 0;
    Ns next_report = 0;
    std::unordered_map<dt_key, Bucket, KeyHash, KeyEq> buckets;
    dt_policy policy{};  // the scenario's, or its adaptive reduction
    // Adaptive: the agent's own AdaptiveSet, with the one rule.
    std::unique_ptr<AdaptiveSet> adaptive;
    double applied = 1.0;  // the factor the host's policy is built with
    Ns last_period = 0;
    uint64_t admitted_at_busy = 0;  // the cluster's admitted total at the last busy signal
  };
  // A summing hub (Scheme::Hub): the hub's core (hub/hub_core.h), its period and its traffic.
  struct Hub {
    HubCore core;
    Ns next_period = 0;
  };
  // A node's (a host's, then a hub's) report traffic per period: each copy it gets or sends.
  struct TrafficLog {
    std::vector<Traffic> in, out;
  };
  // Per host and bin, for adaptive_timeline().
  struct AdaptiveBin {
    uint64_t offered = 0, admitted = 0, refused = 0, busy = 0;
    double factor = 1.0;  // applied at the end of the bin
  };
  // One message on the wire, decoded once (as each receiver would decode it).
  struct Message {
    std::shared_ptr<const std::string> bytes;
    size_t from = 0;
    DecodeError decoded = DecodeError::None;
    ReportHeader hdr;
    ReportBody body;
    bool directed = false;  // to one owner only (bytes: in its envelope, wrap_directed)
    // The agent signs every message (64 bytes the simulator does not compute).
    size_t wire_bytes() const { return bytes->size() + kSignatureBytes; }
    size_t entries() const;                     // a report's entries, or a relay's
    std::optional<AggregateMessage> aggregate;  // a summing hub's (from: hosts + hub index; body: its sums)
  };
  using MessagePtr = std::shared_ptr<const Message>;
  static constexpr size_t kEveryPeer = SIZE_MAX;
  static constexpr size_t kHubs = 2;  // Scheme::Hub: a pair, no single point of failure
  struct Delivery {
    Ns at;
    uint64_t order;  // ties: in the order the network accepted them
    size_t to;       // kEveryPeer: every host but the sender (an ideal network's fan-out)
    MessagePtr msg;
    bool operator>(const Delivery &o) const { return at != o.at ? at > o.at : order > o.order; }
  };
  struct Rng {  // splitmix64's: the same sequence on every platform
    uint64_t s;
    double uniform() { return static_cast<double>(splitmix64(&s) >> 11) * 0x1.0p-53; }  // [0, 1)
  };

  ClusterSim(const Scenario &s, const dt_policy &p);
  NodeSettings settings(size_t h) const;
  void init_adaptive(size_t h);
  void build_requests();
  void advance(Ns t, bool inclusive);
  void handle_request(const Request &r);
  void handle_report(size_t h);
  void handle_delivery(const Delivery &d);
  void receive(size_t to, const Message &m);
  Arrival arrive(size_t to, const Message &m);
  void publish(size_t h, const std::vector<Outgoing> &out);
  MessagePtr make_message(size_t from, std::shared_ptr<const std::string> bytes);
  void broadcast(size_t from, const MessagePtr &msg);
  Ns report_offset(size_t h, uint64_t *seed) const;
  static std::vector<ReportEntry> sorted(std::vector<ReportEntry> entries);
  void end_period(size_t h);
  bool owner_ready(size_t h);
  void charge(size_t to, const std::vector<dt_debit> &debits);
  // Scheme::Hub (sim_hub.cpp).
  void init_hubs(uint64_t *phase_seed);
  bool hub_alive(size_t j) const;
  void hub_receive(size_t j, const Message &m);
  void hub_period(size_t j);
  void apply_aggregate(size_t to, const Message &m);
  Ns next_event_of(size_t reporter) const;  // a host's next report, a hub's period
  // Early reports (sim_early.cpp).
  void announce(size_t h, Bucket &b, const dt_key &k);
  void schedule_early(size_t h);
  void handle_early(size_t h);
  // A joining host (Scenario::join_host) and owner readiness in an ideal network.
  bool up(size_t h) const { return static_cast<int>(h) != s_.join_host || now_ >= s_.join_at; }
  bool heard_from(size_t to, size_t from);  // true: first heard (ideal network)
  size_t skip_down(size_t idx, size_t n_up) const;
  void count(size_t node, bool in, const Message &m, uint64_t copies = 1);
  HostTraffic summary(const std::vector<Traffic> &periods) const;
  size_t period_of(Ns t) const;
  void handle_busy(const BusySignal &b);
  void adaptive_period(size_t h);
  void apply_factor(size_t h, double f);
  void sample_bins_until(Ns t);
  void send(size_t from, size_t to, const MessagePtr &msg);
  // The end of the partition that cuts a from b at t (the latest, if several); 0: none.
  Ns cut_until(size_t a, size_t b, Ns t) const;
  Ns cut_since(size_t a, size_t b, Ns t) const;  // the start of a cut in force at t (kNever: none)
  void link_liveness(size_t h);                  // Scenario::link_liveness, at the end of h's period
  size_t pick_host(uint32_t client);
  size_t bin_of(Ns t) const;
  uint64_t wall_ms(size_t h) const;  // host h's wall clock now (sent_unix_ms)

  Scenario s_;
  dt_policy policy_;
  LocalRules rules_;  // every host's: the one rule, "default" (cluster_core/rule_groups.h)
  Ns now_ = 0;
  std::vector<Host> hosts_;
  std::vector<HostStats> host_stats_;
  std::vector<TrafficLog> traffic_;  // hosts, then hubs
  std::vector<ClientStats> clients_;
  std::vector<Request> requests_;  // sorted by time
  size_t next_request_ = 0;
  std::priority_queue<Delivery, std::vector<Delivery>, std::greater<Delivery>> in_flight_;
  uint64_t delivery_order_ = 0;
  std::map<std::tuple<size_t, size_t, Ns>, uint64_t> held_;  // (from, to, heal time) -> messages queued
  uint64_t round_robin_ = 0;
  bool ideal_ = false;  // no loss, duplicates, jitter or partitions: fan-out, no tracker
  // Host reports and hub periods (index hosts + j), earliest first.
  std::priority_queue<std::pair<Ns, size_t>, std::vector<std::pair<Ns, size_t>>, std::greater<>> reports_;
  std::vector<Hub> hubs_;
  size_t failing_hub_ = 0;  // Scenario::hub_fails_at: the hub every host takes first
  std::priority_queue<std::pair<Ns, size_t>, std::vector<std::pair<Ns, size_t>>, std::greater<>> early_;  // ticks
  Rng lb_rng_, net_rng_;  // separate streams: loss settings do not change LB choices
  std::vector<std::vector<std::vector<uint64_t>>> timeline_;  // [client][host][bin]
  std::vector<BusySignal> busy_;                              // sorted by time
  size_t next_busy_ = 0;
  std::vector<std::vector<AdaptiveBin>> bins_;  // [host][bin], adaptive only
  size_t bins_sampled_ = 0;                     // bins whose end factor is recorded
};

}  // namespace dt::sim
