// daemon.cpp - the running agent: setup steps, the event loop and its handlers.
#include "daemon/daemon.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <zmq.hpp>

#include "cluster/cluster.h"
#include "cluster/boot_counter.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/runtime_files.h"
#include "daemon/explain_watch.h"
#include "daemon/lists_install.h"
#include "daemon/privileges.h"
#include "daemon/reload.h"
#include "dataplane/dataplane.h"
#include "dataplane/map_reader.h"
#include "metrics/metrics.h"
#include "query/query_listen.h"
#include "query/query_server.h"
#include "common/program_name.h"

namespace dt {
namespace {

constexpr uint64_t kSecond = 1'000'000'000ull;

TagTable::Options tag_table_options(const RunOptions &opt) {
  TagTable::Options o;
  o.max_buckets = opt.max_tags;
  return o;
}

RuleMaps rule_maps_of(const Dataplane &dp) {
  RuleMaps m;
  m.policy_fd = dp.policy_fd();
  m.config_fd = dp.config_fd();
  m.rules_fd[0] = dp.rules_fd(0);
  m.rules_fd[1] = dp.rules_fd(1);
  m.names_fd = dp.rule_names_fd();
  m.prefix_fd = dp.prefix_policy_fd();
  m.cond_fd = dp.rule_cond_fd();
  m.lists = ListMapFds{dp.lists_v4_fd(), dp.lists_v6_fd()};
  return m;
}

}  // namespace

void FailOpenWatch::check(int stats_fd) {
  dt_stats st{};
  if (read_stats(stats_fd, &st) != 0) return;
  const uint64_t delta = st.fail_open - last_;
  last_ = st.fail_open;
  if (delta && !open_) DT_WARN("fail-open: %llu packets passed without a decision in the last second (no policy, "
                               "or the source table is full: see --max-sources)",
                               static_cast<unsigned long long>(delta));
  if (!delta && open_) DT_INFO("fail-open ended: every packet is decided again");
  open_ = delta != 0;
}

void FailOpenWatch::reset(int stats_fd) {
  dt_stats st{};
  if (read_stats(stats_fd, &st) == 0) last_ = st.fail_open;
}

Daemon::Daemon(RunConfig config) : config_(std::move(config)), tags_(tag_table_options(config_.opt)) {}

Daemon::~Daemon() {
  if (signal_fd_ >= 0) close(signal_fd_);
  // The members go now, in reverse declaration order (see daemon.h).
}

int Daemon::run() {
  if (!setup()) return exit_code_;
  serve();
  on_exit();
  return 0;
}

// --- setup ---------------------------------------------------------------------------

bool Daemon::setup() {
  // The metrics port and the query socket first: nothing is lost if they are taken.
  if (!bind_signals() || !bind_metrics() || !install_tag_rules() || !start_query()) return false;
  // The rules and lists go into the maps before the program is attached: in force from
  // its first packet (a 1M-line list takes seconds to load).
  if (!open_dataplane() || !publish_rules() || !attach_dataplane() || !open_bans() || !start_adaptive())
    return false;
  // Attached, pinned, the first runtime files made: what is left needs (almost) no
  // capability. Before the cluster, whose ZeroMQ threads block every signal.
  if (!keep_needed_privileges() || !join_cluster()) return false;
  start_explain();
  serve_metrics();
  return true;
}

bool Daemon::runtime_failure(const std::string &msg) {
  DT_ERROR("%s", msg.c_str());
  exit_code_ = 1;
  return false;
}

bool Daemon::fail(const std::string &msg) {
  // Not tearing down a throttle this agent took over from a crashed one: it stays
  // attached and pinned for the next attempt.
  if (dp_->took_over()) dp_->keep_on_exit();
  return runtime_failure(msg);
}

// Signals arrive through a file descriptor polled with the peer socket.
bool Daemon::bind_signals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  sigaddset(&sigs, SIGUSR1);  // agent explain
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signal_fd_ = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) return runtime_failure(std::string("signalfd: ") + strerror(errno));
  return true;
}

// Bound before the dataplane is touched: a busy port must not make a restarted agent
// take over the throttle and then tear it down.
bool Daemon::bind_metrics() {
  const RunOptions &opt = config_.opt;
  if (opt.metrics_host.empty()) return true;
  std::string err;
  metrics_ = MetricsServer::bind({opt.metrics_host, opt.metrics_port}, &err);
  return metrics_ ? true : runtime_failure(err);
}

// Tags of the query socket: their buckets live here, in the agent (not in XDP). The
// rules passed load_run_config; the table's own check has the last word.
bool Daemon::install_tag_rules() {
  std::string err;
  if (check_strict(config_.tag_rules, config_.opt, &err) && tags_.replace_rules(config_.tag_rules, &err)) return true;
  fprintf(stderr, "%s: %s\n", program_name().c_str(), err.c_str());
  exit_code_ = 2;
  return false;
}

// Bound before the dataplane too, for the same reason as the metrics port.
bool Daemon::start_query() {
  const RunOptions &opt = config_.opt;
  if (opt.query_socket.empty() && opt.query_listen.empty()) return true;
  QueryServerConfig qc;
  qc.unix_path = opt.query_socket;
  qc.tcp_listen = opt.query_listen;
  qc.unix_mode = opt.query_socket_mode;
  qc.unix_gid = opt.query_socket_gid;
  qc.admin_uids.assign(opt.query_admin_uids.begin(), opt.query_admin_uids.end());
  qc.idle_timeout_ns = opt.query_idle_timeout_ns;
  qc.max_connections = query_connection_cap();
  qc.max_reserve_wait_ns = opt.query_max_wait_ns;
  qc.redis_address = opt.redis;
  qc.redis_timeout_ns = opt.redis_timeout_ns;
  qc.busy = [this](std::string_view name, uint64_t now_ns) { return busy_relay_.busy(name, now_ns); };
  std::string err;
  query_ = QueryServer::start(qc, tags_, &err);
  if (!query_) return runtime_failure("query socket: " + err);
  if (!opt.query_socket.empty())
    DT_INFO("query socket %s: mode %04o, group %u; admin commands (BUSY) from root, the agent's uid and %zu "
            "--query-admin-uids; idle connections closed after %.0f s", opt.query_socket.c_str(),
            opt.query_socket_mode, static_cast<unsigned>(opt.query_socket_gid), opt.query_admin_uids.size(),
            opt.query_idle_timeout_ns / 1e9);
  if (opt.query_insecure)
    DT_WARN("query socket: %s is served without authentication (--query-insecure): anyone who reaches it can "
            "spend any tag's budget", opt.query_listen.c_str());
  DT_INFO("query socket: %s%s%s (%zu tag rules%s%s)", opt.query_socket.c_str(),
          !opt.query_socket.empty() && !opt.query_listen.empty() ? " and " : "", opt.query_listen.c_str(),
          config_.tag_rules.size(), opt.redis.empty() ? "" : "; strict ones decided by redis ", opt.redis.c_str());
  return true;
}

// --query-max-connections within the descriptor limit, leaving the rest of the agent
// its reserve: refusing a new connection beats failing a map read or a peer's link.
size_t Daemon::query_connection_cap() const {
  const RunOptions &opt = config_.opt;
  rlimit rl{};
  const uint64_t nofile = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : 1u << 20;
  const size_t reserve = query_fd_reserve(config_.peers.size() + opt.hubs.size());
  const size_t cap = clamp_connections(opt.query_max_connections, nofile, reserve);
  if (cap < opt.query_max_connections)
    DT_WARN("query socket: at most %zu connections, not %llu: the descriptor limit is %llu and %zu are kept for "
            "the maps, ZeroMQ, metrics and files (raise LimitNOFILE= or ulimit -n to allow more)",
            cap, static_cast<unsigned long long>(opt.query_max_connections),
            static_cast<unsigned long long>(nofile), reserve);
  return cap;
}

bool Daemon::open_dataplane() {
  const RunOptions &opt = config_.opt;
  DataplaneConfig dc{opt.iface, opt.pin_dir, opt.mode, opt.max_sources, opt.max_sources_explicit};
  dc.hook = opt.hook;
  const char *clsact = getenv("DTHROTTLE_TC_CLSACT");  // tests: the path of kernels without tcx
  dc.force_clsact = clsact && strcmp(clsact, "1") == 0;
  std::string err;
  dp_ = Dataplane::open(dc, &err);
  return dp_ ? true : runtime_failure(err);
}

bool Daemon::publish_rules() {
  const RunOptions &opt = config_.opt;
  // Announcements (and the peers' exemption) are turned on later by whoever needs
  // them (the cluster, adaptive rules): a crashed agent's setting must not linger and
  // fill a ring nobody drains.
  // --dry-run reaches the checks before the rules (lists, bans) through DT_CFG_DRY_RUN.
  const uint32_t set = (opt.coarse_clock ? DT_CFG_COARSE_CLOCK : 0) | (opt.dry_run ? DT_CFG_DRY_RUN : 0);
  if (int rc = update_config_flags(dp_->config_fd(), set,
                                   (~set & (DT_CFG_COARSE_CLOCK | DT_CFG_DRY_RUN)) | DT_CFG_REPORT | DT_CFG_EXEMPT,
                                   coarse_clock_lag_ns());
      rc != 0)
    return fail(std::string("cannot write the config map: ") + strerror(-rc));
  rule_maps_ = rule_maps_of(*dp_);
  const LoadedRules &rules = config_.rules;
  if (int rc = dt::publish_rules(rule_maps_, rules.compiled.policies, rules.compiled.lpm, rules.names,
                                   rules.compiled.prefix, rules.compiled.cond);
      rc != 0)
    return fail(std::string("cannot write the rules to the maps: ") + strerror(-rc));
  if (std::string err; !install_lists(rule_maps_.lists, rules, nullptr, &err)) return fail(err);
  return true;
}

bool Daemon::attach_dataplane() {
  const RunOptions &opt = config_.opt;
  if (std::string err; !dp_->attach(&err)) return runtime_failure(err);
  DT_INFO("%s dthrottle on %s (%s): %s; up to %u sources, pinned in %s",
          dp_->took_over() ? "took over" : "attached", opt.iface.c_str(), dp_->hook_desc().c_str(),
          describe_run_rules(config_).c_str(), dp_->max_sources(), dp_->pin_dir().c_str());
  if (const std::string dry = describe_dry_run(config_); !dry.empty()) DT_INFO("%s", dry.c_str());
  return true;
}

// The bans pinned beside the maps (kept from a previous agent): swept here, synced with
// the peers by the cluster.
bool Daemon::open_bans() {
  std::string err;
  ban_store_ = BanStore::open(dp_->pin_dir(), &err);
  if (!ban_store_) return fail("bans: " + err);
  ban_sync_ = std::make_unique<BanSync>(*ban_store_, config_.opt.node_id);
  ban_sync_->set_policy(config_.opt.peer_bans);
  ban_sync_->set_allow_list(config_.rules.allow);  // never banned by a peer (bans/never_ban.h)
  std::vector<Ban> bans;
  if (ban_store_->list(&bans, &err, false) && !bans.empty()) DT_INFO("bans: %zu kept from before", bans.size());
  return true;
}

bool Daemon::start_adaptive() {
  const RunOptions &opt = config_.opt;
  adaptive_ = std::make_unique<AdaptiveDriver>(*dp_, rule_maps_, tags_, &busy_relay_);
  std::string err;
  if (!adaptive_->configure(config_.rules, tags_.rules(), !opt.cluster(), opt.period_ns, &err))
    return fail("adaptive rules: " + err);
  adaptive_json_file_ = RewrittenFile(runtime_files_.add(runtime_file(opt.pin_dir, kAdaptiveStatusJson)));
  adaptive_text_file_ = RewrittenFile(runtime_files_.add(runtime_file(opt.pin_dir, kAdaptiveStatusText)));
  reload_file_ = RewrittenFile(runtime_files_.add(runtime_file(opt.pin_dir, kReloadFile)));
  reload_file_.write("0 ok " + describe_run_rules(config_) + "\n");
  return true;
}

// The capabilities the rest of the agent's life needs (daemon/privileges.h), and no more.
bool Daemon::keep_needed_privileges() {
  PrivilegeNeeds needs;
  needs.clsact_detach = dp_->tc_how() == TcHow::Clsact && !config_.opt.keep;
  needs.bpf_gated = bpf_commands_need_cap_bpf(dp_->stats_fd());
  needs.new_maps = true;  // any reload may load a list (daemon/lists_install.h): its trie is a new map
  const std::vector<KeptCapability> keep = capabilities_to_keep(needs);
  std::string warning, err;
  if (!drop_privileges(keep, &warning, &err)) return fail(err);
  if (!warning.empty()) DT_WARN("%s", warning.c_str());
  DT_INFO("capabilities kept: %s; every other one dropped (effective, permitted%s), no_new_privs set",
          describe_capabilities(keep).c_str(), warning.empty() ? ", bounding" : "");
  return true;
}

// agent explain's requests: answered from the peers' reports (with a cluster) or at once.
void Daemon::start_explain() {
  const std::string &pin_dir = config_.opt.pin_dir;
  runtime_files_.add(runtime_file(pin_dir, kExplainRequest));
  runtime_files_.add(runtime_file(pin_dir, kExplainAnswer));
  explain_ = std::make_unique<ExplainWatch>(pin_dir, cluster_.get());
}

bool Daemon::join_cluster() {
  const RunOptions &opt = config_.opt;
  if (!opt.cluster()) return true;
  ClusterConfig cc;
  cc.peers = config_.peers;
  cc.hubs = opt.hubs;
  cc.listen = opt.listen;
  cc.period_ns = opt.period_ns;
  cc.down_after_ns = opt.down_after_ns;
  cc.report_max_age_ns = opt.report_max_age_ns;
  cc.owner_scheme = !opt.report_mesh;
  cc.early_report_ns = opt.early_report_ns == 0 ? opt.period_ns / 4 : opt.early_report_ns == UINT64_MAX ? 0 : opt.early_report_ns;
  cc.node_id = opt.node_id;
  cc.curve_key_file = opt.curve_key;
  cc.curve_peers_dir = opt.curve_peers;
  cc.boot_file = choose_boot_file(opt.curve_key, runtime_file(opt.pin_dir, kBootCounterFile));
  std::string err;
  cluster_ = Cluster::create(cc, *dp_, &err);
  if (!cluster_) return fail(err);
  cluster_json_file_ = RewrittenFile(runtime_files_.add(runtime_file(opt.pin_dir, kClusterStatusJson)));
  cluster_text_file_ = RewrittenFile(runtime_files_.add(runtime_file(opt.pin_dir, kClusterStatusText)));
  cluster_->set_rules(config_.rules.names, config_.rules.throttles);
  cluster_->set_rule_bursts(rule_burst_hits(config_.rules.compiled.policies));
  cluster_->set_prefix_levels(prefix_level_keys(config_.rules));
  cluster_->set_dest_rules(dest_rule_ids(config_.rules));
  cluster_->set_adaptive(&adaptive_->set());
  cluster_->set_bans(ban_sync_.get());
  set_tag_hooks();
  DT_INFO("cluster: node %s, listening on %s, %zu peers, %zu hubs, reports every %.0f ms", opt.node_id.c_str(),
          opt.listen.empty() ? "(none)" : opt.listen.c_str(), config_.peers.size(), opt.hubs.size(),
          opt.period_ns / 1e6);
  return true;
}

// Tag hits travel in the same reports as packet hits (and adaptive rules measure both:
// ours and the peers').
void Daemon::set_tag_hooks() {
  cluster_->set_tag_hooks(
      [this] {
        std::vector<TagHit> served = tags_.collect();
        if (adaptive_->active()) adaptive_->observe_tags(served);
        return served;
      },
      [this](const std::vector<TagHit> &hits, uint64_t now_ns) {
        tags_.debit_batch(hits, now_ns);
        if (adaptive_->active()) adaptive_->observe_tags(hits);
      });
}

// Prometheus metrics, served from threads of their own now that the dataplane is up.
void Daemon::serve_metrics() {
  if (!metrics_) return;
  const RunOptions &opt = config_.opt;
  // With --attach tc there is no XDP mode: the label says "tc".
  MetricsInfo mi{DTHROTTLE_VERSION, opt.node_id, opt.iface,
                 dp_->hook() == AttachHook::Tc ? "tc" : xdp_mode_name(dp_->attached_mode()),
                 opt.rate, opt.burst, dp_->max_sources()};
  mi.bytes = opt.bytes;
  mi.pin_dir = dp_->pin_dir();
  metrics_->serve(mi, dp_->map_fds());
  publish_metrics();
}

// --- the event loop ------------------------------------------------------------------

void Daemon::serve() {
  const RunOptions &opt = config_.opt;
  read_stats(dp_->stats_fd(), &prev_stats_);
  const uint64_t start = mono_now_ns();
  period_ = PeriodicTimer(opt.period_ns, start + opt.period_ns);
  status_ = PeriodicTimer(kSecond, start);  // written at the first period
  fail_open_check_ = PeriodicTimer(kSecond, start + kSecond);
  stats_log_ = PeriodicTimer(opt.stats_interval_ns, start + opt.stats_interval_ns);
  fail_open_.reset(dp_->stats_fd());
  while (running_) {
    ticking_ = cluster_ || adaptive_->active();
    const Ready ready = wait_for_events();
    if (ready.signal) on_signal();
    if (ready.peer) on_peer_readable();  // each message timed as it is read
    if (ready.ring) on_ring_readable();
    const uint64_t now = mono_now_ns();  // after the drains: they can be held up for seconds
    if (ticking_ && period_.due(now)) on_period(now);
    if (cluster_ && now >= cluster_->early_deadline()) cluster_->on_early_tick(now);
    explain_->poll(now);
    if (fail_open_check_.due(now)) on_fail_open_check(now);
    if (stats_log_.due(now)) on_stats_log(now);
  }
}

// Polls the signals (and, with a cluster, the peer socket and the ring) until the
// earliest deadline of the timers that run.
Daemon::Ready Daemon::wait_for_events() {
  uint64_t due = std::min(stats_log_.deadline(), fail_open_check_.deadline());
  if (ticking_) due = std::min(due, period_.deadline());
  if (cluster_) due = std::min(due, cluster_->early_deadline());
  zmq::pollitem_t items[3] = {{nullptr, signal_fd_, ZMQ_POLLIN, 0},
                              {cluster_ ? cluster_->poll_socket() : nullptr, 0, ZMQ_POLLIN, 0},
                              {nullptr, cluster_ ? cluster_->ring_fd() : -1, ZMQ_POLLIN, 0}};
  try {
    zmq::poll(items, cluster_ ? 3 : 1, std::chrono::milliseconds(PeriodicTimer::timeout_ms(mono_now_ns(), due)));
  } catch (const zmq::error_t &e) {
    if (e.num() != EINTR) DT_WARN("poll: %s", e.what());
  }
  Ready r;
  r.signal = items[0].revents & ZMQ_POLLIN;
  r.peer = cluster_ && (items[1].revents & ZMQ_POLLIN);
  r.ring = cluster_ && (items[2].revents & ZMQ_POLLIN);
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
  const std::string outcome = reload_all({config_, rule_maps_, tags_, cluster_.get(), *adaptive_});
  if (ban_sync_) ban_sync_->set_allow_list(config_.rules.allow);
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
  // Without report periods, the query socket's counters reach the metrics from here.
  if (query_ && !ticking_) publish_metrics();
  fail_open_check_.advance(now_ns);
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
  if (config_.opt.keep) dp_->keep_on_exit();
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
  // Every counter with a label (common.h's DT_STATS_FIELDS), passed and dropped with their increase.
  std::string line;
  auto add = [&line](const char *label, uint64_t v) { line += (line.empty() ? "" : " ") + std::string(label) + " " + std::to_string(v); };
#define DT_LOG_FIELD(field, label, metric, help) \
  if (label[0]) add(label, now.field); \
  if (&now.field == &now.passed || &now.field == &now.dropped) line += " (+" + std::to_string(now.field - prev.field) + ")";
  DT_STATS_FIELDS(DT_LOG_FIELD)
#undef DT_LOG_FIELD
  DT_INFO("%s", line.c_str());
  prev_stats_ = now;
}

}  // namespace dt
