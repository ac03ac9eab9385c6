// query_serve.cpp - build/query_serve: the query socket alone (the real QueryServer and
// TagTable, no XDP), for client tests and experiments until the agent serves it.
// Every --period it collects the tags' hits as the agent's event loop will (and logs
// them at debug level). --busy NAME stands in for the agent's adaptive rules: BUSY NAME
// is answered OK (taken) for those names, NO for any other. Runs until SIGINT or SIGTERM,
// then prints its counters.
// Exit codes: 0 success, 1 runtime error, 2 usage error.
#include <getopt.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/clock.h"
#include "common/parse_values.h"
#include "query/query_server.h"
#include "rules/tags.h"

namespace {

const char kUsage[] =
    "usage: query_serve [--socket PATH] [--listen ADDR:PORT] --tag-rule PREFIX=RATE/BURST ...\n"
    "\n"
    "Answers the dthrottle query protocol (docs/query-protocol.md) on a unix socket\n"
    "and/or TCP, with one token bucket per tag, rules chosen by longest prefix.\n"
    "\n"
    "  --socket PATH               unix stream socket to serve\n"
    "  --listen ADDR:PORT          TCP address to serve (127.0.0.1:7800, [::1]:7800)\n"
    "  --tag-rule PREFIX=RATE/BURST  a rule (repeatable): 'api:=100/20', '=10/10' (all)\n"
    "  --max-connections N         default 4096\n"
    "  --max-backlog BYTES         unread answers per client before it is cut off (131072)\n"
    "  --max-wait D                longest RESERVE wait granted (default 1s)\n"
    "  --max-reservations-per-tag N  outstanding reservations per tag (default 100)\n"
    "  --max-reservations N        outstanding reservations in total (default 100000)\n"
    "  --max-buckets N             tag buckets kept (default 1000000)\n"
    "  --busy NAME                 answer 'BUSY NAME' with OK, as if an adaptive rule took\n"
    "                              it (repeatable); BUSY for other names is answered NO\n"
    "  --period D                  how often hits are collected (default 200ms)\n"
    "  --log-level LEVEL           debug, info, warn, error (default info)\n";

int usage_error(const std::string &msg) {
  fprintf(stderr, "query_serve: %s\nTry 'query_serve --help'.\n", msg.c_str());
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  enum { kSocket = 1, kListen, kRule, kMaxConn, kBacklog, kMaxWait, kPerTag, kTotal, kBuckets, kBusy, kPeriod, kLog };
  static const option kLong[] = {{"socket", required_argument, nullptr, kSocket},
                                 {"listen", required_argument, nullptr, kListen},
                                 {"tag-rule", required_argument, nullptr, kRule},
                                 {"max-connections", required_argument, nullptr, kMaxConn},
                                 {"max-backlog", required_argument, nullptr, kBacklog},
                                 {"max-wait", required_argument, nullptr, kMaxWait},
                                 {"max-reservations-per-tag", required_argument, nullptr, kPerTag},
                                 {"max-reservations", required_argument, nullptr, kTotal},
                                 {"max-buckets", required_argument, nullptr, kBuckets},
                                 {"busy", required_argument, nullptr, kBusy},
                                 {"period", required_argument, nullptr, kPeriod},
                                 {"log-level", required_argument, nullptr, kLog},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  dt::QueryServerConfig cfg;
  dt::TagTable::Options topt;
  std::vector<dt::TagRule> rules;
  std::set<std::string, std::less<>> busy_names;  // std::less<>: looked up by string_view
  uint64_t period_ns = 200'000'000, v = 0;
  std::string err;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", kLong, nullptr)) != -1) {
    const std::string arg = optarg ? optarg : "";
    bool ok = true;
    switch (c) {
      case kSocket: cfg.unix_path = arg; break;
      case kListen: cfg.tcp_listen = arg; break;
      case kRule: {
        dt::TagRule r;
        ok = dt::parse_tag_rule(arg, &r, &err);
        rules.push_back(r);
        break;
      }
      case kMaxConn: ok = dt::parse_count(arg, 1, 1'000'000, &v, &err); cfg.max_connections = v; break;
      case kBacklog: ok = dt::parse_count(arg, 64, 1ull << 30, &v, &err); cfg.max_backlog_bytes = v; break;
      case kMaxWait: ok = dt::parse_duration(arg, &cfg.max_reserve_wait_ns, &err); break;
      case kPerTag: ok = dt::parse_count(arg, 0, UINT32_MAX, &v, &err); topt.max_reservations_per_tag = v; break;
      case kTotal: ok = dt::parse_count(arg, 0, 1ull << 40, &topt.max_reservations, &err); break;
      case kBuckets: ok = dt::parse_count(arg, 1, 1ull << 32, &v, &err); topt.max_buckets = v; break;
      case kBusy:
        // What the server reads as a BUSY name: 1 to 1024 bytes (argv has no NUL).
        ok = !arg.empty() && arg.size() <= dt::kMaxTagLen && arg.find('\n') == std::string::npos;
        if (ok) busy_names.insert(arg);
        else err = "invalid --busy name '" + arg + "' (1 to 1024 bytes, no newline)";
        break;
      case kPeriod: ok = dt::parse_duration(arg, &period_ns, &err); break;
      case kLog: {
        dt::LogLevel level;
        ok = dt::parse_log_level(arg.c_str(), &level);
        if (ok) dt::set_log_level(level);
        else err = "invalid log level '" + arg + "'";
        break;
      }
      case 'h': fputs(kUsage, stdout); return 0;
      default: return usage_error(std::string("unknown option or missing value: ") + argv[optind - 1]);
    }
    if (!ok) return usage_error(err);
  }
  if (optind < argc) return usage_error(std::string("unexpected argument '") + argv[optind] + "'");
  if (cfg.unix_path.empty() && cfg.tcp_listen.empty()) return usage_error("give --socket and/or --listen");

  // Called on the server thread only; busy_names is not changed after this point.
  if (!busy_names.empty())
    cfg.busy = [&busy_names](std::string_view name, uint64_t) { return busy_names.contains(name); };

  dt::TagTable table(topt);
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
  DT_INFO("answers OK %llu NO %llu WAIT %llu; errors %llu; connections %llu (refused %llu, cut off %llu); "
          "busy OK %llu NO %llu; buckets %llu (created %llu, evicted %llu), unruled %llu",
          u(q.answered_ok), u(q.answered_no), u(q.answered_wait), u(q.errors()), u(q.connections_accepted),
          u(q.connections_refused), u(q.backlog_disconnects), u(q.busy_taken), u(q.busy_unknown), u(t.buckets),
          u(t.created), u(t.evicted_full + t.evicted_active), u(t.unruled));
  return 0;
}
