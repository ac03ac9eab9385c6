// daemon_events.cpp - the agent's events (docs/events.md): the bus, the --on-event command,
// and what tells them: the bans, the rules' attacks, the peers' liveness.
#include "bans/ban_command.h"
#include "cluster/cluster.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/runtime_files.h"
#include "daemon/daemon.h"
#include "daemon/escalation_driver.h"
#include "dataplane/dataplane.h"
#include "events/attack_watch.h"
#include "events/ban_events.h"
#include "events/command_runner.h"
#include "events/event_bus.h"

namespace dt {

// Before the query socket, whose EVENTS subscribers it serves.
bool Daemon::start_events() {
  const RunOptions &opt = config_.opt;
  EventBusConfig bc;
  bc.node_id = opt.node_id;
  bc.command = !opt.on_event_argv.empty();
  bc.queue_max = opt.on_event_queue;
  events_ = std::make_unique<EventBus>(bc);
  if (!bc.command) return true;
  CommandRunnerConfig rc;
  rc.argv = opt.on_event_argv;
  rc.jobs = opt.on_event_jobs;
  rc.timeout_ns = opt.on_event_timeout_ns;
  runner_ = std::make_unique<CommandRunner>(rc, *events_);
  DT_INFO("events: --on-event %s (at most %llu at once, killed after %.1fs, %llu queued at most)", opt.on_event.c_str(),
          static_cast<unsigned long long>(opt.on_event_jobs), opt.on_event_timeout_ns / 1e9,
          static_cast<unsigned long long>(opt.on_event_queue));
  return true;
}

// Once the bans are open and the cluster joined: the bans in force now are known (not
// told), attacks are watched, peers' liveness is told.
void Daemon::open_event_sources() {
  const RunOptions &opt = config_.opt;
  ban_events_ = std::make_unique<BanEvents>(*events_);
  ban_events_->prime(*ban_store_, mono_now_ns());
  attacks_ = std::make_unique<AttackWatch>(*events_, attack_config());
  if (escalation_) escalation_->set_on_ban([this](const AutoBan &b, const Ban *made) { tell_escalation(b, made); });
  if (query_bans_) query_ban_store_.store(query_bans_.get());
  events_json_file_ = RewrittenFile(runtime_files_.add(runtime_file(opt.pin_dir, kEventsStatusJson)));
  events_text_file_ = RewrittenFile(runtime_files_.add(runtime_file(opt.pin_dir, kEventsStatusText)));
  if (!cluster_) return;
  EventBus *bus = events_.get();
  cluster_->set_peer_events([bus](const std::string &node, bool up, const char *why, double silent_s) {
    Json f = {{"peer", node}};
    if (!up) f["why"] = why, f["silent_s"] = silent_s;
    bus->emit(up ? kEventPeerUp : kEventPeerDown, f, unix_now_ms());
  });
}

// An automatic ban (or dry run's would-ban): the "escalation" event, and the ban's own
// "ban" event with the rule and the offence (so the store's scan does not tell it bare).
void Daemon::tell_escalation(const AutoBan &b, const Ban *made) {
  const uint64_t now_ns = mono_now_ns(), now_ms = unix_now_ms();
  const uint64_t left_ms = b.expires_ns > now_ns ? (b.expires_ns - now_ns) / 1'000'000 : 0;
  Json f = {{"prefix", ban_prefix_text(b.prefix)},
            {"rule", b.rule},
            {"offence", b.offence},
            {"duration_s", b.duration_ns / 1'000'000'000},
            {"expires_unix_ms", now_ms + left_ms},
            {"dry_run", b.dry_run},
            {"over_s", static_cast<double>(b.over_ns / 1'000'000) / 1000.0},
            {"dropped", b.drops},
            {"evidence", b.evidence()}};
  events_->emit(kEventEscalation, f, now_ms);
  if (made) ban_events_->banned(*made, {{"rule", b.rule}, {"offence", b.offence}}, now_ns);
}

// --attack-drops and --attack-quiet, and the rules' own attack_drops (read again on reload).
AttackConfig Daemon::attack_config() const {
  AttackConfig ac;
  ac.drops_per_s = config_.opt.attack_drops;
  ac.quiet_ns = config_.opt.attack_quiet_ns;
  for (const PacketRule &r : config_.rules.set.rules)
    if (r.attack_drops >= 0) ac.per_rule[r.name] = static_cast<uint64_t>(r.attack_drops);
  return ac;
}

std::string Daemon::run_query_ban(const std::string &line, uint64_t now_ns, uid_t uid) {
  BanStore *store = query_ban_store_.load();
  if (!store) return "ERR the bans are not open yet\n";
  const std::string answer = run_ban_line(*store, line, static_cast<uint32_t>(uid), now_ns);
  BanCommand cmd;
  std::string err;
  if (answer == "OK\n" && parse_ban_line(line, &cmd, &err) && !cmd.unban)
    if (const auto b = store->find(cmd.prefix)) ban_events_->banned(*b, Json::object(), now_ns);
  return answer;
}

// Every 250 ms: the bans (changes by any process); every second: the rules' drops and
// the status files.
void Daemon::on_events_tick(uint64_t now_ns) {
  if (ban_events_) ban_events_->scan(*ban_store_, now_ns);
  if (attacks_ && events_ticks_++ % 4 == 0) {
    attacks_->poll(dp_->map_fds(), now_ns);
    const EventCounters c = events_->counters();
    events_json_file_.write(events_status_json(c) + "\n");
    events_text_file_.write(events_status_text(c) + "\n");
    if (!ticking_) publish_metrics();  // else each period publishes them
  }
  events_tick_.advance(now_ns);
}

}  // namespace dt
