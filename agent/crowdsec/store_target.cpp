// store_target.cpp - the CrowdSec bouncer's changes made on the ban store: its own bans
// only (origin "crowdsec", this host's), never an operator's.
#include "crowdsec/store_target.h"

#include "common/clock.h"

namespace dt {
namespace {

constexpr char kOrigin[] = "crowdsec";
constexpr char kWho[] = "crowdsec bouncer";

// A ban this host's bouncer set (not one learned from a peer, not an operator's).
bool own_ban(const Ban &ban) { return ban.origin == kOrigin && !ban.remote; }

}  // namespace

bool StoreBanTarget::set_ban(const BanPrefix &prefix, int64_t duration_ns, const std::string &reason,
                             std::string *err) {
  Ban ban;
  ban.prefix = prefix;
  ban.expires_ns = mono_now_ns() + static_cast<uint64_t>(duration_ns);
  ban.reason = reason;
  ban.origin = kOrigin;
  ban.who = kWho;
  if (const auto existing = store_->find(prefix);
      existing && existing->origin != kOrigin && existing->expires_ns >= ban.expires_ns)
    return true;  // an operator's (or a peer's) longer ban of the same prefix stays as it is
  return store_->set(ban, err);
}

bool StoreBanTarget::lift_ban(const BanPrefix &prefix, bool *lifted, std::string *err) {
  *lifted = false;
  const auto existing = store_->find(prefix);
  if (!existing || !own_ban(*existing)) return true;
  return store_->remove(prefix, lifted, err);
}

std::vector<BanTarget::Current> StoreBanTarget::current_bans() {
  std::vector<Ban> bans;
  std::string err;
  std::vector<Current> out;
  if (!store_->list(&bans, &err, false)) return out;  // nothing adopted: the startup pull sets what is wanted
  const uint64_t now = mono_now_ns();
  for (const Ban &ban : bans)
    if (own_ban(ban) && ban.expires_ns > now) out.push_back({ban.prefix, ban.expires_ns, ban.reason});
  return out;
}

}  // namespace dt
