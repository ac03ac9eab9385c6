// bouncer.h - the CrowdSec bouncer's loop: pull the decision stream (lapi_client.h), read it
// (decisions.h), decide (stream_state.h) and make the changes on a BanTarget.
#pragma once

#include <csignal>
#include <cstdint>
#include <string>
#include <vector>

#include "bans/ban_policy.h"
#include "crowdsec/decisions.h"
#include "crowdsec/lapi_client.h"
#include "crowdsec/stream_state.h"

namespace dt {

// Where the bouncer's bans go: an agent's ban maps (through its pins).
class BanTarget {
 public:
  virtual ~BanTarget() = default;
  // Bans `prefix` for duration_ns from now, as the CrowdSec bouncer, with `reason`. Setting a
  // prefix that is banned already replaces that ban (bans are keyed by prefix).
  virtual bool set_ban(const BanPrefix &prefix, int64_t duration_ns, const std::string &reason, std::string *err) = 0;
  // Lifts the ban of `prefix` if the CrowdSec bouncer set it (one an operator set stays);
  // *lifted: whether there was one to lift.
  virtual bool lift_ban(const BanPrefix &prefix, bool *lifted, std::string *err) = 0;
  // The bans in force that the CrowdSec bouncer set (this process or an earlier one).
  struct Current {
    BanPrefix prefix;
    uint64_t expires_ns = 0;  // CLOCK_MONOTONIC
    std::string reason;
  };
  virtual std::vector<Current> current_bans() = 0;
  // The never-ban set (bans/never_ban.h) read again (before each pull's changes); false
  // with *err if it cannot be (the last one read stays).
  virtual bool refresh_never_ban(std::string *) { return true; }
  // Whether a ban of `prefix` would cover a peer, a hub or the allow list (*what says which).
  virtual bool never_ban(const BanPrefix &, std::string *) { return false; }
};

struct BouncerConfig {
  LapiUrl lapi;
  std::string api_key;
  StreamTiming timing;
  StreamLimits stream_limits;
  LapiLimits lapi_limits;
  BanMinPrefix min_prefix;  // decisions on wider ranges are refused (--min-prefix)
};

// Runs until *stop is set (a signal handler's flag); returns the exit code (0).
int run_bouncer(const BouncerConfig &config, BanTarget &target, const volatile std::sig_atomic_t *stop);

}  // namespace dt
