// query_serve.cpp - build/query_serve: the query socket alone (the real QueryServer and
// TagTable, no XDP), for client tests and experiments until the agent serves it.
// Every --period it collects the tags' hits as the agent's event loop will (and logs
// them at debug level). --busy NAME stands in for the agent's adaptive rules: BUSY NAME
// is answered OK (taken) for those names, NO for any other. Runs until SIGINT or SIGTERM,
// then prints its counters.
// Exit codes: 0 success, 1 runtime error, 2 usage error.
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "cli/option_values.h"
#include "cli/options.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/parse_values.h"
#include "query/query_server.h"
#include "rules/tags.h"

namespace {

const char kUsage[] =
    "Usage: query_serve [--socket PATH] [--listen ADDR:PORT] --tag-rule PREFIX=RATE/BURST ...\n"
    "\n"
    "Answers the dthrottle query protocol (docs/query-protocol.md) on a unix socket\n"
    "and/or TCP, with one token bucket per tag, rules chosen by longest prefix.\n"
    "\n";

// What the options fill.
struct ServeOptions {
  dt::QueryServerConfig cfg;
  dt::TagTable::Options table;
  std::vector<dt::TagRule> rules;
  std::set<std::string, std::less<>> busy_names;  // std::less<>: looked up by string_view
  uint64_t period_ns = 200'000'000;
  dt::LogLevel log_level = dt::LogLevel::Info;
};

std::vector<dt::OptionSpec> serve_options(ServeOptions *o) {
  using dt::count_into;
  return {
      {"socket", 0, "PATH", "unix stream socket to serve", dt::store(&o->cfg.unix_path)},
      {"listen", 0, "ADDR:PORT", "TCP address to serve (127.0.0.1:7800, [::1]:7800)", dt::store(&o->cfg.tcp_listen)},
      {"tag-rule", 0, "PREFIX=RATE/BURST", "a rule (repeatable): 'api:=100/20', '=10/10' (all)",
       [o](const std::string &v, std::string *why) {
         dt::TagRule r;
         return dt::parse_tag_rule(v, &r, why) && (o->rules.push_back(r), true);
       }},
      {"max-connections", 0, "N", "default 4096", count_into(&o->cfg.max_connections, 1, 1'000'000)},
      {"max-backlog", 0, "BYTES", "unread answers per client before it is cut off (131072)",
       count_into(&o->cfg.max_backlog_bytes, 64, 1ull << 30)},
      {"max-wait", 0, "D", "longest RESERVE wait granted (default 1s)", dt::duration_into(&o->cfg.max_reserve_wait_ns)},
      {"max-reservations-per-tag", 0, "N", "outstanding reservations per tag (default 100)",
       count_into(&o->table.max_reservations_per_tag, 0, UINT32_MAX)},
      {"max-reservations", 0, "N", "outstanding reservations in total (default 100000)",
       count_into(&o->table.max_reservations, 0, 1ull << 40)},
      {"max-buckets", 0, "N", "tag buckets kept (default 1000000)", count_into(&o->table.max_buckets, 1, 1ull << 32)},
      {"busy", 0, "NAME",
       "answer 'BUSY NAME' with OK, as if an adaptive rule took\nit (repeatable); BUSY for other names is answered NO",
       [o](const std::string &v, std::string *why) {
         // What the server reads as a BUSY name: 1 to 1024 bytes (argv has no NUL).
         if (v.empty() || v.size() > dt::kMaxTagLen || v.find('\n') != std::string::npos)
           return *why = "'" + v + "' is not a name of 1 to 1024 bytes without a newline", false;
         return o->busy_names.insert(v), true;
       }},
      {"period", 0, "D", "how often hits are collected (default 200ms)", dt::duration_into(&o->period_ns)},
      {"log-level", 0, "LEVEL", "debug, info, warn, error (default info)", dt::log_level_into(&o->log_level)},
  };
}

int usage_error(const std::string &msg) {
  fprintf(stderr, "query_serve: %s\nTry 'query_serve --help'.\n", msg.c_str());
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  ServeOptions opt;
  const dt::CommandSpec spec("query_serve", kUsage, serve_options(&opt));
  if (int code = dt::parse_subcommand(spec, argc, argv,
                                      [&](const std::vector<std::string> &, std::string *err) {
                                        if (!opt.cfg.unix_path.empty() || !opt.cfg.tcp_listen.empty())
                                          return dt::ParseOutcome::Ok;
                                        return *err = "give --socket and/or --listen", dt::ParseOutcome::Error;
                                      });
      code >= 0)
    return code;
  dt::set_log_level(opt.log_level);
  dt::QueryServerConfig &cfg = opt.cfg;
  const std::vector<dt::TagRule> &rules = opt.rules;
  const std::set<std::string, std::less<>> &busy_names = opt.busy_names;
  const uint64_t period_ns = opt.period_ns;
  std::string err;

  // Called on the server thread only; busy_names is not changed after this point.
  if (!busy_names.empty())
    cfg.busy = [&busy_names](std::string_view name, uint64_t) { return busy_names.contains(name); };

  dt::TagTable table(opt.table);
  if (!table.replace_rules(rules, &err)) return usage_error(err);

  // Block the signals before the server thread starts, so only sigtimedwait sees them.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto server = dt::QueryServer::start(cfg, table, &err);
  if (!server) {
    DT_ERROR("%s", err.c_str());
    return 1;
  }
  DT_INFO("serving%s%s%s%s with %zu tag rules", cfg.unix_path.empty() ? "" : " unix:", cfg.unix_path.c_str(),
          cfg.tcp_listen.empty() ? "" : " tcp port ",
          cfg.tcp_listen.empty() ? "" : std::to_string(server->tcp_port()).c_str(), rules.size());

  const timespec period{static_cast<time_t>(period_ns / 1'000'000'000ull),
                        static_cast<long>(period_ns % 1'000'000'000ull)};
  for (;;) {
    const int sig = sigtimedwait(&sigs, nullptr, &period);
    if (sig == SIGINT || sig == SIGTERM) break;
    if (sig < 0 && errno != EAGAIN && errno != EINTR) {
      DT_ERROR("sigtimedwait: %s", strerror(errno));
      return 1;
    }
    // What the agent does each period: collect the hits to report to peers.
    for (const dt::TagHit &h : table.collect()) DT_DEBUG("hits %s %llu", h.tag.c_str(), (unsigned long long)h.hits);
  }
  const dt::QueryCounters q = server->counters();
  server.reset();
  const dt::TagCounters t = table.counters(dt::mono_now_ns());
  auto u = [](uint64_t x) { return static_cast<unsigned long long>(x); };
  DT_INFO(
      "answers OK %llu NO %llu WAIT %llu; errors %llu; connections %llu (refused %llu, cut off %llu); "
      "busy OK %llu NO %llu; buckets %llu (created %llu, evicted %llu), unruled %llu",
      u(q.answered_ok), u(q.answered_no), u(q.answered_wait), u(q.errors()), u(q.connections_accepted),
      u(q.connections_refused), u(q.backlog_disconnects), u(q.busy_taken), u(q.busy_unknown), u(t.buckets),
      u(t.created), u(t.evicted_full + t.evicted_active), u(t.unruled));
  return 0;
}
