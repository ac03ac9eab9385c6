// adaptive.h - adaptive limits: back off when a protected service says it is busy,
// recover multiplicatively when it stops.
//
// The design of TChannel's busy responses: an exponential cut while busy, a multiplicative
// recovery after, so the rate neither flaps while the service struggles nor lingers low
// once it is healthy.
//
// An adaptive rule's effective rate is its configured rate times a factor in [floor, 1]:
//   busy signal   the limit becomes `decrease` times the rate the rule actually admitted
//                 in the last second (not `decrease` times the old limit: a limit far above
//                 the traffic would otherwise take many signals to bite). At most one
//                 decrease per second (`hold`): a service that answers busy to every
//                 request sends thousands of signals a second, and the rate admitted after
//                 a decrease needs a second to be measured. Signals inside the hold only
//                 postpone recovery. Before anything is measured (just started), one
//                 signal halves the limit itself, without starting the hold.
//   each second   without a busy signal, the factor is multiplied by `recovery` (applied
//                 smoothly, period by period: recovery^(elapsed seconds)), up to 1. The
//                 longer a service stayed busy, the lower the factor and so the longer the
//                 way back, yet the way back is exponential: x3 per second gets from 1% to
//                 100% in about 4.2 s, where a constant +step per second needs a time
//                 proportional to the rate.
// Rules are per key (a source's bucket, a tag's bucket), so "the rate admitted" is the
// busiest key's: the highest admitted hits of one key in each report period, summed
// over this host and its peers (a client sprayed over N hosts is one key), averaged
// over the last second. The observation is capped at the current limit (a burst may
// briefly exceed it).
//
// Cluster-wide: each host's own (local) factor goes out in its reports; every host
// applies min(local, the lowest factor heard from each peer in the last `peer_hold`,
// never below its own floor), so one busy backend makes the whole edge back off. A rule with cluster = false
// neither sends nor applies peers' factors.
//
// Threads: AdaptiveSet::busy() may be called from any thread (the query thread);
// everything else from the agent's main thread. One mutex guards the lot.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/key_hash.h"
#include "common/log.h"
#include "common/report_types.h"
#include "dthrottle/common.h"

namespace dt {

struct AdaptiveParams {
  double decrease = 0.5;                // on busy: limit = decrease x admitted rate, in (0, 1)
  double recovery = 3.0;                // per busy-free second: factor x recovery, > 1
  double recovery_add = 0;              // > 0: constant recovery instead, +this many per second
                                        // (rate units; for comparison in the simulator)
  double floor = 0.01;                  // lowest factor, in (0, 1]
  bool cluster = true;                  // send our factor to peers and apply theirs
  uint64_t hold_ns = 1'000'000'000ull;  // one decrease per hold; busy-free time before recovery
};

// A rule's `adaptive` setting in the rules file (see rules.h).
struct AdaptiveConfig {
  bool enabled = false;
  AdaptiveParams params;
  uint16_t listen_port = 0;  // built-in busy signal: this TCP port's accept queue (0: none)
};

// Checks ranges; false with a sentence in *err.
bool validate_adaptive_params(const AdaptiveParams &p, std::string *err);

// One rule's own controller, on an injected clock.
class AdaptiveLimit {
 public:
  AdaptiveLimit(double rate, const AdaptiveParams &p) : rate_(rate), p_(p) {}

  // The busiest key had `hits` admitted in the `span_ns` ending at now_ns.
  void observe(uint64_t now_ns, uint64_t hits, uint64_t span_ns);
  // A busy signal at now_ns. True if it lowered the factor.
  bool busy(uint64_t now_ns);
  // Recovery up to now_ns. True if the factor changed.
  bool tick(uint64_t now_ns);

  double factor() const { return factor_; }
  double rate() const { return rate_; }
  double limit() const { return rate_ * factor_; }
  // The busiest key's admitted rate over the last second (per second): the busiest
  // key's hits of each period in the last second over the time they span.
  double observed(uint64_t now_ns) const;
  const AdaptiveParams &params() const { return p_; }
  uint64_t busy_signals() const { return busy_signals_; }
  uint64_t decreases() const { return decreases_; }
  bool in_hold(uint64_t now_ns) const { return busy_seen_ && now_ns - last_busy_ns_ < p_.hold_ns; }
  void set_rate(double rate, const AdaptiveParams &p) {
    rate_ = rate, p_ = p;
    factor_ = std::max(factor_, p.floor);
  }

 private:
  struct Sample {
    uint64_t at_ns;
    uint64_t hits;     // the busiest key's, in the period ending at at_ns
    uint64_t span_ns;  // the period's length
  };
  double rate_;
  AdaptiveParams p_;
  double factor_ = 1.0;
  std::deque<Sample> samples_;  // the last second's observations
  bool busy_seen_ = false, decreased_ = false, unmeasured_decrease_ = false;
  uint64_t last_busy_ns_ = 0, last_decrease_ns_ = 0, last_tick_ns_ = 0;
  uint64_t busy_signals_ = 0, decreases_ = 0;
};

// The policy of a rule whose factor is f: rate x f (interval / f) and the same burst
// window in time (burst_ns), so the burst in tokens scales with f but never below one.
dt_policy adaptive_policy(const dt_policy &base, double f);

enum class AdaptiveKind : uint8_t { Packet, Tag };

struct AdaptiveRuleSpec {
  AdaptiveKind kind = AdaptiveKind::Packet;
  std::string name;    // packet rule name, or tag rule prefix
  uint32_t index = 0;  // packet: kernel rule id; tag: index in the tag rule list
  double rate = 0;     // configured
  AdaptiveParams params;
};

// What one adaptive rule looks like now (for stats, metrics and logs).
struct AdaptiveStatus {
  AdaptiveKind kind;
  std::string name;
  uint32_t index;
  double rate;              // configured
  double local_factor;      // ours
  double factor;            // applied: min(ours, live peers')
  std::string lowest_from;  // "" (ours) or the peer whose factor applies
  double observed;          // busiest key's admitted rate, last second
  uint64_t busy_signals, decreases;
  bool cluster;
};

class AdaptiveSet {
 public:
  // Installs the adaptive rules (on start and reload). A rule that was there before
  // under the same kind and name keeps its factor and history.
  void configure(const std::vector<AdaptiveRuleSpec> &rules, uint64_t peer_hold_ns);
  bool empty() const;

  // A busy signal for a rule, by kind and name (tag rules by prefix). Any thread.
  // False if there is no such adaptive rule. `source` is for the log ("query", ...).
  bool busy(AdaptiveKind kind, std::string_view name, const char *source, uint64_t now_ns);

  // Hits admitted in this period, for the busiest-key measurement: by this host
  // (packet entries from the collector, tag hits from the tag table) and by peers
  // (their reports). Keys of non-adaptive rules are ignored.
  // Entries' key.rule is a local rule id, or (with `local_rule` not empty) an index
  // into local_rule, which gives the local id or -1 (a peer's rule numbering).
  void add_packet_hits(std::span<const ReportEntry> entries, std::span<const int64_t> local_rule = {});
  void add_tag_hits(uint32_t tag_rule_index, std::string_view tag, uint64_t hits);
  // A peer's factors from its report.
  void on_peer_factors(const std::string &node_id, const std::vector<RuleFactor> &factors, uint64_t now_ns);

  // End of a period of span_ns: turns the period's hits into observations, recovers,
  // expires silent peers' factors. True if any applied factor changed (the caller
  // then republishes the policies).
  bool on_period(uint64_t now_ns, uint64_t span_ns);

  // The applied factor of each adaptive rule of a kind, by index (1.0 for others).
  std::vector<double> factors(AdaptiveKind kind, size_t n) const;
  // Our own factors, for the report (cluster-scoped rules only).
  std::vector<RuleFactor> report_factors() const;
  std::vector<AdaptiveStatus> status(uint64_t now_ns) const;

 private:
  struct Rule {
    AdaptiveRuleSpec spec;
    AdaptiveLimit limit;
    double applied = 1.0;
    std::string applied_from;
    std::map<std::string, std::pair<double, uint64_t>> peers;          // node -> (factor, heard at)
    std::unordered_map<dt_key, uint64_t, KeyHash, KeyEq> packet_hits;  // this period
    std::unordered_map<std::string, uint64_t> tag_hits;
  };
  Rule *find_locked(AdaptiveKind kind, std::string_view name);
  void log_change_locked(Rule &r, double before, const char *why, uint64_t now_ns);

  mutable std::mutex mu_;
  std::vector<Rule> rules_;
  std::vector<int> packet_by_index_, tag_by_index_;  // index -> position in rules_, or -1
  uint64_t peer_hold_ns_ = 1'000'000'000ull;
  LogLimiter log_{1'000'000'000ull, 4};
};

const char *adaptive_kind_name(AdaptiveKind k);

}  // namespace dt
