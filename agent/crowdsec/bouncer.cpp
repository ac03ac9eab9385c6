// bouncer.cpp - the bouncer's loop: a pull when one is due, its changes made on the ban
// target, failures logged at a bounded rate; sleeps in short steps so a stop is prompt.
#include "crowdsec/bouncer.h"

#include <time.h>

#include <algorithm>
#include <cinttypes>

#include "common/clock.h"
#include "common/log.h"

namespace dt {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

std::string seconds_text(uint64_t ns) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ns) / kSecond);
  return buf;
}

class Bouncer {
 public:
  Bouncer(const BouncerConfig &config, BanTarget &target, const volatile std::sig_atomic_t *stop)
      : config_(config),
        target_(target),
        stop_(stop),
        stream_(config.timing),
        client_(config.lapi, config.api_key, config.lapi_limits, [stop] { return !*stop; }) {}

  int run();

 private:
  void adopt_current_bans();
  void pull(uint64_t now);
  void apply(const std::vector<BanChange> &changes, uint64_t now, unsigned *set, unsigned *lifted);
  bool refuses(const BanChange &change, uint64_t now);
  void log_batch(bool startup, const StreamBatch &batch, unsigned set, unsigned lifted);
  void sleep_until(uint64_t deadline_ns);

  const BouncerConfig &config_;
  BanTarget &target_;
  const volatile std::sig_atomic_t *stop_;
  DecisionStream stream_;
  LapiClient client_;
  LogLimiter failure_log_{60 * kSecond, 5};  // a LAPI down for hours: a few lines a minute
  LogLimiter change_log_{kSecond, 20};       // a startup pull of thousands: a summary and 20 lines
  LogLimiter refuse_log_{10 * kSecond, 5};   // decisions refused (too wide, never-ban)
  bool answered_ = false;                    // the LAPI has answered once
  unsigned refused_ = 0;                     // in the current pull
};

void Bouncer::adopt_current_bans() {
  const auto current = target_.current_bans();
  for (const auto &ban : current) stream_.adopt(ban.prefix, ban.expires_ns, ban.reason);
  if (!current.empty())
    DT_INFO("%zu bans from an earlier CrowdSec bouncer are in force: kept until the LAPI says otherwise",
            current.size());
}

// A ban the policy refuses (counted, logged at a bounded rate): a range wider than
// --min-prefix, or one covering a peer, a hub or the allow list (bans/never_ban.h).
bool Bouncer::refuses(const BanChange &change, uint64_t now) {
  std::string why;
  if (ban_too_wide(change.prefix, config_.min_prefix))
    why = "wider than --min-prefix " + ban_min_prefix_text(config_.min_prefix);
  else if (std::string what; target_.never_ban(change.prefix, &what)) why = "it covers " + what + " (never banned)";
  else return false;
  refused_++;
  log_limited(refuse_log_, LogLevel::Warn, now, "refused the ban of %s: %s", ban_prefix_text(change.prefix).c_str(),
              why.c_str());
  return true;
}

void Bouncer::apply(const std::vector<BanChange> &changes, uint64_t now, unsigned *set, unsigned *lifted) {
  refused_ = 0;
  if (std::string err; !target_.refresh_never_ban(&err))
    log_limited(failure_log_, LogLevel::Warn, now, "cannot read the never-ban set (peers, hubs, allow list): %s",
                err.c_str());
  for (const BanChange &change : changes) {
    if (change.kind == BanChange::Kind::Set && refuses(change, now)) continue;
    const std::string text = ban_prefix_text(change.prefix);
    std::string err;
    bool ok = false, was_there = false;
    if (change.kind == BanChange::Kind::Set) {
      ok = target_.set_ban(change.prefix, change.duration_ns, change.reason, &err);
      if (ok)
        (*set)++, log_limited(change_log_, LogLevel::Info, now, "ban %s for %s: %s", text.c_str(),
                              seconds_text(change.duration_ns).c_str(), change.reason.c_str());
    } else {
      ok = target_.lift_ban(change.prefix, &was_there, &err);
      if (ok && was_there) (*lifted)++, log_limited(change_log_, LogLevel::Info, now, "unban %s", text.c_str());
    }
    if (!ok) {
      log_limited(failure_log_, LogLevel::Error, now, "cannot %s %s: %s (tried again at the next startup pull)",
                  change.kind == BanChange::Kind::Set ? "ban" : "unban", text.c_str(), err.c_str());
      stream_.on_change_failed(change, now);
    }
  }
}

void Bouncer::log_batch(bool startup, const StreamBatch &batch, unsigned set, unsigned lifted) {
  const StreamCounts &c = batch.counts;
  const uint64_t ignored = c.other_type + c.other_scope + c.invalid + c.over_limit;
  if (!startup && set == 0 && lifted == 0 && ignored == 0 && refused_ == 0) return;
  DT_INFO(
      "%s pull: %zu new and %zu deleted ban decisions, %u bans set, %u lifted, %u refused, %zu held; ignored: "
      "%" PRIu64 " not bans, %" PRIu64 " other scopes, %" PRIu64 " invalid, %" PRIu64 " over the limit%s%s",
      startup ? "startup" : "delta", batch.added.size(), batch.deleted.size(), set, lifted, refused_, stream_.held(),
      c.other_type, c.other_scope, c.invalid, c.over_limit,
      batch.first_problem.empty() ? "" : "; first invalid: ", batch.first_problem.c_str());
}

void Bouncer::pull(uint64_t now) {
  const bool startup = stream_.startup_next();
  LapiAnswer answer = client_.pull(startup);
  StreamBatch batch;
  if (answer.ok && !parse_decision_stream(answer.body, config_.stream_limits, &batch, &answer.error)) answer.ok = false;
  answer.body = std::string();  // the batch holds what counts
  now = mono_now_ns();
  if (!answer.ok) {
    if (*stop_) return;
    stream_.on_failure(now);
    log_limited(failure_log_, LogLevel::Warn, now, "LAPI pull failed (%u in a row): %s; %zu bans kept, next try in %s",
                stream_.failures(), answer.error.c_str(), stream_.held(),
                seconds_text(stream_.next_pull_ns() - now).c_str());
    return;
  }
  if (!answered_ || startup) DT_INFO("LAPI %s answers", config_.lapi.scheme_host_port.c_str());
  answered_ = true;
  unsigned set = 0, lifted = 0;
  apply(stream_.on_pull(batch, now), now, &set, &lifted);
  log_batch(startup, batch, set, lifted);
}

void Bouncer::sleep_until(uint64_t deadline_ns) {
  for (uint64_t now = mono_now_ns(); now < deadline_ns && !*stop_; now = mono_now_ns()) {
    const uint64_t step = std::min<uint64_t>(deadline_ns - now, 100'000'000);  // a stop waits at most 0.1 s
    const timespec ts{static_cast<time_t>(step / kSecond), static_cast<long>(step % kSecond)};
    nanosleep(&ts, nullptr);
  }
}

int Bouncer::run() {
  adopt_current_bans();
  while (!*stop_) {
    const uint64_t now = mono_now_ns();
    stream_.expire(now);
    if (now < stream_.next_pull_ns()) {
      sleep_until(stream_.next_pull_ns());
      continue;
    }
    pull(now);
  }
  DT_INFO("stopping: %zu CrowdSec bans stay in force until they expire", stream_.held());
  return 0;
}

}  // namespace

int run_bouncer(const BouncerConfig &config, BanTarget &target, const volatile std::sig_atomic_t *stop) {
  Bouncer bouncer(config, target, stop);
  return bouncer.run();
}

}  // namespace dt
