// escalation_driver.h - escalation (policy/escalation.h) on the running agent: every
// period (--period) it learns which sources and prefixes are over the budget of a rule
// with `escalate`, hands them to the logic, and makes the bans it decides through the ban
// store (origin "auto": cluster-wide, pinned, expiring, listed by `agent bans`). It also
// checks when an offence under way lasts its rule's `after` (Escalation::next_due): a ban
// lands within about a period of the source crossing `after`, however the periods fall.
//
// The evidence, cheapest first:
//   gate     each escalating rule's counters (rule_stats dropped, rule_would_drop,
//            prefix_drops: per-CPU arrays, a few reads): a rule that dropped nothing
//            since the last check has nobody over its budget, and the bucket table is
//            not read at all;
//   sources  otherwise one pass over the bucket table (the drops still held per CPU
//            added): a source bucket of such a rule whose dropped + would_drop grew
//            since the last pass is over budget now (at the first pass, with no last
//            one: a bucket with drops that has no token now, the drops of a bucket
//            kept from before may be old);
//   prefixes a prefix budget's bucket of such a rule that has no token for a packet at
//            the check while its level dropped packets since the last one (the kernel
//            counts a level's drops per level, not per prefix: a prefix's own bucket
//            being empty is what names it).
// Exempt (never banned): the allow list and the cluster's peers and hubs (the never-ban
// set the peers' bans obey, bans/never_ban.h: the rules' allow list and the cluster_exempt
// map, read through the fds the daemon holds: its capabilities are dropped by then), sources a SYN cookie verified (the
// `verified` map; a prefix covering one), prefixes wider than --peer-ban-min-prefix.
// Events: each ban made (as the store holds it) and each would-ban of dry run is handed to
// the on-ban hook, after the store took it (a ban the store refused is not told).
// Peers: a ban learned from a peer that its escalation made (origin "NODE/auto", who
// "rule NAME", the evidence's "offence N" as reason) joins the offender's history here
// (Escalation::learn), so a source that moves to this host after its ban is a repeat.
// State: /run/dthrottle/<pin dir>.escalation (offenders with a ban history), written
// after each ban and on exit with --keep, read at start; removed on exit without --keep.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bans/ban_policy.h"
#include "bans/ban_store.h"
#include "bans/never_ban.h"
#include "common/key_hash.h"
#include "common/log.h"
#include "dataplane/map_reader.h"
#include "policy/escalation.h"
#include "rules/rules.h"

namespace dt {

class EscalationDriver {
 public:
  // An automatic ban made (`made`: the ban as the store holds it), or dry run's would-ban (`made` null).
  using OnBan = std::function<void(const AutoBan &, const Ban *made)>;
  // cluster_exempt_fd: the dataplane's cluster_exempt map (the peers' and hubs' addresses).
  EscalationDriver(const MapFds &fds, int cluster_exempt_fd, BanStore &store, std::string pin_dir,
                   BanMinPrefix min_prefix, size_t max_in_force, uint64_t period_ns);
  ~EscalationDriver();
  // The rules that escalate and the allow list (start, reload); the state file is read at the first call.
  void configure(const LoadedRules &rules);
  bool active() const { return !logic_.rules().empty(); }
  // When tick() is due next (monotonic ns): a period after the last, or sooner when an
  // offence lasts its `after` before then.
  uint64_t deadline() const { return deadline_; }
  void tick(uint64_t now_ns);
  // A peer's ban just installed here: its escalation's, it joins the history (true: it did).
  bool learn_peer_ban(const Ban &b);
  // On exit: with --keep the state is written for the next agent, else removed.
  void on_exit(bool keep);
  // Events: every automatic ban made, or that dry run would have made.
  void set_on_ban(OnBan f) { on_ban_ = std::move(f); }
  EscalationStatus status();
  std::string status_json();
  std::string status_text();

 private:
  bool rules_dropped();
  std::vector<OverBudget> scan(uint64_t now_ns);
  void scan_source(const dt_key &k, const dt_bucket &b, uint32_t rid, uint64_t now_ns, std::vector<OverBudget> *out);
  void scan_prefix(const dt_key &k, const dt_bucket &b, uint32_t rid, uint64_t now_ns, std::vector<OverBudget> *out);
  bool exempt(const BanPrefix &p, std::string *why);
  bool covers_verified(const BanPrefix &p);
  void apply(const AutoBan &b);
  bool store_ban(const AutoBan &b, Ban *made);
  void save();

  struct RuleInfo {
    bool prefixes = false;               // has prefix budgets: their prefixes escalate
    bool sources = true;                 // its source buckets escalate
    uint8_t v4_bits = 32, v6_bits = 64;  // its source buckets' prefix lengths
    dt_policy policy{};                  // its source buckets' budget
    dt_prefix_policy levels{};
    uint64_t drops = 0;  // its counters at the last check (the gate)
    uint64_t level_drops[DT_PREFIX_SLOTS] = {};
    bool level_dropped[DT_PREFIX_SLOTS] = {};  // since the last check
  };
  MapFds fds_;
  BanStore &store_;
  std::string pin_dir_, state_file_;
  BanMinPrefix min_prefix_;
  Escalation logic_;
  std::map<uint32_t, RuleInfo> info_;
  std::unordered_map<dt_key, uint64_t, KeyHash, KeyEq> drops_seen_;  // the last pass's drops per bucket
  int exempt_fd_;
  NeverBan never_;
  bool never_fresh_ = false;  // the cluster's addresses read at this check
  int verified_fd_ = -1;
  bool loaded_ = false;
  bool seeded_ = false;  // a first pass over the buckets was made
  uint64_t period_ns_, deadline_ = 0;
  uint64_t failed_ = 0;
  LogLimiter ban_log_{10'000'000'000ull, 20};
  OnBan on_ban_;
};

}  // namespace dt
