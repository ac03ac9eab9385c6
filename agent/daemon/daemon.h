// daemon.h - the running agent: set up in named steps, then one event loop until SIGINT
// or SIGTERM. The steps: signals, metrics port, query socket, dataplane loaded, rules and
// lists into its maps, the SYNPROXY table of syn_cookies rules, attached (so all are in
// force from the first packet), adaptive
// limits, capabilities dropped (daemon/privileges.h), cluster, metrics served; the
// events: signals, peer reports, the active-source ring, timers (report period, status
// files, fail-open check, stats log).
//
// Order matters twice:
//   setup     the metrics port and the query socket are bound before the dataplane is
//             touched: a busy port must not make a restarted agent take over the
//             throttle and then tear it down. Once the dataplane is open, a failure
//             leaves a taken-over throttle attached and pinned for the next attempt.
//   teardown  members go in reverse declaration order (see the members below): the
//             metrics server stops before anything it reads, the cluster before the
//             adaptive limits and the tag table it feeds, the runtime files are removed
//             while the dataplane (and its lock) is still there.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "bans/ban_sync.h"
#include "common/files.h"
#include "common/no_copy.h"
#include "common/periodic_timer.h"
#include "daemon/adaptive_driver.h"
#include "daemon/run_config.h"
#include "daemon/verify_command.h"
#include "dataplane/policy.h"
#include "dthrottle/common.h"
#include "rules/tags.h"

namespace dt {

class AttackWatch;
struct AttackConfig;
struct AutoBan;
class BanEvents;
class Cluster;
class EscalationDriver;
class CommandRunner;
class EventBus;
class ExplainWatch;
class Dataplane;
class MetricsServer;
class QueryServer;

// Logs when packets start or stop passing without a decision (fail-open: no policy,
// or no bucket could be had because the map is full), checked about once a second.
class HostSynproxy;

class FailOpenWatch {
 public:
  void check(int stats_fd);
  void reset(int stats_fd);

 private:
  uint64_t last_ = 0;
  bool open_ = false;
};

class Daemon : NoCopy {
 public:
  // `config` has passed load_run_config.
  explicit Daemon(RunConfig config);
  ~Daemon();

  // Sets up, serves until SIGINT or SIGTERM and returns the exit status: 0, 1 for a
  // runtime failure, 2 for a configuration error.
  int run();

 private:
  // Setup steps, in order; each false (with exit_code_ set, the reason logged) on failure.
  bool setup();
  bool bind_signals();
  bool bind_metrics();
  bool install_tag_rules();
  bool start_events();  // the event bus and the --on-event command (daemon_events.cpp)
  bool start_query();
  size_t query_connection_cap() const;
  bool open_dataplane();
  bool publish_rules();     // config flags, rules and lists into the maps (not attached yet)
  bool install_synproxy();  // the host's SYNPROXY table for syn_cookies rules (host/synproxy.h)
  bool attach_dataplane();
  bool start_adaptive();
  bool keep_needed_privileges();
  bool open_bans();
  bool join_cluster();
  void set_tag_hooks();
  void open_event_sources();  // bans, attacks and peers into the bus, once they exist
  AttackConfig attack_config() const;
  void tell_escalation(const AutoBan &b, const Ban *made);
  // The query socket's BAN and UNBAN (bans/ban_command.h), on the query thread.
  std::string run_query_ban(const std::string &line, uint64_t now_ns, uid_t uid);
  void serve_metrics();
  // A failure before the dataplane is open (exit status 1).
  bool runtime_failure(const std::string &msg);
  // A failure once it is open: keeps a taken-over throttle attached (exit status 1).
  bool fail(const std::string &msg);

  // The event loop: waits for the next event or deadline, then one handler per event.
  struct Ready {
    bool signal = false, peer = false, ring = false, runner = false;
  };
  void serve();
  Ready wait_for_events();
  void start_explain();
  void on_signal();
  void on_reload();
  void on_peer_readable();
  void on_ring_readable();
  void on_period(uint64_t now_ns);
  void on_status(uint64_t now_ns);
  void on_fail_open_check(uint64_t now_ns);
  void on_escalation_tick(uint64_t now_ns);  // and the bans it made announced to the peers
  void on_escalation_check(uint64_t now_ns);
  bool escalating() const;  // some rule escalates: the driver's checks run
  void on_stats_log(uint64_t now_ns);
  void on_events_tick(uint64_t now_ns);  // bans and attacks looked at; the status files
  void on_exit();

  // The one place the metrics snapshot is built and published.
  void publish_metrics();
  void log_counters();

  // What the last period's report cost (for the metrics).
  struct ReportCost {
    uint64_t took_ns = 0;
    uint64_t entries = 0, messages = 0, bytes = 0;
  };

  // Declared in the order they must outlive each other (destroyed bottom up).
  RunConfig config_;                       // the options, and the rules in force (reload replaces them)
  int signal_fd_ = -1;                     // closed by ~Daemon, before any member goes
  TagTable tags_;                          // read by the query thread, the cluster and the adaptive limits
  BusyRelay busy_relay_;                   // BUSY lines reach the adaptive rules once they exist
  VerifyCommand verify_;                   // VERIFY lines reach the verified map once it is open
  std::unique_ptr<EventBus> events_;       // events (docs/events.md): the query thread subscribes to it
  std::unique_ptr<CommandRunner> runner_;  // --on-event (null without it)
  std::unique_ptr<BanEvents> ban_events_;  // the query thread's BAN tells it
  std::unique_ptr<AttackWatch> attacks_;
  std::unique_ptr<BanStore> query_bans_;              // the query thread's own store (its own flock)
  std::atomic<BanStore *> query_ban_store_{nullptr};  // published once open
  std::unique_ptr<QueryServer> query_;
  std::unique_ptr<Dataplane> dp_;
  std::unique_ptr<HostSynproxy> synproxy_;  // null without syn_cookies rules
  bool synproxy_allowed_ = false;           // CAP_NET_ADMIN kept for it (a reload may install it again)
  RuleMaps rule_maps_;
  std::unique_ptr<AdaptiveDriver> adaptive_;  // reads the dataplane and the tag table
  std::unique_ptr<BanStore> ban_store_;       // the pinned bans (docs/bans.md): swept, and synced by the cluster
  std::unique_ptr<BanSync> ban_sync_;
  std::unique_ptr<EscalationDriver> escalation_;  // repeat offenders banned (rules with escalate)
  RemoveOnExit runtime_files_;                    // status and reload files: gone while the dataplane's lock is held
  std::unique_ptr<Cluster> cluster_;              // reads the tag table and the adaptive limits
  std::unique_ptr<ExplainWatch> explain_;         // reads the cluster
  std::unique_ptr<MetricsServer> metrics_;        // its threads read the maps: stops first

  // The loop's state.
  // Runtime files (runtime_files.h): a failed write is logged (once while it lasts).
  RewrittenFile reload_file_, adaptive_json_file_, adaptive_text_file_, cluster_json_file_, cluster_text_file_;
  RewrittenFile escalation_json_file_, escalation_text_file_;
  uint64_t reload_generation_ = 0;
  PeriodicTimer period_, status_, fail_open_check_, stats_log_, events_tick_;
  RewrittenFile events_json_file_, events_text_file_;
  unsigned events_ticks_ = 0;
  FailOpenWatch fail_open_;
  dt_stats prev_stats_{};
  ReportCost last_report_;
  bool ticking_ = false;  // report periods run (a cluster, or adaptive rules), as of this loop turn
  bool running_ = true;
  int exit_code_ = 0;
};

}  // namespace dt
