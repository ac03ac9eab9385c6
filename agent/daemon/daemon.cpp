// daemon.cpp - the running agent: its setup steps (the loop: daemon/daemon_loop.cpp).
#include "daemon/daemon.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cluster/boot_counter.h"
#include "cluster/cluster.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/program_name.h"
#include "common/runtime_files.h"
#include "daemon/escalation_driver.h"
#include "daemon/explain_watch.h"
#include "daemon/lists_install.h"
#include "daemon/privileges.h"
#include "daemon/reload.h"
#include "dataplane/dataplane.h"
#include "dataplane/map_reader.h"
#include "events/attack_watch.h"
#include "events/ban_events.h"
#include "events/command_runner.h"
#include "events/event_bus.h"
#include "host/synproxy.h"
#include "metrics/metrics.h"
#include "query/query_listen.h"
#include "query/query_server.h"

namespace dt {
namespace {

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
  m.lists = ListMapFds{dp.lists_v4_fd(), dp.lists_v6_fd(), dp.features_fd()};
  return m;
}

}  // namespace

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
  if (!bind_signals() || !bind_metrics() || !install_tag_rules() || !start_events() || !start_query()) return false;
  // The rules and lists go into the maps before the program is attached: in force from
  // its first packet (a 1M-line list takes seconds to load).
  if (!open_dataplane() || !publish_rules() || !install_synproxy() || !attach_dataplane() || !open_bans() ||
      !start_adaptive())
    return false;
  // Attached, pinned, the first runtime files made: what is left needs (almost) no
  // capability. Before the cluster, whose ZeroMQ threads block every signal.
  if (!keep_needed_privileges() || !join_cluster()) return false;
  open_event_sources();
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
  if (dp_->took_over()) {
    dp_->keep_on_exit();
    if (synproxy_) synproxy_->keep_on_exit();  // the kept program's cookies still need it
  }
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
  qc.admin_commands.push_back({"VERIFY", [this](std::string_view arg, uint64_t, uid_t) { return verify_.run(arg); }});
  qc.events = events_.get();
  for (std::string verb : {"BAN", "UNBAN"})
    qc.admin_commands.push_back({verb, [this, verb](std::string_view arg, uint64_t now_ns, uid_t uid) {
                                   return run_query_ban(verb + " " + std::string(arg), now_ns, uid);
                                 }});
  std::string err;
  query_ = QueryServer::start(qc, tags_, &err);
  if (!query_) return runtime_failure("query socket: " + err);
  if (!opt.query_socket.empty())
    DT_INFO(
        "query socket %s: mode %04o, group %u; admin commands (BUSY, VERIFY) from root, the agent's uid and %zu "
        "--query-admin-uids; idle connections closed after %.0f s",
        opt.query_socket.c_str(), opt.query_socket_mode, static_cast<unsigned>(opt.query_socket_gid),
        opt.query_admin_uids.size(), opt.query_idle_timeout_ns / 1e9);
  if (opt.query_insecure)
    DT_WARN(
        "query socket: %s is served without authentication (--query-insecure): anyone who reaches it can "
        "spend any tag's budget",
        opt.query_listen.c_str());
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
    DT_WARN(
        "query socket: at most %zu connections, not %llu: the descriptor limit is %llu and %zu are kept for "
        "the maps, ZeroMQ, metrics and files (raise LimitNOFILE= or ulimit -n to allow more)",
        cap, static_cast<unsigned long long>(opt.query_max_connections), static_cast<unsigned long long>(nofile),
        reserve);
  return cap;
}

bool Daemon::open_dataplane() {
  const RunOptions &opt = config_.opt;
  DataplaneConfig dc{opt.iface, opt.pin_dir, opt.mode, opt.max_sources, opt.max_sources_explicit};
  dc.hook = opt.hook;
  dc.max_verified = opt.max_verified;
  dc.verified_ttl_ns = opt.verified_ttl_ns;
  const char *clsact = getenv("DTHROTTLE_TC_CLSACT");  // tests: the path of kernels without tcx
  dc.force_clsact = clsact && strcmp(clsact, "1") == 0;
  std::string err;
  dp_ = Dataplane::open(dc, &err);
  if (!dp_) return runtime_failure(err);
  verify_.set_map(dp_->verified_fd(), opt.verified_ttl_ns);
  return true;
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

// Before the program is attached (or a crashed agent's, taken over, answers with cookies
// again): the ACKs of its cookies must find SYNPROXY from the first one.
bool Daemon::install_synproxy() {
  const std::vector<PortRange> ports = syn_cookie_ports(config_.rules.set.rules);
  if (ports.empty()) return true;
  std::string err;
  synproxy_ = HostSynproxy::install(ports, &err);
  if (!synproxy_) return fail("syn_cookies: " + err);
  DT_INFO("%s", synproxy_->describe().c_str());
  return true;
}

bool Daemon::attach_dataplane() {
  const RunOptions &opt = config_.opt;
  if (std::string err; !dp_->attach(&err)) return runtime_failure(err);
  DT_INFO("%s dthrottle on %s (%s): %s; up to %u sources, pinned in %s", dp_->took_over() ? "took over" : "attached",
          opt.iface.c_str(), dp_->hook_desc().c_str(), describe_run_rules(config_).c_str(), dp_->max_sources(),
          dp_->pin_dir().c_str());
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
  escalation_ = std::make_unique<EscalationDriver>(dp_->map_fds(), dp_->cluster_exempt_fd(), *ban_store_,
                                                   dp_->pin_dir(), config_.opt.peer_bans.min_prefix,
                                                   config_.opt.auto_ban_max, config_.opt.period_ns);
  escalation_->configure(config_.rules);
  // A peer's automatic ban is told at once (the store's scan, every 250 ms, tells the others).
  ban_sync_->set_on_installed([this](const Ban &b) {
    if (escalation_->learn_peer_ban(b) && ban_events_) ban_events_->installed(b, mono_now_ns());
  });
  const RunOptions &opt = config_.opt;
  escalation_json_file_ = RewrittenFile(runtime_files_.add(runtime_file(opt.pin_dir, kEscalationStatusJson)));
  escalation_text_file_ = RewrittenFile(runtime_files_.add(runtime_file(opt.pin_dir, kEscalationStatusText)));
  if (query_) {  // BAN and UNBAN on the query socket: a store of that thread's own (its own lock)
    query_bans_ = BanStore::open(dp_->pin_dir(), &err);
    if (!query_bans_) return fail("bans: " + err);
  }
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
  needs.dispatcher_detach = dp_->hook() == AttachHook::XdpMulti && !config_.opt.keep;
  needs.bpf_gated = bpf_commands_need_cap_bpf(dp_->stats_fd());
  needs.new_maps = true;
  needs.synproxy = synproxy_ != nullptr;  // any reload may load a list (daemon/lists_install.h): its trie is a new map
  synproxy_allowed_ = needs.synproxy;     // a reload may then replace, remove and install the table again
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
  cc.early_report_ns = opt.early_report_ns == 0            ? opt.period_ns / 4
                       : opt.early_report_ns == UINT64_MAX ? 0
                                                           : opt.early_report_ns;
  cc.node_id = opt.node_id;
  cc.curve_key_file = opt.curve_key;
  cc.curve_peers_dir = opt.curve_peers;
  cc.verified_ttl_ns = opt.verified_ttl_ns;
  cc.peer_verified = opt.peer_verified;
  cc.verified_hold = VerifiedHoldLimits{
      opt.peer_verified_max ? opt.peer_verified_max : default_verified_per_peer(opt.max_verified), opt.max_verified};
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
  MetricsInfo mi{DTHROTTLE_VERSION, opt.node_id,
                 opt.iface,         dp_->hook() == AttachHook::Tc ? "tc" : xdp_mode_name(dp_->attached_mode()),
                 opt.rate,          opt.burst,
                 dp_->max_sources()};
  mi.bytes = opt.bytes;
  mi.pin_dir = dp_->pin_dir();
  metrics_->serve(mi, dp_->map_fds());
  publish_metrics();
}

}  // namespace dt
