// attack_watch.h - "attack_started" and "attack_ended" (docs/events.md): a rule's drops
// crossing a threshold and falling back, with its top sources.
//
// Each second the rules' drop counters (rule_stats, or rule_would_drop for a rule in dry
// run) are read once; a rule whose drops over the last second reach its threshold
// (--attack-drops N per second, default 1000; attack_drops in its [[rule]]; 0: never) is
// under attack; the attack ends once its drops have stayed under half the threshold for
// --attack-quiet (default 10s). So a rate hovering at the threshold does not flap, and an
// attack that pauses shorter than that is one attack. Both events name the rule's top
// sources: the buckets of that rule with the most drops, read once per event (the
// buckets table is walked, as `agent top` does, only then).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dataplane/map_reader.h"
#include "events/event_bus.h"

namespace dt {

inline constexpr uint64_t kDefaultAttackDrops = 1000;
inline constexpr uint64_t kDefaultAttackQuietNs = 10'000'000'000ull;
inline constexpr size_t kAttackTopSources = 5;

struct AttackConfig {
  uint64_t drops_per_s = kDefaultAttackDrops;  // 0: off
  uint64_t quiet_ns = kDefaultAttackQuietNs;
  std::map<std::string, uint64_t> per_rule;  // rule name -> its own threshold (0: off)
};

// What the detector decided for one rule at one reading.
enum class AttackChange { None, Started, Ended };

// The state machine alone (no maps): fed each rule's cumulative drops.
class AttackDetector {
 public:
  explicit AttackDetector(AttackConfig cfg) : cfg_(std::move(cfg)) {}
  void set_config(AttackConfig cfg) { cfg_ = std::move(cfg); }
  uint64_t threshold(const std::string &rule) const;
  // Rule `id` (named `name`) has dropped `dropped` packets in all at now_ns.
  AttackChange update(uint32_t id, const std::string &name, uint64_t dropped, uint64_t now_ns);
  struct State {
    bool active = false;
    uint64_t last_dropped = 0, last_ns = 0;
    uint64_t started_ns = 0, started_dropped = 0, quiet_since_ns = 0;
    double rate = 0, peak = 0;  // drops per second: the last reading's, the attack's highest
  };
  const State *state(uint32_t id) const;

 private:
  AttackConfig cfg_;
  std::map<uint32_t, State> rules_;
};

struct TopSource {
  std::string source;
  uint64_t dropped = 0;
};

// The `n` sources of rule `rule_id` with the most drops (would-drops with dry_run).
std::vector<TopSource> top_dropping_sources(const MapFds &m, uint32_t rule_id, size_t n, bool dry_run);

// The detector over the maps, telling the bus.
class AttackWatch {
 public:
  AttackWatch(EventBus &bus, AttackConfig cfg) : bus_(bus), detector_(std::move(cfg)) {}
  void set_config(AttackConfig cfg) { detector_.set_config(std::move(cfg)); }
  // Once a second: reads every rule's counters and tells the changes.
  void poll(const MapFds &m, uint64_t now_ns);

 private:
  void tell(const MapFds &m, const RuleCounters &r, bool dry_run, AttackChange ch, uint64_t now_ns);
  EventBus &bus_;
  AttackDetector detector_;
};

}  // namespace dt
