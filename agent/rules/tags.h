// tags.h - throttling tags: the application-level buckets behind the query socket.
//
// A tag is any string an application wants to throttle by (a user id, an API key,
// "api:/search:198.18.0.7", ...). Rules pick the policy of a tag by string prefix
// (jthrottle): the rule with the longest prefix of the tag wins, a rule with prefix ""
// is the catch-all, and a tag that no rule matches is allowed without a bucket (counted
// as `unruled`). Every distinct ruled tag gets its own bucket that inherits its rule's
// rate and burst and starts full. Buckets are GCRA state, the very arithmetic of
// include/dthrottle/bucket.h that the XDP program uses (dt_gcra_admit/debit).
//
// Who calls what (thread safety: one mutex; every call below takes it once):
//   query thread (QueryServer)  answer_batch() for a whole read's worth of queries,
//                               or admit()/reserve() for single queries;
//   agent main thread           each period: collect() -> publish the (tag, hits) list
//                               to peers; on a peer report: debit_batch();
//                               on reload: replace_rules(); for metrics: counters().
//
// Reservations (the RESERVE query command, see docs/query-protocol.md): when no token is
// left, reserve() takes one from the future instead, if the time at which that token
// accrues is at most max_wait_ns away: the bucket's TAT moves one interval on, exactly
// as an admission would, and the caller is told to wait until then. Outstanding
// reservations (those whose time has not come yet) are bounded per tag and in total.
//
// Memory is bounded: at most Options::max_buckets buckets. When a new tag needs a bucket
// and the table is full, a bucket near the least-recently-used end is dropped, full
// buckets first (a full bucket carries no information: a new one would start full too).
// Hits of a dropped bucket not yet collected are kept (up to a bound) for collect().
//
// Rule changes (replace_rules) keep every bucket: a bucket notices the new rule set the
// next time its tag is used, re-resolves its rule and keeps its balance in tokens
// (capped at the new burst), so debt is not forgiven by a reload. A bucket whose tag no
// longer matches any rule is dropped then.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "adaptive/adaptive.h"
#include "common/no_copy.h"
#include "common/report_types.h"
#include "dthrottle/common.h"

namespace dt {

struct TagRule {
  std::string prefix;  // "" matches every tag
  double rate = 0;     // tokens per second
  uint64_t burst = 0;  // bucket capacity in tokens
  int line = 0;        // where it is in the rules file (0: --tag-rule)
  // Strict: decided by Redis, the one budget of every agent (see strict_redis.h), not
  // by this table. If Redis cannot answer: deny (default), or this table's bucket.
  bool strict = false;
  bool strict_fallback_local = false;  // on_redis_error = "local"
  AdaptiveConfig adaptive{};           // back off on busy signals (adaptive.h)
};

// Parses "PREFIX=RATE/BURST", e.g. "api:=100/20", "user:=6/m/1", "=10/10" (catch-all),
// optionally followed by "!strict" (strict, deny if Redis fails) or "!strict-local"
// (strict, this agent's bucket if Redis fails).
// The prefix is everything before the last '=' (it may itself contain '=' or '/');
// the burst follows the last '/'; RATE takes the forms of parse_rate ("100", "0.5",
// "6/m"). False with a sentence in *err on anything else (including a rate or burst
// that make_policy refuses, or a prefix over kMaxTagLen).
bool parse_tag_rule(const std::string &spec, TagRule *out, std::string *err);

// A query of a batch: in, the tag and whether it is a reservation; out, the answer.
enum class TagAnswer : uint8_t { Ok, No, Wait };
struct TagQuery {
  std::string_view tag;
  bool reserve = false;
  TagAnswer answer = TagAnswer::Ok;  // out
  uint64_t wait_ns = 0;              // out, with TagAnswer::Wait: how long from now
  // out, with StrictMode::Defer: the tag's rule is strict, the query is not answered
  // (answer is No) and these are the rule's parameters for Redis.
  bool strict = false;
  bool strict_fallback_local = false;
  uint64_t strict_interval_ns = 0;
  uint64_t strict_burst = 0;
};

// What answer_batch does with tags whose rule is strict: leave them to the caller
// (Defer), or answer them from this table's buckets like any other (Local: the
// on_redis_error = "local" fallback, or an agent without Redis).
enum class StrictMode : uint8_t { Defer, Local };

struct TagCounters {
  uint64_t admitted = 0;         // queries answered OK from a bucket (reserve: a token now)
  uint64_t denied = 0;           // answered NO (no token; reserve: wait or bound exceeded)
  uint64_t unruled = 0;          // answered OK because no rule matches the tag
  uint64_t reserved = 0;         // reservations granted (answered WAIT)
  uint64_t reserve_too_far = 0;  // reserve denied: the token is more than max_wait away
  uint64_t reserve_bounded = 0;  // reserve denied: too many outstanding reservations
  uint64_t debited_hits = 0;     // peer hits debited from our buckets
  uint64_t debit_unruled = 0;    // peer hits for tags no rule matches (ignored)
  uint64_t buckets = 0;          // buckets now
  uint64_t created = 0;          // buckets created
  uint64_t evicted_full = 0;     // dropped for room while full (no information lost)
  uint64_t evicted_active = 0;   // dropped for room while not full (their state is lost)
  uint64_t dropped_unruled = 0;  // dropped because a rule change left them without a rule
  uint64_t lost_hits = 0;        // uncollected hits of dropped buckets beyond the bound
  uint64_t outstanding = 0;      // reservations whose time has not come yet
};

class TagTable : NoCopy {
 public:
  struct Options {
    size_t max_buckets = 1'000'000;  // 0: no bound
    uint32_t max_reservations_per_tag = 100;
    uint64_t max_reservations = 100'000;  // outstanding, over all tags
    size_t max_orphan_tags = 65'536;      // dropped buckets whose hits wait for collect()
  };

  TagTable() : TagTable(Options{}) {}
  explicit TagTable(const Options &opt);

  // Validates and installs a rule set (prefixes must be distinct, each rate/burst valid
  // for make_policy). On error nothing changes and *err says which rule is wrong.
  bool replace_rules(const std::vector<TagRule> &rules, std::string *err);
  std::vector<TagRule> rules() const;
  // The index (in rules()) of the rule a tag falls under, if any.
  std::optional<uint32_t> rule_of(std::string_view tag) const;
  // The prefix of the rule a tag falls under, if any.
  std::optional<std::string> rule_prefix_of(std::string_view tag) const;
  // Adaptive limits: rule i enforces its rate x factors[i] (adaptive_policy). Buckets
  // pick the change up the next time they are used, keeping their balance in tokens.
  // A shorter vector leaves the other rules at their configured rate.
  void set_factors(const std::vector<double> &factors);

  // One query: true (OK) if the tag may proceed now. Creates the bucket if needed.
  bool admit(std::string_view tag, uint64_t now_ns);
  // A reservation: 0 = a token now; w > 0 = a permit is reserved at now + w ns;
  // nullopt = denied (wait over max_wait_ns, or a reservation bound reached).
  std::optional<uint64_t> reserve(std::string_view tag, uint64_t now_ns, uint64_t max_wait_ns);
  // Answers every query of the batch in order, under one lock.
  void answer_batch(std::span<TagQuery> queries, uint64_t now_ns, uint64_t max_wait_ns,
                    StrictMode strict = StrictMode::Local);
  // Whether any rule is strict (then the query server needs Redis).
  bool has_strict_rules() const;

  // Peer hits: each tag's bucket (created full if missing) loses `hits` tokens, possibly
  // going negative. Tags no rule matches are ignored (counted).
  void debit(std::string_view tag, uint64_t hits, uint64_t now_ns);
  void debit_batch(std::span<const TagHit> hits, uint64_t now_ns);

  // The tags admitted (or reserved) since the last collect, with their hit counts
  // (debits are not included: peers report their own hits). Resets them. A tag may
  // appear twice if its bucket was dropped and re-created in between (the hits add up).
  std::vector<TagHit> collect();

  // A bucket's balance in thousandths of a token (negative in debt); nullopt if the tag
  // has no bucket (never seen, dropped, or no rule). For status output and tests.
  std::optional<int64_t> tokens_milli(std::string_view tag, uint64_t now_ns);

  TagCounters counters(uint64_t now_ns);
  size_t size() const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Bucket;
  using Map = std::unordered_map<std::string, Bucket, Hash, std::equal_to<>>;
  using Node = Map::value_type;
  static constexpr uint32_t kClean = UINT32_MAX;
  struct Bucket {
    uint64_t tat = 0;           // GCRA state; 0: full
    dt_policy policy{};         // of the rule it was resolved to
    uint64_t hits = 0;          // admitted since the last collect
    uint64_t serial = 0;        // tells a recreated bucket from its predecessor
    Node *lru_prev = nullptr;   // towards the most recently used
    Node *lru_next = nullptr;   // towards the least recently used
    uint32_t rules_gen = 0;     // rule set it was resolved under
    uint32_t reservations = 0;  // outstanding
    uint32_t dirty = kClean;    // index in dirty_ while hits > 0
  };
  struct Reservation {
    uint64_t due_ns;
    uint64_t serial;
    std::string tag;
    bool operator>(const Reservation &o) const { return due_ns > o.due_ns; }
  };
  struct CompiledRules {
    std::vector<TagRule> rules;
    std::vector<dt_policy> policies;       // in force: base x adaptive factor
    std::vector<dt_policy> base_policies;  // as configured
    std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> by_prefix;
    std::vector<size_t> lengths;  // distinct prefix lengths, longest first
    bool any_strict = false;
  };

  // The index of the rule with the longest prefix of `tag` (rules_.rules, .policies).
  std::optional<uint32_t> match_index_locked(std::string_view tag) const;
  const dt_policy *match_locked(std::string_view tag) const;
  Node *find_locked(std::string_view tag, uint64_t now_ns);
  Node *get_locked(std::string_view tag, const dt_policy &pol, uint64_t now_ns);
  void make_room_locked(uint64_t now_ns);
  void drop_locked(Node *n);
  void touch_locked(Node *n);
  void lru_unlink_locked(Node *n);
  void add_hit_locked(Node *n);
  void expire_locked(uint64_t now_ns);
  // The bucket of `tag` (created full under its rule, and touched), or nullptr if no
  // rule matches the tag (counted as unruled: such tags are allowed).
  Node *bucket_locked(std::string_view tag, uint64_t now_ns);
  // Takes one token now if there is one (counted and recorded as a hit).
  bool take_locked(Node *n, uint64_t now_ns);
  bool admit_locked(std::string_view tag, uint64_t now_ns);
  std::optional<uint64_t> reserve_locked(std::string_view tag, uint64_t now_ns, uint64_t max_wait_ns);

  const Options opt_;
  mutable std::mutex mu_;
  CompiledRules rules_;
  uint32_t rules_gen_ = 1;
  Map map_;
  Node *lru_head_ = nullptr;  // most recently used
  Node *lru_tail_ = nullptr;  // least recently used
  std::vector<Node *> dirty_;
  std::vector<TagHit> orphans_;  // hits of dropped buckets, for the next collect
  std::priority_queue<Reservation, std::vector<Reservation>, std::greater<>> due_;
  uint64_t next_serial_ = 1;
  TagCounters c_;
};

}  // namespace dt
