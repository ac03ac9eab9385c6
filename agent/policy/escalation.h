// escalation.h - repeat offenders banned by themselves (docs/rules.md "Escalation"):
// which sources (or prefixes) have been over a rule's budget long enough to be banned,
// for how long, and what is remembered of them. Pure logic: no maps, no sockets; the
// clock is passed in (a test drives it), the evidence and the exemptions come from the
// caller (daemon/escalation_driver.h reads them from the maps).
//
// Each check (every period, and at next_due()) the caller gives the offenders over budget
// now: a prefix (a source's bucket key as a ban prefix, or a prefix budget's prefix), the
// rule whose budget it exceeds and the packets it had dropped since the last check.
//   offence   starts when its drops began: after the check before the first one that sees
//             it over budget (its floor: nothing dropped then), and no later than that
//             first one. At first it counts from the floor; the next check that sees its
//             drops grow places the start inside that interval from its drops (the
//             drops first seen, at the rate they grew since: start_estimate()). It lasts
//             while it is seen over budget again within kOffenceGapNs; one seen over
//             budget `after` past its start is banned, unless exempt (allow list,
//             verified, the cluster's peers: the caller's Exempt), or the cap of
//             automatic bans in force is reached (counted, retried at the next check);
//   due       next_due(): the earliest time an offence under way lasts `after`, so the
//             caller checks then, not a period later;
//   ban       offence n (1, 2, ...) is banned for ban x factor^(n-1), at most max
//             (escalate_config.h); n goes back to 1 when the offence starts later than
//             `forget` after the end of its last ban;
//   dry run   a rule in dry run makes no ban: the ban it would make is counted, logged
//             and remembered as if made (so its repeats escalate as they would);
//   bounds    at most max_tracked offenders (the least recently seen forgotten first);
//             at most max_in_force automatic bans (and would-bans) in force;
//   restart   save() and load() keep the offenders with a ban history (times on the wall
//             clock), so an agent restarted with --keep escalates them on;
//   peers     a peer's automatic ban (learn(): its rule, offence and end, from the ban's
//             who and reason) joins the offender's history as if made here, so its next
//             offence on this host is a repeat; it counts no ban in force here.
// Each check returns the bans to make (and the would-bans of dry run).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <list>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "bans/ban_types.h"
#include "policy/escalate_config.h"

namespace dt {

constexpr uint64_t kOffenceGapNs = 2'500'000'000ull;  // not seen over budget this long: offence over
constexpr size_t kDefaultMaxAutoBans = 1024;
constexpr size_t kDefaultMaxOffenders = 65536;

// A rule that escalates, by its id.
struct EscalationRule {
  std::string name;
  EscalateConfig cfg;
  bool dry_run = false;  // the rule (or the agent) in dry run: bans are counted, not made
};

// An offender over a rule's budget at this check.
struct OverBudget {
  BanPrefix prefix;
  uint32_t rule = 0;
  uint64_t drops = 0;  // packets (or bytes) dropped since the last check; 0 if unknown
};

// When an offence's drops began: first_drops were seen at first_seen_ns, then grew by
// more_drops in the next dt_ns; at that rate the first ones took first_drops / rate.
// Never before floor_ns (nothing was dropped then) nor after first_seen_ns.
uint64_t start_estimate(uint64_t floor_ns, uint64_t first_seen_ns, uint64_t first_drops, uint64_t more_drops,
                        uint64_t dt_ns);

// A ban escalation made (or, dry_run, would have made).
struct AutoBan {
  BanPrefix prefix;
  std::string rule;
  uint64_t duration_ns = 0, expires_ns = 0;  // expires_ns: the clock's (monotonic)
  uint32_t offence = 1;                      // 1: first, 2: its first repeat, ...
  uint64_t drops = 0;                        // dropped during the offence
  uint64_t over_ns = 0;                      // how long it was over budget
  bool dry_run = false;
  std::string evidence() const;  // "1234 dropped in 31s over budget, offence 2"
};

// The offence number an evidence() text ends with; false if it ends otherwise.
bool parse_offence(const std::string &evidence, uint32_t *offence);

struct EscalationCounters {
  uint64_t bans = 0;         // automatic bans made
  uint64_t would_ban = 0;    // dry run: bans it would have made
  uint64_t cap_reached = 0;  // bans not made: max_in_force automatic bans in force
  uint64_t exempt = 0;       // offences of exempt sources (allow list, verified, peers)
  uint64_t evicted = 0;      // offenders forgotten to stay within max_tracked
  uint64_t offences = 0;     // offences started
  uint64_t learned = 0;      // peers' automatic bans taken into the history
};

// What `agent stats` and /metrics show of escalation.
struct EscalationStatus {
  bool active = false;  // some rule escalates
  EscalationCounters counters;
  uint64_t failed = 0;  // bans the ban store could not write
  size_t tracked = 0, in_force = 0, max_in_force = 0;
  std::vector<std::string> rules;
};

class Escalation {
 public:
  using Clock = std::function<uint64_t()>;  // monotonic ns
  // Whether a prefix must never be banned; *why says why ("allow list 198.18.0.0/24").
  using Exempt = std::function<bool(const BanPrefix &, std::string *why)>;

  explicit Escalation(Clock clock, size_t max_in_force = kDefaultMaxAutoBans,
                      size_t max_tracked = kDefaultMaxOffenders);
  // The rules that escalate (start, reload): offenders of rules gone are kept (their history).
  void set_rules(std::map<uint32_t, EscalationRule> rules) { rules_ = std::move(rules); }
  const std::map<uint32_t, EscalationRule> &rules() const { return rules_; }
  void set_exempt(Exempt e) { exempt_ = std::move(e); }

  // One check: the offenders over budget now. The bans to make (dry_run ones: to log only).
  std::vector<AutoBan> check(const std::vector<OverBudget> &over);
  // A peer's automatic ban of `p` (rule `rule`'s offence `offence`, ending at ban_end on this
  // host's clock) into the history. False when no rule here has that name, or it was known.
  bool learn(const BanPrefix &p, const std::string &rule, uint32_t offence, uint64_t ban_end);

  // The earliest time an offence under way will have lasted its rule's `after` (monotonic
  // ns; UINT64_MAX if none): the caller checks at that time.
  uint64_t next_due() const;

  const EscalationCounters &counters() const { return counters_; }
  size_t tracked() const { return offenders_.size(); }
  size_t in_force();  // automatic bans (and would-bans) in force now
  size_t max_in_force() const { return max_in_force_; }
  // The offenders with a ban history, one a line; load() reads them back (bad lines skipped).
  void save(std::ostream &out, uint64_t now_unix_ms);
  size_t load(std::istream &in, uint64_t now_unix_ms);

 private:
  struct Offender {
    uint32_t rule = 0;
    uint64_t over_since = 0;  // 0: not in an offence
    uint64_t last_over = 0;
    uint64_t floor = 0;        // the offence began after this (nothing dropped then)
    uint64_t first_seen = 0;   // the check that first saw it over budget
    uint64_t first_drops = 0;  // the drops that check saw
    bool placed = false;       // over_since estimated from the drops' rate (start_estimate)
    uint64_t drops = 0;
    uint32_t bans = 0;     // bans in its escalation so far
    uint64_t ban_end = 0;  // the last one's end (0: none)
    std::list<BanPrefix>::iterator lru;
  };
  Offender &touch(const BanPrefix &p);
  void observe(const OverBudget &o, uint64_t now);
  bool decide(const BanPrefix &p, Offender &st, uint64_t now, std::vector<AutoBan> *out);
  AutoBan make_ban(const BanPrefix &p, Offender &st, const EscalationRule &r, uint64_t now);
  void end_quiet_offences(uint64_t now);
  void prune(uint64_t now);

  Clock clock_;
  size_t max_in_force_, max_tracked_;
  std::map<uint32_t, EscalationRule> rules_;
  Exempt exempt_;
  std::map<BanPrefix, Offender> offenders_;
  std::list<BanPrefix> lru_;  // front: most recently seen
  std::set<BanPrefix> in_offence_;
  std::multiset<uint64_t> ends_;  // the ends of the automatic bans made (in force: > now)
  uint64_t next_prune_ = 0;
  uint64_t last_check_ = 0;  // 0: none yet
  EscalationCounters counters_;
};

}  // namespace dt
