// store_target.h - the bouncer's bans in an agent's ban maps (bans/ban_store.h), as the
// CrowdSec bouncer: origin "crowdsec", set by "crowdsec bouncer".
#pragma once

#include <memory>
#include <string>

#include "bans/ban_store.h"
#include "bans/never_ban.h"
#include "crowdsec/bouncer.h"

namespace dt {

class StoreBanTarget : public BanTarget {
 public:
  explicit StoreBanTarget(std::unique_ptr<BanStore> store) : store_(std::move(store)) {}
  // With the never-ban set of the agent pinned in pin_dir (its peers, hubs, allow list).
  StoreBanTarget(std::unique_ptr<BanStore> store, const std::string &pin_dir)
      : store_(std::move(store)), never_(std::make_unique<NeverBanPins>(pin_dir)) {}

  // Replaces a ban of the same prefix unless someone else's (an operator's) lasts longer.
  bool set_ban(const BanPrefix &prefix, int64_t duration_ns, const std::string &reason, std::string *err) override;
  // Lifts only a ban this host's CrowdSec bouncer set.
  bool lift_ban(const BanPrefix &prefix, bool *lifted, std::string *err) override;
  std::vector<Current> current_bans() override;
  bool refresh_never_ban(std::string *err) override { return !never_ || never_->refresh(err); }
  bool never_ban(const BanPrefix &prefix, std::string *what) override {
    return never_ && never_->set().overlaps(prefix, what);
  }

 private:
  std::unique_ptr<BanStore> store_;
  std::unique_ptr<NeverBanPins> never_;
};

}  // namespace dt
