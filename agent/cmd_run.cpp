// cmd_run.cpp - the daemon: load and attach, publish the policy, then wait for
// signals, logging the counters every --stats-interval.
#include <signal.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "cli.h"
#include "commands.h"
#include "dataplane.h"
#include "log.h"
#include "map_reader.h"
#include "policy.h"

namespace dt {
namespace {

void log_counters(int stats_fd, dt_stats *prev) {
  dt_stats now{};
  if (read_stats(stats_fd, &now) != 0) {
    DT_WARN("cannot read the stats map: %s", strerror(errno));
    return;
  }
  DT_INFO("passed %" "llu" " (+%" "llu" ") dropped %" "llu" " (+%" "llu"
          ") new sources %" "llu" " non-IP %" "llu" " malformed %" "llu"
          " fail-open %" "llu" " contended %" "llu",
          now.passed, now.passed - prev->passed, now.dropped, now.dropped - prev->dropped,
          now.new_sources, now.non_ip, now.parse_errors, now.fail_open, now.contended);
  *prev = now;
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

  dt_policy pol{};
  if (!make_policy(opt.rate, opt.burst, &pol, &err)) {
    fprintf(stderr, "agent: %s\n", err.c_str());
    return 2;
  }

  // Block the signals we wait for before any thread exists.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  DataplaneConfig dc{opt.iface, opt.pin_dir, opt.mode, opt.max_sources, opt.max_sources_explicit};
  auto dp = Dataplane::open(dc, &err);
  if (!dp) {
    DT_ERROR("%s", err.c_str());
    return 1;
  }
  if (int rc = publish_policies(dp->policy_fd(), dp->config_fd(), &pol, 1); rc != 0) {
    DT_ERROR("cannot write the policy map: %s", strerror(-rc));
    return 1;
  }
  DT_INFO("%s dthrottle on %s (%s mode): rate %.6g/s, burst %" "llu"
          " per source, up to %u sources, pinned in %s",
          dp->took_over() ? "took over" : "attached", opt.iface.c_str(),
          xdp_mode_name(dp->attached_mode()), policy_rate(pol), policy_burst(pol),
          dp->max_sources(), dp->pin_dir().c_str());

  dt_stats prev{};
  read_stats(dp->stats_fd(), &prev);
  const timespec wait{static_cast<time_t>(opt.stats_interval_ns / 1000000000ull),
                      static_cast<long>(opt.stats_interval_ns % 1000000000ull)};
  for (;;) {
    int sig = sigtimedwait(&sigs, nullptr, &wait);
    if (sig < 0) {
      if (errno == EAGAIN) log_counters(dp->stats_fd(), &prev);
      continue;
    }
    if (sig == SIGHUP) {
      DT_INFO("SIGHUP: nothing to reload (no rules file)");
      continue;
    }
    DT_INFO("%s received: %s", sig == SIGINT ? "SIGINT" : "SIGTERM",
            opt.keep ? "leaving the program attached and the maps pinned (--keep)"
                     : "detaching and removing the pins");
    break;
  }
  log_counters(dp->stats_fd(), &prev);
  if (opt.keep) dp->keep_on_exit();
  return 0;
}

}  // namespace dt
