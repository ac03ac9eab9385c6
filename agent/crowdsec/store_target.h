// store_target.h - the bouncer's bans in an agent's ban maps (bans/ban_store.h), as the
// CrowdSec bouncer: origin "crowdsec", set by "crowdsec bouncer".
#pragma once

#include <memory>
#include <string>

#include "bans/ban_store.h"
#include "crowdsec/bouncer.h"

namespace dt {

class StoreBanTarget : public BanTarget {
 public:
  explicit StoreBanTarget(std::unique_ptr<BanStore> store) : store_(std::move(store)) {}

  // Replaces a ban of the same prefix unless someone else's (an operator's) lasts longer.
  bool set_ban(const BanPrefix &prefix, int64_t duration_ns, const std::string &reason, std::string *err) override;
  // Lifts only a ban this host's CrowdSec bouncer set.
  bool lift_ban(const BanPrefix &prefix, bool *lifted, std::string *err) override;
  std::vector<Current> current_bans() override;

 private:
  std::unique_ptr<BanStore> store_;
};

}  // namespace dt
