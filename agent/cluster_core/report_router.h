// report_router.h - which peers hear of which source (reporting scheme "owner",
// docs/cluster-scale.md). Pure logic, on the caller's clock; the agent's Cluster and the
// simulator (tools/sim) run the same code.
//
// A source this host knows to be shared (a peer's report or an owner's relay named it in
// the last shared_keep_ns, or we sent it to everyone then) goes to every peer. Any other
// source goes to its owner only (source_owner.h: rendezvous hashing of the members' node
// ids); if we are its owner it stays here. An owner notes the hits members send it (the
// caller charges them as any report's) and, once a second member has reported the source
// within pending_max_age_ns, relays every hit it holds for it to everyone, naming the
// member that admitted each (receivers skip their own); a source it knows to be shared is
// relayed at once. Hits older than pending_max_age_ns (the report max age) are dropped
// unrelayed: a receiver would not charge them any more.
// Below kOwnerMinMembers members everything goes to every peer (a mesh): there the mesh costs
// a host at most 3x what it serves, and a source's first hits reach everyone one period
// sooner than through an owner (measured: 3 real agents 1.021x with owners, 1.001x to 1.016x
// as a mesh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/key_hash.h"
#include "common/report_types.h"

namespace dt {

// Hits of `entry.key` that member `from` (an index into the members) admitted.
struct RelayEntry {
  uint32_t from;
  ReportEntry entry;
};

// One period's served sources, routed.
struct RoutedReport {
  std::vector<ReportEntry> everyone;                    // to every peer
  std::map<size_t, std::vector<ReportEntry>> to_owner;  // member index -> to that owner only
  std::vector<RelayEntry> relays;                       // we own them and they turned shared
};

constexpr size_t kOwnerMinMembers = 5;

struct RouterOptions {
  uint64_t shared_keep_ns = 5'000'000'000ull;      // 25 periods of 200 ms
  uint64_t pending_max_age_ns = 2'000'000'000ull;  // the report max age
};

class ReportRouter {
 public:
  explicit ReportRouter(const RouterOptions &o = {}) : opt_(o) {}

  // The members (node ids, this host's included, any order but the same set everywhere)
  // and which one is this host.
  void set_members(std::vector<std::string> ids, size_t self);
  const std::vector<std::string> &members() const { return members_; }
  size_t self() const { return self_; }
  // The member index that owns k's address.
  size_t owner(const dt_key &k);

  bool shared(const dt_key &k, uint64_t now_ns) const;
  // Up to `max` of the sources shared at now_ns, in no particular order (early reports of
  // shared sources near their limit, cluster_core/shared_early.h).
  std::vector<dt_key> shared_keys(uint64_t now_ns, size_t max) const;
  // A peer's report or an owner's relay named k: k is shared for shared_keep_ns.
  void heard(const dt_key &k, uint64_t now_ns) { shared_until_[k] = now_ns + opt_.shared_keep_ns; }

  // Routes what this host served in a period (hits > 0).
  RoutedReport route(const std::vector<ReportEntry> &served, uint64_t now_ns);
  // As owner: `hits` of k that member `from` sent us (or admitted here, from == self()).
  // Returns what to relay now (empty while k has one member).
  std::vector<RelayEntry> contribute(const dt_key &k, size_t from, uint64_t hits, uint64_t now_ns);

  size_t shared_count() const { return shared_until_.size(); }
  size_t pending_count() const { return pending_.size(); }

 private:
  struct Pending {
    uint32_t from;
    uint64_t hits;
    uint64_t at_ns;
  };
  void sweep(uint64_t now_ns);

  RouterOptions opt_;
  std::vector<std::string> members_;
  size_t self_ = 0;
  std::unordered_map<dt_key, uint32_t, KeyHash, KeyEq> owner_cache_;
  std::unordered_map<dt_key, uint64_t, KeyHash, KeyEq> shared_until_;
  std::unordered_map<dt_key, std::vector<Pending>, KeyHash, KeyEq> pending_;
  uint64_t next_sweep_ns_ = 0;
};

}  // namespace dt
