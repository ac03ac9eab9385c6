// daemon_loop.cpp - the running agent's event loop and its handlers (setup: daemon.cpp).
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>
#include <zmq.hpp>

#include "cluster/cluster.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/program_name.h"
#include "daemon/daemon.h"
#include "daemon/escalation_driver.h"
#include "daemon/explain_watch.h"
#include "daemon/reload.h"
#include "dataplane/dataplane.h"
#include "dataplane/map_reader.h"
#include "events/attack_watch.h"
#include "events/command_runner.h"
#include "events/event_bus.h"
#include "host/synproxy.h"
#include "metrics/metrics.h"
#include "query/query_server.h"

namespace dt {
namespace {

constexpr uint64_t kSecond = 1'000'000'000ull;

}  // namespace

void FailOpenWatch::check(int stats_fd) {
  dt_stats st{};
  if (read_stats(stats_fd, &st) != 0) return;
  const uint64_t delta = st.fail_open - last_;
  last_ = st.fail_open;
  if (delta && !open_)
    DT_WARN(
        "fail-open: %llu packets passed without a decision in the last second (no policy, "
        "or the source table is full: see --max-sources)",
        static_cast<unsigned long long>(delta));
  if (!delta && open_) DT_INFO("fail-open ended: every packet is decided again");
  open_ = delta != 0;
}

void FailOpenWatch::reset(int stats_fd) {
  dt_stats st{};
  if (read_stats(stats_fd, &st) == 0) last_ = st.fail_open;
}

void Daemon::serve() {
  const RunOptions &opt = config_.opt;
  read_stats(dp_->stats_fd(), &prev_stats_);
  const uint64_t start = mono_now_ns();
  period_ = PeriodicTimer(opt.period_ns, start + opt.period_ns);
  status_ = PeriodicTimer(kSecond, start);  // written at the first period
  fail_open_check_ = PeriodicTimer(kSecond, start + kSecond);
  stats_log_ = PeriodicTimer(opt.stats_interval_ns, start + opt.stats_interval_ns);
  fail_open_.reset(dp_->stats_fd());
  events_tick_ = PeriodicTimer(250'000'000ull, start + 250'000'000ull);
  while (running_) {
    ticking_ = cluster_ || adaptive_->active();
    const Ready ready = wait_for_events();
    if (ready.signal) on_signal();
    if (ready.peer) on_peer_readable();  // each message timed as it is read
    if (ready.ring) on_ring_readable();
    const uint64_t now = mono_now_ns();  // after the drains: they can be held up for seconds
    if (runner_ && (ready.runner || now >= runner_->deadline())) runner_->poll(now);
    if (events_tick_.due(now)) on_events_tick(now);
    if (ticking_ && period_.due(now)) on_period(now);
    if (cluster_ && now >= cluster_->early_deadline()) cluster_->on_early_tick(now);
    explain_->poll(now);
    if (escalating() && now >= escalation_->deadline()) on_escalation_tick(now);
    if (fail_open_check_.due(now)) on_fail_open_check(now);
    if (stats_log_.due(now)) on_stats_log(now);
  }
}

// Polls the signals (and, with a cluster, the peer socket and the ring) until the
// earliest deadline of the timers that run.
Daemon::Ready Daemon::wait_for_events() {
  uint64_t due = std::min({stats_log_.deadline(), fail_open_check_.deadline(), events_tick_.deadline()});
  if (ticking_) due = std::min(due, period_.deadline());
  if (cluster_) due = std::min(due, cluster_->early_deadline());
  if (escalating()) due = std::min(due, escalation_->deadline());
  std::vector<zmq::pollitem_t> items = {{nullptr, signal_fd_, ZMQ_POLLIN, 0}};
  if (cluster_) {
    items.push_back({cluster_->poll_socket(), 0, ZMQ_POLLIN, 0});
    items.push_back({nullptr, cluster_->ring_fd(), ZMQ_POLLIN, 0});
  }
  const size_t first_runner = items.size();
  if (runner_) {
    due = std::min(due, runner_->deadline());
    for (const RunnerPollFd &p : runner_->poll_fds())
      items.push_back({nullptr, p.fd, static_cast<short>(p.out ? ZMQ_POLLOUT : ZMQ_POLLIN), 0});
  }
  try {
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(PeriodicTimer::timeout_ms(mono_now_ns(), due)));
  } catch (const zmq::error_t &e) {
    if (e.num() != EINTR) DT_WARN("poll: %s", e.what());
  }
  Ready r;
  r.signal = items[0].revents & ZMQ_POLLIN;
  r.peer = cluster_ && (items[1].revents & ZMQ_POLLIN);
  r.ring = cluster_ && (items[2].revents & ZMQ_POLLIN);
  for (size_t i = first_runner; i < items.size(); i++) r.runner = r.runner || items[i].revents != 0;
  return r;
}

void Daemon::on_signal() {
  signalfd_siginfo si{};
  while (read(signal_fd_, &si, sizeof si) == sizeof si) {
    if (si.ssi_signo == SIGHUP) {
      on_reload();
      continue;
    }
    if (si.ssi_signo == SIGUSR1) {
      explain_->on_request(mono_now_ns());
      continue;
    }
    DT_INFO("%s received: %s", si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM",
            config_.opt.keep ? "leaving the program attached and the maps pinned (--keep)"
                             : "detaching and removing the pins");
    running_ = false;
  }
}

// SIGHUP: the rules and the peers re-read; the outcome goes to the reload file as
// "<generation> <outcome>" for `agent reload`. "<generation> busy" first: a reload of a
// million-line list takes seconds (more on a loaded host), and `agent reload` waits
// for as long as the agent says it is at work, not a fixed 5 s.
void Daemon::on_reload() {
  reload_file_.write(std::to_string(reload_generation_ + 1) + " busy\n");
  const std::string outcome =
      reload_all({config_, rule_maps_, tags_, cluster_.get(), *adaptive_, synproxy_, synproxy_allowed_});
  if (ban_sync_) ban_sync_->set_allow_list(config_.rules.allow);
  if (escalation_) escalation_->configure(config_.rules);
  if (attacks_) attacks_->set_config(attack_config());
  // A reload file that cannot be written leaves `agent reload` waiting: it says why (unwritable_reason).
  if (!reload_file_.write(std::to_string(++reload_generation_) + " " + outcome + "\n"))
    DT_WARN("the reload happened (%s) but %s cannot learn it", outcome.c_str(), command_name("reload").c_str());
}

void Daemon::on_peer_readable() { cluster_->on_readable(); }

void Daemon::on_ring_readable() { cluster_->on_ring_readable(); }

void Daemon::on_period(uint64_t now_ns) {
  adaptive_->poll_signals(now_ns);  // before the report, which carries the factors
  if (cluster_) {
    const ClusterCounters &cc = cluster_->counters();
    const ReportCost before{0, cc.entries_sent, cc.messages_sent, cc.bytes_sent};
    const uint64_t t0 = mono_now_ns();
    cluster_->on_period(now_ns);
    adaptive_->on_period(now_ns, false);
    last_report_ = {mono_now_ns() - t0, cc.entries_sent - before.entries, cc.messages_sent - before.messages,
                    cc.bytes_sent - before.bytes};
    cluster_->tick_membership(now_ns);  // removed peers, refused CurveZMQ connections
  } else {
    adaptive_->on_period(now_ns, true);
  }
  publish_metrics();
  period_.advance(now_ns);
  if (status_.due(now_ns)) on_status(now_ns);
}

// The files `agent stats` reads, about once a second.
void Daemon::on_status(uint64_t now_ns) {
  if (!cluster_ && ban_sync_) ban_sync_->on_period(now_ns, 0);  // sweeps; nobody to announce to
  if (cluster_) {
    cluster_json_file_.write(cluster_->status_json(now_ns) + "\n");
    cluster_text_file_.write(cluster_->status_text(now_ns));
  }
  if (adaptive_->active()) {
    adaptive_json_file_.write(adaptive_->status_json(now_ns) + "\n");
    adaptive_text_file_.write(adaptive_->status_text(now_ns));
  }
  status_.advance(now_ns);
}

void Daemon::on_fail_open_check(uint64_t now_ns) {
  fail_open_.check(dp_->stats_fd());
  on_escalation_check(now_ns);
  // Without report periods, the query socket's counters reach the metrics from here.
  if ((query_ || (escalation_ && escalation_->active())) && !ticking_) publish_metrics();
  fail_open_check_.advance(now_ns);
}

// An escalation check. The bans it made go to the peers now, not with the next period's
// messages: a source crossing `after` is banned on every host within the check's period.
void Daemon::on_escalation_tick(uint64_t now_ns) {
  escalation_->tick(now_ns);
  if (cluster_) cluster_->publish_bans(now_ns);
}

bool Daemon::escalating() const { return escalation_ && escalation_->active(); }

// Repeat offenders' status files (daemon/escalation_driver.h), about once a second; the
// checks run on the driver's own deadline (every period, and when a ban is due).
void Daemon::on_escalation_check(uint64_t) {
  if (!escalating()) return;
  escalation_json_file_.write(escalation_->status_json() + "\n");
  escalation_text_file_.write(escalation_->status_text());
}

void Daemon::on_stats_log(uint64_t now_ns) {
  log_counters();
  if (cluster_) cluster_->log_summary();
  stats_log_.advance(now_ns);
}

// The last words; the members then go in the order daemon.h gives them.
void Daemon::on_exit() {
  log_counters();
  if (cluster_) cluster_->log_summary();
  if (escalation_) escalation_->on_exit(config_.opt.keep);
  if (!config_.opt.keep) return;
  dp_->keep_on_exit();
  if (synproxy_) synproxy_->keep_on_exit();  // the kept program goes on answering with cookies
}

// The loop's state for the metrics server, copied (never shared). The last report's
// cost describes the last period.
void Daemon::publish_metrics() {
  if (!metrics_) return;
  MetricsSnapshot s;
  if (cluster_) {
    s.cluster = true;
    s.counters = cluster_->counters();
    s.peers = cluster_->tracker().peers();
    s.last_period_seconds = last_report_.took_ns / 1e9;
    s.last_report_entries = last_report_.entries;
    s.last_report_messages = last_report_.messages;
    s.last_report_bytes = last_report_.bytes;
  }
  s.adaptive = adaptive_->status(mono_now_ns());
  if (escalation_) s.escalation = escalation_->status();
  if (events_) s.events = true, s.event_counters = events_->counters();
  if (query_) {
    s.query = true;
    s.query_counters = query_->counters();
    s.tag_buckets = tags_.size();
  }
  metrics_->publish(s);
}

void Daemon::log_counters() {
  dt_stats now{};
  if (int rc = read_stats(dp_->stats_fd(), &now); rc != 0) {
    DT_WARN("cannot read the stats map: %s", strerror(-rc));
    return;
  }
  const dt_stats &prev = prev_stats_;
  // Every counter with a label (abi/stats.h's DT_STATS_FIELDS), passed and dropped with their increase.
  std::string line;
  auto add = [&line](const char *label, uint64_t v) {
    line += (line.empty() ? "" : " ") + std::string(label) + " " + std::to_string(v);
  };
#define DT_LOG_FIELD(field, label, metric, help) \
  if (label[0]) add(label, now.field); \
  if (&now.field == &now.passed || &now.field == &now.dropped) \
    line += " (+" + std::to_string(now.field - prev.field) + ")";
  DT_STATS_FIELDS(DT_LOG_FIELD)
#undef DT_LOG_FIELD
  DT_INFO("%s", line.c_str());
  prev_stats_ = now;
}

}  // namespace dt
