// adaptive_driver.h - adaptive limits inside the running agent: feeds the controller
// (adaptive.h) with what was served and with busy signals, and applies its factors to
// the kernel's policies (packet rules) and to the tag table (tag rules).
//
// Each report period, on the agent's main thread:
//   1. what was served: packet hits per source come from the cluster's collector
//      (Cluster::set_adaptive) or, without peers, from a collector of our own (only
//      when some packet rule is adaptive); tag hits from the tag table's collect(),
//      directly without peers or through the cluster's tag hooks (observe_tags);
//   2. the built-in busy signal: TCP listen queues of the rules' listen_port
//      (poll_signals, before the period's report so that it carries the result);
//   3. the controller's period: observations, recovery, peers' factors (on_period);
//   4. if an applied factor changed: the packet rules' policies are republished
//      (double-banked, publish_rules) and the tag table's rates set.
// Busy signals from applications arrive on the query thread (busy_from_query), take
// effect in the controller at once and in the maps at the next period (<= 200 ms).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "adaptive/adaptive.h"
#include "adaptive/listen_watch.h"
#include "dataplane/policy.h"
#include "rules/rules.h"
#include "rules/tags.h"

namespace dt {

class Dataplane;
class AdaptiveDriver;

// The query thread starts before the dataplane and so before the driver: it reaches
// the driver through this relay, which the driver joins and leaves (under the lock,
// so a BUSY line never meets a driver being destroyed).
class BusyRelay {
 public:
  bool busy(std::string_view name, uint64_t now_ns);
  void attach(AdaptiveDriver *d);

 private:
  std::mutex mu_;
  AdaptiveDriver *driver_ = nullptr;
};

class AdaptiveDriver {
 public:
  AdaptiveDriver(Dataplane &dp, const RuleMaps &maps, TagTable &tags, BusyRelay *relay);
  ~AdaptiveDriver();

  // Installs the adaptive rules of `rules` (packet) and `tag_rules` (start, reload).
  // `rules` must outlive the next configure(): its policies are the base the factors
  // scale. `own_collector`: measure packet hits with a collector of our own (no cluster).
  // The factors in force are re-applied at once. False with *err if the maps cannot
  // be written.
  bool configure(const LoadedRules &rules, const std::vector<TagRule> &tag_rules, bool own_collector,
                 uint64_t period_ns, std::string *err);
  bool active() const { return !set_.empty(); }
  AdaptiveSet &set() { return set_; }

  // BUSY <name> from the query socket: the adaptive packet rule of that name, else
  // the tag rule of the tag <name>. Any thread. True if an adaptive rule took it.
  bool busy_from_query(std::string_view name, uint64_t now_ns);
  // Tag hits served here or by peers this period (tags.collect(), peers' reports).
  void observe_tags(const std::vector<TagHit> &hits);

  // Step 2 alone: polls the listen queues. Called before the cluster's report of the
  // period, so a busy signal found now is in that report (not the next one).
  void poll_signals(uint64_t now_ns);
  // The period's other steps (see above); `own_tags`: collect the tag table's hits
  // here (no cluster does it).
  void on_period(uint64_t now_ns, bool own_tags);

  std::vector<AdaptiveStatus> status(uint64_t now_ns) const { return set_.status(now_ns); }
  // `agent stats` views of status(): JSON array and a table.
  std::string status_json(uint64_t now_ns) const;
  std::string status_text(uint64_t now_ns) const;

 private:
  bool apply(std::string *err);

  Dataplane &dp_;
  BusyRelay *relay_;
  RuleMaps maps_;
  TagTable &tags_;
  AdaptiveSet set_;
  const LoadedRules *rules_ = nullptr;
  std::vector<TagRule> tag_rules_;
  std::unique_ptr<class Collector> collector_;
  std::unique_ptr<ListenQueueWatch> listen_;
  struct Watched {
    AdaptiveKind kind;
    std::string name;
    uint16_t port;
  };
  std::vector<Watched> watched_;
  uint64_t period_ns_ = 200'000'000;
  uint64_t last_period_ns_ = 0;
  bool applied_base_ = false;  // the maps hold the configured policies (every factor 1)
  bool tries_synced_ = false;  // both rules-trie banks hold rules_ (see publish_policies_only)
  LogLimiter warn_{10'000'000'000ull, 3};
};

// The adaptive status file (AdaptiveDriver::status_json): a JSON array, every string escaped.
std::string adaptive_status_json(const std::vector<AdaptiveStatus> &all);

}  // namespace dt
