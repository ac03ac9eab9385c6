// never_ban.h - the addresses no peer's ban and no CrowdSec bouncer's ban may cover
// (docs/bans.md "What a member may ban"): the cluster's peers and hubs (the addresses of
// the cluster_exempt entries) and the allow list (allow_file). A ban overlapping any of
// them (covering one, or lying within an allowed prefix) is refused.
//
// The daemon fills it from what it holds (the cluster's exempt keys, the rules' allow
// list); the bouncer, a process of its own, from the agent's pins (read_never_ban_pins).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bans/ban_types.h"
#include "dataplane/list_maps.h"
#include "dthrottle/common.h"

namespace dt {

class NeverBan {
 public:
  // The peers' and hubs' addresses: those of `keys` (cluster_exempt.h's entries).
  void set_cluster(const std::vector<dt_exempt_key> &keys);
  // The allow list (shared, not copied; null: none).
  void set_allow(std::shared_ptr<const ListPrefixes> allow) { allow_ = std::move(allow); }
  // Whether `p` overlaps the set; *what names what it overlaps ("peer or hub 198.18.0.2",
  // "allow list 198.18.0.0/24").
  bool overlaps(const BanPrefix &p, std::string *what) const;
  size_t cluster_size() const { return cluster_.size(); }

 private:
  std::vector<BanPrefix> cluster_;  // sorted addresses (/32, /128), without duplicates
  std::shared_ptr<const ListPrefixes> allow_;
};

// The never-ban set of the agent pinned in pin_dir, for the bouncer: its cluster_exempt
// map and its allow list's range sets. The allow list is read again only when the agent put
// a new one in force (its set's id changed). False with *err (the set is then unchanged).
class NeverBanPins {
 public:
  explicit NeverBanPins(std::string pin_dir) : pin_dir_(std::move(pin_dir)) {}
  bool refresh(std::string *err);
  const NeverBan &set() const { return set_; }

 private:
  std::string pin_dir_;
  uint32_t allow_ids_[2] = {0, 0};             // the v4 and v6 allow sets read last (0: none)
  std::shared_ptr<const ListPrefixes> allow_;  // what they held
  NeverBan set_;
};

}  // namespace dt
