// cmd_run.cpp - the daemon: load and attach, publish the policy, then serve one event
// loop (signals, peer reports, period ticks) until SIGINT or SIGTERM.
#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <zmq.hpp>

#include "daemon/adaptive_driver.h"
#include "cli/cli.h"
#include "cluster/cluster.h"
#include "commands/commands.h"
#include "common/runtime_files.h"
#include "dataplane/dataplane.h"
#include "common/log.h"
#include "common/clock.h"
#include "dataplane/map_reader.h"
#include "metrics/metrics.h"
#include "dataplane/policy.h"
#include "query/query_server.h"
#include "rules/rules.h"
#include "rules/tags.h"

namespace dt {
namespace {

// The loop's state for the metrics server, copied once per period (never shared).
// took_ns and the counters before the period describe the period's report.
MetricsSnapshot metrics_snapshot(const Cluster &c, uint64_t took_ns, uint64_t entries0, uint64_t messages0,
                                 uint64_t bytes0) {
  MetricsSnapshot s;
  s.cluster = true;
  s.counters = c.counters();
  s.peers = c.tracker().peers();
  s.last_period_seconds = took_ns / 1e9;
  s.last_report_entries = s.counters.entries_sent - entries0;
  s.last_report_messages = s.counters.messages_sent - messages0;
  s.last_report_bytes = s.counters.bytes_sent - bytes0;
  return s;
}

void log_counters(int stats_fd, dt_stats *prev) {
  dt_stats now{};
  if (read_stats(stats_fd, &now) != 0) {
    DT_WARN("cannot read the stats map: %s", strerror(errno));
    return;
  }
  auto u = [](__u64 v) { return static_cast<unsigned long long>(v); };
  DT_INFO("passed %llu (+%llu) dropped %llu (+%llu) new sources %llu non-IP %llu malformed %llu "
          "fail-open %llu contended %llu exempt %llu",
          u(now.passed), u(now.passed - prev->passed), u(now.dropped), u(now.dropped - prev->dropped),
          u(now.new_sources), u(now.non_ip), u(now.parse_errors), u(now.fail_open), u(now.contended),
          u(now.exempt));
  *prev = now;
}

// Logs when packets start or stop passing without a decision (fail-open: no policy,
// or no bucket could be had because the map is full), checked about once a second.
class FailOpenWatch {
 public:
  void check(int stats_fd) {
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
  void reset(int stats_fd) {
    dt_stats st{};
    if (read_stats(stats_fd, &st) == 0) last_ = st.fail_open;
  }

 private:
  uint64_t last_ = 0;
  bool open_ = false;
};

// Tag rules: [[tag]] of the rules file, then --tag-rule flags.
std::vector<TagRule> tag_rules_of(const LoadedRules &r, const RunOptions &opt) {
  std::vector<TagRule> out = r.set.tags;
  for (const auto &spec : opt.tag_rules) {
    TagRule t;
    std::string err;
    if (parse_tag_rule(spec, &t, &err)) out.push_back(t);  // validated by the CLI already
  }
  return out;
}

// Strict tag rules are decided by Redis: without --redis (or without a query socket
// to ask) they could only be approximated, so such a rule set is refused.
bool check_strict(const std::vector<TagRule> &rules, const RunOptions &opt, std::string *err) {
  for (const TagRule &r : rules) {
    if (r.strict && opt.redis.empty()) {
      *err = "tag rule '" + r.prefix + "' is strict, which needs --redis ADDR";
      return false;
    }
  }
  return true;
}

RuleMaps rule_maps_of(const Dataplane &dp) {
  RuleMaps m;
  m.policy_fd = dp.policy_fd();
  m.config_fd = dp.config_fd();
  m.rules_fd[0] = dp.rules_fd(0);
  m.rules_fd[1] = dp.rules_fd(1);
  m.names_fd = dp.rule_names_fd();
  return m;
}

// Replaces `path` atomically with `text` (readers never see half a file).
void write_file_atomic(const std::string &path, const std::string &text) {
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (ok) rename(tmp.c_str(), path.c_str());
  else unlink(tmp.c_str());
}

// What a reload (SIGHUP) replaces.
struct ReloadTargets {
  const RunOptions &opt;
  LoadedRules &rules;
  const RuleMaps &maps;
  TagTable &tags;
  Cluster *cluster;
  AdaptiveDriver &adaptive;
};

// Re-reads the rules file and installs it everywhere; a bad file changes nothing (the
// old rules stay in force). Returns the outcome for `agent reload`: "ok <summary>",
// "partial <why>" (some of it is in force) or "error <why>".
std::string reload_rules(ReloadTargets t) {
  const RunOptions &opt = t.opt;
  LoadedRules next;
  std::string why;
  if (opt.rules_file.empty()) {
    why = "nothing to reload: the agent runs without --rules";
  } else if (load_rules(opt.rate, opt.burst, opt.rules_file, &next, &why, &t.rules)) {
    if (int rc = publish_rules(t.maps, next.compiled.policies, next.compiled.lpm, next.names); rc != 0) {
      why = std::string("cannot write the rules to the maps: ") + strerror(-rc);
    } else {
      std::string tag_err;
      const bool tags_ok = check_strict(tag_rules_of(next, opt), opt, &tag_err) &&
                           t.tags.replace_rules(tag_rules_of(next, opt), &tag_err);
      t.rules = std::move(next);
      if (t.cluster) t.cluster->set_rules(t.rules.names, t.rules.throttles);
      // The tag rules in force: the new ones, or the previous ones if those were refused.
      std::string adaptive_err;
      const bool adaptive_ok =
          t.adaptive.configure(t.rules, t.tags.rules(), !t.cluster, opt.period_ns, &adaptive_err);
      if (tags_ok && adaptive_ok) {
        DT_INFO("reloaded %s: %s", opt.rules_file.c_str(), describe_rules(t.rules).c_str());
        return "ok " + describe_rules(t.rules);
      }
      why = !tags_ok ? "the packet rules are in force, but the tag rules were refused (the previous ones stay): " +
                           tag_err
                     : "the rules are in force, but the adaptive limits could not be applied: " + adaptive_err;
      DT_ERROR("reloaded %s in part: %s", opt.rules_file.c_str(), why.c_str());
      return "partial " + why;
    }
  }
  DT_ERROR("reload failed, the previous rules stay in force: %s", why.c_str());
  return "error " + why;
}

}  // namespace

int cmd_run(int argc, char **argv) {
  RunOptions opt;
  std::string err;
  switch (parse_run_options(argc, argv, &opt, &err)) {
    case ParseOutcome::Help: fputs(run_usage(), stdout); return 0;
    case ParseOutcome::Error:
      fprintf(stderr, "agent: %s\nTry 'agent --help' for more information.\n", err.c_str());
      return 2;
    case ParseOutcome::Ok: break;
  }
  set_log_level(opt.log_level);
  route_libbpf_log();

  LoadedRules rules;
  if (!load_rules(opt.rate, opt.burst, opt.rules_file, &rules, &err)) {
    fprintf(stderr, "agent: %s\n", err.c_str());
    return 2;
  }

  // Signals arrive through a file descriptor polled with the peer socket.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);
  const int sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    DT_ERROR("signalfd: %s", strerror(errno));
    return 1;
  }

  // The metrics port is bound before the dataplane is touched: a busy port must not
  // make a restarted agent take over the throttle and then tear it down.
  std::unique_ptr<MetricsServer> metrics;
  if (!opt.metrics_host.empty()) {
    metrics = MetricsServer::bind({opt.metrics_host, opt.metrics_port}, &err);
    if (!metrics) {
      DT_ERROR("%s", err.c_str());
      return 1;
    }
  }

  // Tags of the query socket: their buckets live here, in the agent (not in XDP).
  // Bound before the dataplane too, for the same reason as the metrics port.
  TagTable::Options topt;
  topt.max_buckets = opt.max_tags;
  TagTable tags(topt);
  if (!check_strict(tag_rules_of(rules, opt), opt, &err) || !tags.replace_rules(tag_rules_of(rules, opt), &err)) {
    fprintf(stderr, "agent: %s\n", err.c_str());
    return 2;
  }
  BusyRelay busy_relay;  // BUSY lines reach the adaptive rules once they exist
  std::unique_ptr<QueryServer> query;
  if (!opt.query_socket.empty() || !opt.query_listen.empty()) {
    QueryServerConfig qc;
    qc.unix_path = opt.query_socket;
    qc.tcp_listen = opt.query_listen;
    qc.max_connections = opt.query_max_connections;
    qc.max_reserve_wait_ns = opt.query_max_wait_ns;
    qc.redis_address = opt.redis;
    qc.redis_timeout_ns = opt.redis_timeout_ns;
    qc.busy = [&busy_relay](std::string_view name, uint64_t now_ns) { return busy_relay.busy(name, now_ns); };
    query = QueryServer::start(qc, tags, &err);
    if (!query) {
      DT_ERROR("query socket: %s", err.c_str());
      return 1;
    }
    DT_INFO("query socket: %s%s%s (%zu tag rules%s%s)", opt.query_socket.c_str(),
            !opt.query_socket.empty() && !opt.query_listen.empty() ? " and " : "", opt.query_listen.c_str(),
            tag_rules_of(rules, opt).size(), opt.redis.empty() ? "" : "; strict ones decided by redis ",
            opt.redis.c_str());
  }

  DataplaneConfig dc{opt.iface, opt.pin_dir, opt.mode, opt.max_sources, opt.max_sources_explicit};
  auto dp = Dataplane::open(dc, &err);
  if (!dp) {
    DT_ERROR("%s", err.c_str());
    return 1;
  }
  // From here on a failure must not tear down a throttle this agent took over
  // from a crashed one: leave it attached and pinned for the next attempt.
  auto fail = [&dp](const std::string &msg) {
    DT_ERROR("%s", msg.c_str());
    if (dp->took_over()) dp->keep_on_exit();
    return 1;
  };
  // Announcements (and the peers' exemption) are turned on below by whoever needs
  // them (the cluster, adaptive rules): a crashed agent's setting must not linger and
  // fill a ring nobody drains.
  if (int rc = update_config_flags(dp->config_fd(), opt.coarse_clock ? DT_CFG_COARSE_CLOCK : 0,
                                   (opt.coarse_clock ? 0 : DT_CFG_COARSE_CLOCK) | DT_CFG_REPORT | DT_CFG_EXEMPT);
      rc != 0)
    return fail(std::string("cannot write the config map: ") + strerror(-rc));
  const RuleMaps rule_maps = rule_maps_of(*dp);
  if (int rc = publish_rules(rule_maps, rules.compiled.policies, rules.compiled.lpm, rules.names); rc != 0)
    return fail(std::string("cannot write the rules to the maps: ") + strerror(-rc));
  DT_INFO("%s dthrottle on %s (%s mode): %s; up to %u sources, pinned in %s",
          dp->took_over() ? "took over" : "attached", opt.iface.c_str(), xdp_mode_name(dp->attached_mode()),
          describe_rules(rules).c_str(), dp->max_sources(), dp->pin_dir().c_str());
  AdaptiveDriver adaptive(*dp, rule_maps, tags, &busy_relay);
  if (!adaptive.configure(rules, tags.rules(), !opt.cluster(), opt.period_ns, &err))
    return fail("adaptive rules: " + err);
  const std::string adaptive_path = runtime_file(opt.pin_dir, kAdaptiveStatusJson);
  const std::string adaptive_text_path = runtime_file(opt.pin_dir, kAdaptiveStatusText);
  const std::string reload_path = runtime_file(opt.pin_dir, kReloadFile);
  uint64_t reload_generation = 0;
  write_file_atomic(reload_path, "0 ok " + describe_rules(rules) + "\n");

  std::unique_ptr<Cluster> cluster;
  const std::string status_path = runtime_file(opt.pin_dir, kClusterStatusJson);
  const std::string status_text_path = runtime_file(opt.pin_dir, kClusterStatusText);
  if (opt.cluster()) {
    ClusterConfig cc;
    cc.peers = opt.peers;
    cc.hubs = opt.hubs;
    cc.listen = opt.listen;
    cc.period_ns = opt.period_ns;
    cc.down_after_ns = opt.down_after_ns;
    cc.node_id = opt.node_id;
    cc.curve_key_file = opt.curve_key;
    cc.curve_peers_dir = opt.curve_peers;
    cluster = Cluster::create(cc, *dp, &err);
    if (!cluster) return fail(err);
    cluster->set_rules(rules.names, rules.throttles);
    cluster->set_adaptive(&adaptive.set());
    // Tag hits travel in the same reports as packet hits (and adaptive rules measure
    // both: ours and the peers').
    cluster->set_tag_hooks(
        [&tags, &adaptive] {
          std::vector<TagHit> served = tags.collect();
          if (adaptive.active()) adaptive.observe_tags(served);
          std::vector<TagHit> out;
          out.reserve(served.size());
          for (auto &t : served) out.push_back({std::move(t.tag), t.hits});
          return out;
        },
        [&tags, &adaptive](const std::vector<TagHit> &in, uint64_t now_ns) {
          std::vector<TagHit> hits;
          hits.reserve(in.size());
          for (const auto &t : in) hits.push_back({t.tag, t.hits});
          tags.debit_batch(hits, now_ns);
          if (adaptive.active()) adaptive.observe_tags(hits);
        });
    DT_INFO("cluster: node %s, listening on %s, %zu peers, %zu hubs, reports every %.0f ms", opt.node_id.c_str(),
            opt.listen.empty() ? "(none)" : opt.listen.c_str(), opt.peers.size(), opt.hubs.size(),
            opt.period_ns / 1e6);
  }

  // Prometheus metrics, served from threads of their own now that the dataplane is up.
  if (metrics) {
    MetricsInfo mi{DTHROTTLE_VERSION, opt.node_id, opt.iface, xdp_mode_name(dp->attached_mode()),
                   opt.rate, opt.burst, dp->max_sources()};
    metrics->serve(mi, dp->stats_fd(), dp->buckets_fd(), dp->rule_stats_fd(), dp->rule_names_fd());
  }
  // The query socket's counters join whatever snapshot the loop publishes.
  auto with_query = [&](MetricsSnapshot s) {
    s.adaptive = adaptive.status(mono_now_ns());
    if (query) {
      s.query = true;
      s.query_counters = query->counters();
      s.tag_buckets = tags.size();
    }
    return s;
  };
  if (metrics) {
    if (cluster) {
      const ClusterCounters &cc = cluster->counters();
      metrics->publish(with_query(metrics_snapshot(*cluster, 0, cc.entries_sent, cc.messages_sent, cc.bytes_sent)));
    } else {
      metrics->publish(with_query(MetricsSnapshot{}));
    }
  }

  dt_stats prev{};
  read_stats(dp->stats_fd(), &prev);
  uint64_t now = mono_now_ns();
  uint64_t next_stats = now + opt.stats_interval_ns;
  uint64_t next_period = now + opt.period_ns;
  uint64_t next_status = now;
  uint64_t next_fail_open_check = now + 1'000'000'000ull;
  FailOpenWatch fail_open;
  fail_open.reset(dp->stats_fd());
  bool keep = opt.keep;
  for (bool running = true; running;) {
    now = mono_now_ns();
    const bool ticking = cluster || adaptive.active();  // report periods run
    uint64_t due = std::min({next_stats, next_fail_open_check, ticking ? next_period : next_stats});
    long timeout_ms = due > now ? static_cast<long>((due - now + 999999) / 1000000) : 0;
    zmq::pollitem_t items[3] = {{nullptr, sfd, ZMQ_POLLIN, 0},
                                {cluster ? cluster->poll_socket() : nullptr, 0, ZMQ_POLLIN, 0},
                                {nullptr, cluster ? cluster->ring_fd() : -1, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, cluster ? 3 : 1, std::chrono::milliseconds(timeout_ms));
    } catch (const zmq::error_t &e) {
      if (e.num() != EINTR) DT_WARN("poll: %s", e.what());
    }
    now = mono_now_ns();
    if (items[0].revents & ZMQ_POLLIN) {
      signalfd_siginfo si{};
      while (read(sfd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGHUP) {
          ReloadTargets t{opt, rules, rule_maps, tags, cluster.get(), adaptive};
          const std::string outcome = reload_rules(t);
          write_file_atomic(reload_path, std::to_string(++reload_generation) + " " + outcome + "\n");
          continue;
        }
        DT_INFO("%s received: %s", si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM",
                keep ? "leaving the program attached and the maps pinned (--keep)"
                     : "detaching and removing the pins");
        running = false;
      }
    }
    if (cluster && (items[1].revents & ZMQ_POLLIN)) cluster->on_readable(now);
    if (cluster && (items[2].revents & ZMQ_POLLIN)) cluster->on_ring_readable();
    if (ticking && now >= next_period) {
      adaptive.poll_signals(now);  // before the report, which carries the factors
      if (cluster) {
        const ClusterCounters &cc = cluster->counters();
        const uint64_t entries0 = cc.entries_sent, messages0 = cc.messages_sent, bytes0 = cc.bytes_sent;
        const uint64_t t0 = mono_now_ns();
        cluster->on_period(now);
        adaptive.on_period(now, false);
        if (metrics)
          metrics->publish(with_query(metrics_snapshot(*cluster, mono_now_ns() - t0, entries0, messages0, bytes0)));
      } else {
        adaptive.on_period(now, true);
        if (metrics) metrics->publish(with_query(MetricsSnapshot{}));
      }
      // Catch up without bursts of ticks if the loop was held up.
      next_period += opt.period_ns;
      if (next_period <= now) next_period = now + opt.period_ns;
      if (now >= next_status) {
        if (cluster) {
          write_file_atomic(status_path, cluster->status_json(now) + "\n");
          write_file_atomic(status_text_path, cluster->status_text(now));
        }
        if (adaptive.active()) {
          write_file_atomic(adaptive_path, adaptive.status_json(now) + "\n");
          write_file_atomic(adaptive_text_path, adaptive.status_text(now));
        }
        next_status = now + 1'000'000'000ull;
      }
    }
    if (now >= next_fail_open_check) {
      fail_open.check(dp->stats_fd());
      if (metrics && query && !ticking) metrics->publish(with_query(MetricsSnapshot{}));  // once a second
      next_fail_open_check = now + 1'000'000'000ull;
    }
    if (now >= next_stats) {
      log_counters(dp->stats_fd(), &prev);
      if (cluster) cluster->log_summary();
      next_stats = now + opt.stats_interval_ns;
    }
  }
  metrics.reset();  // stops serving (joins its threads) before anything it reads goes
  log_counters(dp->stats_fd(), &prev);
  if (cluster) {
    cluster->log_summary();
    cluster.reset();  // before the tag table it reads
    unlink(status_path.c_str());
    unlink(status_text_path.c_str());
  }
  if (keep) dp->keep_on_exit();
  unlink(reload_path.c_str());
  unlink(adaptive_path.c_str());
  unlink(adaptive_text_path.c_str());
  close(sfd);
  return 0;
}

}  // namespace dt
