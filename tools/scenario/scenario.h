// scenario.h - what the cluster simulator (tools/sim) runs: hosts, clients, the network, the
// reporting scheme and busy signals (a Scenario), its checks, and the reference scenarios.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adaptive/adaptive.h"
#include "dthrottle/common.h"

namespace dt::sim {

using Ns = uint64_t;
constexpr Ns kMs = 1'000'000ull;
constexpr Ns kSec = 1'000'000'000ull;
constexpr Ns kNever = UINT64_MAX;
constexpr uint64_t kWallEpochMs = 1'700'000'000'000ull;  // the simulated wall clock at t = 0

// splitmix64: tiny, and the same sequence on every platform (the simulator's seeds).
uint64_t splitmix64(uint64_t *s);

// An enum's values and their names, one table for both directions (--lb, --scheme, --pattern).
template <class E, size_t N>
const char *name_in(const std::pair<E, const char *> (&table)[N], E value) {
  for (const auto &[v, name] : table)
    if (v == value) return name;
  return "?";
}
template <class E, size_t N>
bool parse_in(const std::pair<E, const char *> (&table)[N], const std::string &s, E *out) {
  for (const auto &[v, name] : table)
    if (s == name) return *out = v, true;
  return false;
}

enum class LoadBalancer { RoundRobin, Random, Sticky };
const char *lb_name(LoadBalancer lb);
// "round-robin", "random" or "sticky".
bool parse_lb(const std::string &s, LoadBalancer *out);

// `count` requests at the same instant, handled in order.
struct Burst {
  Ns at = 0;
  uint32_t count = 0;
  int host = -1;  // -1: the load balancer picks each request's host; else this host
};

struct Client {
  std::string name;
  double rate = 0;  // offered requests per second, evenly spaced from start; 0: none
  Ns start = 0;
  Ns stop = 0;  // requests in [start, stop); 0: until the end of the scenario
  std::vector<Burst> bursts;
};

// While active, messages between hosts on different sides are queued (up to
// Network::queue_hwm per link, then dropped) and delivered when it ends.
struct Partition {
  Ns start = 0, end = 0;  // [start, end)
  std::vector<int> side;  // side[h] for every host
};

struct Network {
  double loss = 0;       // probability that one message to one receiver is lost
  double duplicate = 0;  // probability that it is delivered a second time
  Ns delay = kMs;        // one-way delay: delay + uniform [0, jitter]
  Ns jitter = 0;
  std::vector<Partition> partitions;
  // Messages a cut link holds, per sender and receiver (ZeroMQ's SNDHWM); 0: a cut
  // link drops every message (no TCP), as the simulator once did.
  uint64_t queue_hwm = 1000;
};

// Busy signals to one host, `per_second` of them evenly spaced in [start, end)
// (the first at start), each dropped if the host admitted nothing since its last.
struct BusyWindow {
  Ns start = 0, end = 0;
  double per_second = 0;
  int host = 0;
};

enum class Scheme { Mesh, Owner, Hub };
const char *scheme_name(Scheme s);
// "mesh", "owner" or "hub".
bool parse_scheme(const std::string &s, Scheme *out);
constexpr Ns kSimLinkTimeout = 2 * kSec;  // Scenario::link_liveness: a cut link is down after this

struct Scenario {
  size_t hosts = 3;
  double rate = 100;  // policy: tokens per second
  uint64_t burst = 50;
  Ns period = 200 * kMs;
  Ns duration = 10 * kSec;
  std::vector<Ns> report_offset;  // per host, each < period; empty: all 0 (or random_phase)
  bool random_phase = false;      // without report_offset: a seeded random offset per host
  Scheme scheme = Scheme::Mesh;
  Ns peer_down_after = 0;  // PeerTracker threshold; 0: 5 periods (11 with cadence, as the agent)
  // The agent's cadence (cluster_core/report_cadence.h): quiet periods send nothing to everyone
  // but a heartbeat every 5 periods, one-hit sources wait for their owner in batches. false:
  // a report to everyone every period, directed messages every period (before).
  bool cadence = false;
  // With cadence: the agent's liveness from the link (agent/cluster/cluster.h link_liveness:
  // keys in a full mesh, its default): a signed heartbeat every 20 s, one-hit sources wait
  // for their owner until its batch is quiet for 1 s (8 s at most), a host cut from a peer
  // for kSimLinkTimeout has it down (the ZMTP timeout), and a cut that heals gets a
  // heartbeat to everyone (a new subscriber).
  // Not with Scheme::Hub (the hub's agents keep the heartbeat a second). false: signed
  // heartbeats every 5 periods, one-hit sources wait a heartbeat (--liveness signed).
  bool link_liveness = false;
  // Scheme::Owner: at the early ticks, at most every shared_period, the hits of the sources
  // a host knows to be shared and near their limit go to every peer (a shorter lag where it
  // matters, docs/cluster-scale.md "Why the ratio moves with the seed"; the node's
  // NodeOptions::shared_early_ns); 0: off. build/simulate's default for the owner scheme is
  // the agent's, shared_early_pace.
  Ns shared_period = 0;
  Ns hub_period = 50 * kMs;  // Scheme::Hub: how often a hub sends its sums (`agent hub --period`)
  Ns hub_fails_at = kNever;  // Scheme::Hub: the hub the hosts take first stops (hears and sends nothing) then
  LoadBalancer lb = LoadBalancer::RoundRobin;
  std::vector<Client> clients;
  Network net;
  uint64_t seed = 1;
  Ns bin = kSec;        // resolution of the admitted-per-time timeline
  bool reports = true;  // false: local-only, every host on its own
  // Reports older than this (PeerTracker's age) are not charged; 0: 10 periods, as the
  // agent's default; kNever: every report is charged whatever its age.
  Ns report_max_age = 0;
  bool debt_cap = true;  // debits stop at -DT_DEBT_MAX_BURSTS x burst (dt_gcra_debit)
  bool resend = true;    // receivers ask for missing messages, senders send them again
  // Early reports (cluster_core/early_report.h, sim/sim_early.cpp): every `early_report` within
  // a period, a host reports the sources first admitted since its last tick that are new
  // to it; 0: off (sources wait for the period's report).
  Ns early_report = 0;
  // A host joining a running cluster (docs/cluster-scale.md "A node joining a running
  // cluster"): join_host is down until join_at (no requests, messages to it lost, no reports);
  // with the owner scheme the others route as a mesh until they hear it, it until it has
  // heard every peer (as the agent's owner_ready).
  // join_empty: for the report max age after it joins, a source it first hears of from a
  // peer starts empty there (debited a burst more, once), not full.
  int join_host = -1;
  Ns join_at = 0;
  bool join_empty = false;
  uint64_t early_min_hits = 2;  // EarlyReportOptions::min_hits
  // Per host: its wall clock minus the true time, in ms (the receivers learn offsets).
  std::vector<int64_t> clock_skew_ms;
  // The cluster before stale reports: every report charged, no debt cap, no resends.
  Scenario &legacy() {
    report_max_age = kNever;
    debt_cap = false;
    resend = false;
    return *this;
  }
  // Adaptive limits (see the top of this file). The timeline bin must divide the
  // duration: adaptive_timeline() has one row per bin.
  bool adaptive = false;
  AdaptiveParams adaptive_params;
  std::vector<BusyWindow> busy;
};

// False with a sentence in *err if the scenario cannot be simulated.
bool validate(const Scenario &s, std::string *err);

// The reference daemon's A/B example (dthrottle-daemon.txt) on the simulator's
// continuous clock; the times are explained in scenario.cpp.
Scenario reference_ab_scenario();

// The busy-response reference's traffic patterns (busy-response-throttling.txt):
// one client offers 5000/s for 30 s; busy signals come at up to 3000/s, to host 0
// only, in the busy phase [0, 10 s): steady = all the time, flappy = every third
// second ([2,3), [5,6), [8,9) s, the reference's time=3, 6, 9). The reference then
// gives the traffic 20 s to recover. The rule: rate 10000/s (far above the traffic,
// as the reference's limit starts), burst 5000, reports every 200 ms, round-robin.
constexpr Ns kReferenceBusyPhase = 10 * kSec;
enum class BusyPattern { Steady, Flappy };
const char *busy_pattern_name(BusyPattern p);
// "steady" or "flappy".
bool parse_busy_pattern(const std::string &s, BusyPattern *out);
Scenario busy_reference_scenario(BusyPattern p, const AdaptiveParams &params, size_t hosts = 1);

// When the last busy window ends (0 if there is none).
Ns busy_end(const Scenario &s);

// One bin of an adaptive scenario, summed over all hosts and clients.
struct AdaptiveRow {
  Ns start = 0, end = 0;  // [start, end)
  uint64_t offered = 0, admitted = 0, throttled = 0;
  uint64_t busy = 0;          // busy signals the hosts got
  std::vector<double> limit;  // per host, at `end`: rate x its applied factor
};

// The end of the first bin starting at or after `busy_end` from which no bin
// throttles anything any more, up to the last; nullopt if the last bin throttles
// (or no bin starts after busy_end). As the reference counts: "converged at time=17"
// for busy signals that stop at 10 means 7 s (speed 7).
std::optional<Ns> converged_at(const std::vector<AdaptiveRow> &rows, Ns busy_end);

// The bucket key of client i: ::ffff:198.18.0.0 + i (at most 2^17 clients).
dt_key client_key(size_t i);

// When a client's traffic stops: its own stop, or the scenario's end.
Ns client_stop(const Scenario &s, const Client &c);

// One request of a client: at a time, to a host (-1: the load balancer picks it when it comes).
struct Request {
  Ns at;
  uint32_t client;
  int host;
};
// Every request of the scenario in time order (ties: client order, then bursts as given).
std::vector<Request> requests_of(const Scenario &s);

// A client's requests as one global bucket (a central limiter that sees every request, with
// the scenario's policy) takes them: the reference a cluster's accuracy is measured against.
struct CentralView {
  uint64_t offered = 0;
  Ns first = 0, last = 0;  // times of its first and last request
  uint64_t budget = 0;     // over its active span: burst + rate x (last - first), whole tokens
  uint64_t ideal = 0;      // what the one bucket admits: at most min(offered, budget)
};
// Per client of s, for requests_of(s) and p, the scenario's policy (make_policy).
std::vector<CentralView> central_views(const Scenario &s, const dt_policy &p, const std::vector<Request> &requests);

// One busy signal of a BusyWindow, to its host.
struct BusySignal {
  Ns at;
  int host;
};
// Every busy signal of the scenario in time order.
std::vector<BusySignal> busy_signals_of(const Scenario &s);

}  // namespace dt::sim
