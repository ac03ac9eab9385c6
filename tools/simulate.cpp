// simulate.cpp - build/simulate: what peer reports buy a dthrottle cluster, on the
// deterministic cluster simulator (tools/sim/cluster_sim.h). Runs the scenario twice,
// with reports and local-only, and prints per-client tables: offered, the ideal
// global budget (burst + rate * T), admitted in total and per host. `--example ab`
// replays the reference daemon's A/B example instead; `--pattern steady|flappy`
// runs the busy-response reference's adaptive-limit patterns as per-second tables.
// Exit codes: 0 success, 2 usage error.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "sim/cluster_sim.h"
#include "common/log.h"
#include "common/parse_values.h"
#include "cli/options.h"

namespace {

using namespace dt::sim;

const char kUsage[] =
    "Usage: simulate [options]\n"
    "       simulate --example ab\n"
    "       simulate --pattern steady|flappy [adaptive options]\n"
    "\n"
    "Simulates N dthrottle hosts behind a load balancer, each with a token bucket per\n"
    "client, reporting the hits it served every period to its peers, which debit them.\n"
    "Prints offered vs admitted per client, with reports and local-only (no reports).\n"
    "Deterministic: the same options and seed give the same output.\n"
    "\n";

const char kAdaptiveHelp[] =
    "\n"
    "Adaptive limits (busy-response-throttling.txt): one client offers 5000/s for 30 s\n"
    "under an adaptive rule of 10000/s (burst 5000); its service answers busy (up to\n"
    "3000 signals/s, to host 0, never more than host 0 admitted) over the first 10 s.\n"
    "Prints per second: offered, admitted, throttled, busy signals and the limit (rate x\n"
    "applied factor) at the end of the second, then when nothing was throttled any more.\n"
    "With --pattern, --hosts defaults to 1; the load balancer spreads the client, host 0\n"
    "gets the busy signals, the others learn its factor from its reports. --period, --lb,\n"
    "--loss, --dup, --delay, --jitter, --offsets, --down-after and --seed apply as above;\n"
    "the client, rate, burst and duration are the pattern's.";

[[noreturn]] void usage_error(const std::string &msg) {
  fprintf(stderr, "simulate: %s\nTry 'simulate --help'.\n", msg.c_str());
  exit(2);
}

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

// A duration; "0" (with or without a unit) too when zero_ok.
Ns parse_time(const std::string &s, bool zero_ok, const char *what) {
  if (zero_ok && (s == "0" || s == "0s" || s == "0ms" || s == "0us")) return 0;
  uint64_t ns;
  std::string err;
  if (!dt::parse_duration(s, &ns, &err)) usage_error(std::string(what) + ": " + err);
  return ns;
}

uint64_t parse_whole(const std::string &s, uint64_t min, uint64_t max, const char *what) {
  uint64_t v;
  std::string err;
  if (!dt::parse_count(s, min, max, &v, &err)) usage_error(std::string(what) + ": " + err);
  return v;
}

double parse_probability(const std::string &s, const char *what) {
  char *end = nullptr;
  const double v = strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !(v >= 0 && v <= 1))
    usage_error(std::string(what) + ": '" + s + "' is not a probability from 0 to 1");
  return v;
}

// "A-B" into [start, end).
void parse_window(const std::string &s, Ns *start, Ns *end, const char *what) {
  auto parts = split(s, '-');
  if (parts.size() != 2) usage_error(std::string(what) + ": '" + s + "' is not a time window such as 3s-6s");
  *start = parse_time(parts[0], true, what);
  *end = parse_time(parts[1], false, what);
  if (*end <= *start) usage_error(std::string(what) + ": '" + s + "' ends before it starts");
}

std::vector<Client> parse_clients(const std::string &list) {
  std::vector<Client> out;
  for (const auto &item : split(list, ',')) {
    auto at = split(item, '@');
    if (at.size() > 2) usage_error("--clients: '" + item + "' is not RATE[@START-STOP]");
    Client c;
    c.name = "c" + std::to_string(out.size());
    std::string err;
    if (!dt::parse_rate(at[0], &c.rate, &err)) usage_error("--clients: " + err);
    if (at.size() == 2) parse_window(at[1], &c.start, &c.stop, "--clients");
    out.push_back(c);
  }
  return out;
}

// "I:K@T"
void parse_client_burst(const std::string &s, std::vector<Client> *clients) {
  const size_t colon = s.find(':'), at = s.find('@');
  if (colon == std::string::npos || at == std::string::npos || at < colon)
    usage_error("--client-burst: '" + s + "' is not I:K@T (e.g. 0:100@3s)");
  const uint64_t i = parse_whole(s.substr(0, colon), 0, clients->size() - 1, "--client-burst client");
  const uint64_t k = parse_whole(s.substr(colon + 1, at - colon - 1), 1, 10000000, "--client-burst count");
  (*clients)[i].bursts.push_back({parse_time(s.substr(at + 1), true, "--client-burst"), static_cast<uint32_t>(k), -1});
}

// "A-B:0|1,2"
Partition parse_partition(const std::string &s, size_t hosts) {
  const size_t colon = s.find(':');
  if (colon == std::string::npos) usage_error("--partition: '" + s + "' is not A-B:SIDES (e.g. 3s-6s:0|1,2)");
  Partition p;
  parse_window(s.substr(0, colon), &p.start, &p.end, "--partition");
  const auto sides = split(s.substr(colon + 1), '|');
  p.side.assign(hosts, static_cast<int>(sides.size()));  // hosts not named: one more side
  for (size_t side = 0; side < sides.size(); side++) {
    for (const auto &h : split(sides[side], ',')) {
      const uint64_t host = parse_whole(h, 0, hosts - 1, "--partition host");
      if (p.side[host] != static_cast<int>(sides.size()))
        usage_error("--partition: host " + h + " is named twice");
      p.side[host] = static_cast<int>(side);
    }
  }
  return p;
}

std::string fmt_time(Ns ns) {
  char buf[32];
  if (ns == 0) return "0";
  if (ns % kSec == 0) snprintf(buf, sizeof buf, "%" PRIu64 "s", ns / kSec);
  else if (ns % kMs == 0 && ns < kSec) snprintf(buf, sizeof buf, "%" PRIu64 "ms", ns / kMs);
  else if (ns % kMs == 0) snprintf(buf, sizeof buf, "%gs", static_cast<double>(ns) / 1e9);
  else snprintf(buf, sizeof buf, "%gms", static_cast<double>(ns) / 1e6);
  return buf;
}

std::string fmt_partition(const Partition &p) {
  std::string out = fmt_time(p.start) + "-" + fmt_time(p.end) + " ";
  int sides = 0;
  for (int s : p.side) sides = std::max(sides, s + 1);
  for (int side = 0; side < sides; side++) {
    std::string members;
    for (size_t h = 0; h < p.side.size(); h++)
      if (p.side[h] == side) members += (members.empty() ? "" : ",") + std::to_string(h);
    if (!members.empty()) out += std::string(out.back() == ' ' ? "" : " | ") + "{" + members + "}";
  }
  return out;
}

constexpr size_t kMaxHostColumns = 8;

void print_clients(const char *title, const ClusterSim &c) {
  const size_t cols = std::min(c.scenario().hosts, kMaxHostColumns);
  printf("%s\n%-8s %9s %8s %8s %9s %9s %9s |", title, "client", "offered", "budget", "ideal", "admitted",
         "adm/ideal", "refused");
  for (size_t h = 0; h < cols; h++) printf(" %7s", ("h" + std::to_string(h)).c_str());
  printf("%s\n", c.scenario().hosts > cols ? " ..." : "");
  auto row = [](const char *name, uint64_t offered, uint64_t budget, uint64_t ideal, uint64_t admitted,
                uint64_t refused) {
    printf("%-8s %9" PRIu64 " %8" PRIu64 " %8" PRIu64 " %9" PRIu64 " %9.3f %9" PRIu64 " |", name, offered, budget,
           ideal, admitted, ideal ? static_cast<double>(admitted) / static_cast<double>(ideal) : 0.0, refused);
  };
  uint64_t offered = 0, budget = 0, ideal = 0, admitted = 0, refused = 0;
  for (const auto &cl : c.clients()) {
    row(cl.name.c_str(), cl.offered, cl.budget, cl.ideal, cl.admitted(), cl.refused);
    for (size_t h = 0; h < cols; h++) printf(" %7" PRIu64, cl.admitted_by_host[h]);
    printf("\n");
    offered += cl.offered, budget += cl.budget, ideal += cl.ideal, admitted += cl.admitted(), refused += cl.refused;
  }
  if (c.clients().size() > 1) {
    row("all", offered, budget, ideal, admitted, refused);
    printf("\n");
  }
  printf("\n");
}

void print_peers(const ClusterSim &c) {
  printf("peer reports (with reports):\n%-5s %7s %8s %8s %6s %6s %6s %6s %6s | %7s %7s %8s %6s %6s %6s %8s %8s %5s %5s\n",
         "host", "reports", "hits-out", "msgs-out", "lost", "held", "cut", "dup", "resent", "msgs-in", "applied",
         "rejected", "gaps", "recov", "stale", "debited", "not-chg", "downs", "ups");
  for (size_t h = 0; h < c.hosts().size(); h++) {
    const HostStats &s = c.hosts()[h];
    uint64_t gaps = 0;
    for (const auto &[id, p] : c.tracker(h).peers()) gaps += p.lost;
    printf("h%-4zu %7" PRIu64 " %8" PRIu64 " %8" PRIu64 " %6" PRIu64 " %6" PRIu64 " %6" PRIu64 " %6" PRIu64 " %6" PRIu64
           " | %7" PRIu64 " %7" PRIu64 " %8" PRIu64 " %6" PRIu64 " %6" PRIu64 " %6" PRIu64 " %8" PRIu64 " %8" PRIu64
           " %5" PRIu64 " %5" PRIu64 "\n",
           h, s.reports, s.hits_reported, s.messages_sent, s.lost, s.queued, s.cut, s.duplicated, s.resends,
           s.received, s.accepted, s.rejected, gaps, s.recovered, s.stale, s.hits_debited, s.stale_hits,
           s.peer_downs, s.peer_ups);
  }
  uint64_t report_bytes = 0, resend_bytes = 0, request_bytes = 0, reports = 0;
  for (const HostStats &s : c.hosts()) {
    report_bytes += s.report_bytes, resend_bytes += s.resend_bytes, request_bytes += s.request_bytes;
    reports += s.reports * (c.hosts().size() - 1);
  }
  printf("(msgs-out counts one per receiver; held = kept by a partition and delivered at its end,\n"
         " cut = dropped by it; rejected = duplicates or late reorders the tracker refused; gaps =\n"
         " messages missing from a peer's sequence, recov = of those, resent and applied; stale =\n"
         " messages too old to charge, not-chg = their hits)\n");
  if (reports)
    printf("bytes per report and receiver: %.1f (reports %.1f, resends %.1f, resend requests %.1f)\n",
           static_cast<double>(report_bytes + resend_bytes + request_bytes) / static_cast<double>(reports),
           static_cast<double>(report_bytes) / static_cast<double>(reports),
           static_cast<double>(resend_bytes) / static_cast<double>(reports),
           static_cast<double>(request_bytes) / static_cast<double>(reports));
  printf("\n");
}

void print_timeline(const ClusterSim &cluster, const ClusterSim &local, Ns bin) {
  const Scenario &s = cluster.scenario();
  printf("admitted per %s (with reports | local only; the policy allows %g per %s after the burst):\n",
         fmt_time(bin).c_str(), s.rate * static_cast<double>(bin) / 1e9, fmt_time(bin).c_str());
  printf("%-15s", "time");
  for (const auto &cl : cluster.clients()) printf(" %16s", cl.name.c_str());
  printf("\n");
  for (Ns t = 0; t < s.duration; t += bin) {
    printf("%-15s", (fmt_time(t) + "-" + fmt_time(std::min(t + bin, s.duration))).c_str());
    for (size_t i = 0; i < cluster.clients().size(); i++)
      printf(" %7" PRIu64 " | %6" PRIu64, cluster.admitted_between(i, t, t + bin),
             local.admitted_between(i, t, t + bin));
    printf("\n");
  }
  printf("\n");
}

std::string fmt_tokens(int64_t milli) {
  char buf[32];
  const uint64_t abs = milli < 0 ? static_cast<uint64_t>(-milli) : static_cast<uint64_t>(milli);
  snprintf(buf, sizeof buf, "%s%" PRIu64 ".%03" PRIu64, milli < 0 ? "-" : "", abs / 1000, abs % 1000);
  return buf;
}

// The reference's A/B trace next to ours, one row per whole second and per event.
int example_ab() {
  struct Row {
    const char *ref_t;
    Ns t;
    bool past;  // state after the events at t (else before them)
    const char *ref_a, *ref_b;
  };
  const Row rows[] = {
      {"0", 0, false, "10", "10"},      {"0.1", 0, true, "1", "2"},         {"0.2", 100 * kMs, true, "0", "2"},
      {"1", kSec, true, "", ""},        {"2", 2 * kSec, true, "", ""},      {"3", 3 * kSec, true, "", ""},
      {"4", 4 * kSec, true, "", ""},    {"5", 4900 * kMs, true, "", ""},    {"5.1", 5000 * kMs, true, "-3", "-3"},
      {"5.2", 5100 * kMs, true, "-3", "-3"}, {"6", 6 * kSec, true, "-2", "-2"}, {"7", 7 * kSec, true, "-1", "-1"},
      {"8", 8 * kSec, true, "0", "0"},  {"9", 9 * kSec, false, "1", "1"},   {"9", 9 * kSec, true, "", ""},
      {"-", 10 * kSec, true, "", ""},
  };
  std::string err;
  auto c = ClusterSim::create(reference_ab_scenario(), &err);
  if (!c) usage_error(err);
  const char *names[] = {"A", "B"};
  printf("Reference A/B example (dthrottle-daemon.txt): hosts A and B, burst 10, rate 1/s,\n"
         "reports every 5 s (sent at t=4.9 and 9.9, 0.1 s on the wire). Events happen 0.1 s\n"
         "earlier here (C's burst at t=0, not 0.1); whole-second rows are at the same second:\n"
         "the reference refills whole tokens at whole seconds from t=0, we refill continuously\n"
         "from C's first request, so both agree at every whole second.\n\n");
  printf("%-6s %-6s %9s %5s %9s %5s  %s\n", "ref t", "sim t", "A tokens", "(ref)", "B tokens", "(ref)", "what happened");
  HostStats before[2] = {c->hosts()[0], c->hosts()[1]};
  for (const Row &r : rows) {
    if (r.past) c->advance_past(r.t);
    else c->advance_to(r.t);
    std::string what;
    auto add = [&](const std::string &s) { what += (what.empty() ? "" : "; ") + s; };
    for (int h = 0; h < 2; h++) {
      const HostStats &now = c->hosts()[h], &was = before[h];
      auto delta = [&](uint64_t a, uint64_t b, const char *verb) {
        if (a > b) add(std::string(names[h]) + " " + verb + " " + std::to_string(a - b));
      };
      delta(now.admitted, was.admitted, "served");
      delta(now.refused, was.refused, "refused");
      if (now.reports > was.reports)
        add(std::string(names[h]) + " reported " + std::to_string(now.hits_reported - was.hits_reported) +
            (now.hits_reported - was.hits_reported == 1 ? " hit" : " hits"));
      delta(now.hits_debited, was.hits_debited, "debited");
      before[h] = now;
    }
    char line[512];
    snprintf(line, sizeof line, "%-6s %-6.1f %9s %5s %9s %5s  %s", r.ref_t, static_cast<double>(r.t) / 1e9,
             fmt_tokens(c->tokens_milli(0, 0)).c_str(), r.ref_a, fmt_tokens(c->tokens_milli(1, 0)).c_str(), r.ref_b,
             what.empty() ? (r.past ? "" : "(before this instant's requests)") : what.c_str());
    std::string text = line;
    text.erase(text.find_last_not_of(' ') + 1);
    printf("%s\n", text.c_str());
  }
  printf("\nC served %" PRIu64 " of %" PRIu64 " requests in 10 s.\n", c->clients()[0].admitted(),
         c->clients()[0].offered);
  return 0;
}

double parse_number(const std::string &s, const char *what) {
  char *end = nullptr;
  const double v = strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v)) usage_error(std::string(what) + ": '" + s + "' is not a number");
  return v;
}

// One run of a busy pattern, printed like the reference's trace: "---" rows while
// busy signals may come, "+++" rows after.
void print_adaptive_run(const Scenario &s, BusyPattern pattern) {
  std::string err;
  auto c = ClusterSim::create(s, &err);
  if (!c) usage_error(err);
  c->run();
  const dt::AdaptiveParams &p = s.adaptive_params;
  if (p.recovery_add > 0) printf("recovery: +%g/s per busy-free second (constant)\n", p.recovery_add);
  else printf("recovery: x%g per busy-free second (multiplicative)\n", p.recovery);
  const Ns end = kReferenceBusyPhase;
  printf("start offered=%g/s busy<=%g/s (%s) limit=%g\n", s.clients[0].rate, s.busy[0].per_second,
         busy_pattern_name(pattern), s.rate);
  bool recovering = false;
  for (const AdaptiveRow &r : c->adaptive_timeline()) {
    if (r.start >= end && !recovering) {
      printf("    ++++ recovering\n");
      recovering = true;
    }
    printf("    %s time=%g offered=%" PRIu64 " admitted=%" PRIu64 " throttled=%" PRIu64 " busy=%" PRIu64
           " limit=%.0f",
           recovering ? "+++" : "---", static_cast<double>(r.end) / 1e9, r.offered, r.admitted, r.throttled, r.busy,
           r.limit[0]);
    if (r.limit.size() > 1) {
      printf(" limits=");
      for (size_t h = 0; h < r.limit.size() && h < kMaxHostColumns; h++) printf("%s%.0f", h ? "," : "", r.limit[h]);
      if (r.limit.size() > kMaxHostColumns) printf(",...");
    }
    printf("\n");
  }
  if (auto at = converged_at(c->adaptive_timeline(), end))
    printf("    converged at time=%g, speed=%g\n", static_cast<double>(*at) / 1e9,
           static_cast<double>(*at - end) / 1e9);
  else
    printf("    failed to converge\n");
}


// What the options set; the value parsers above end the program on a bad value.
struct SimArgs {
  Scenario s;
  std::vector<std::string> bursts, partitions;
  std::string offsets, pattern, recovery, example;
  Ns timeline = 0;
  std::set<std::string> given;  // "--hosts", ...: the options given
  dt::AdaptiveParams adaptive;
  double recovery_add = 200;
};

// An option's handler that notes the option as given, then runs `set` on its value.
dt::OptionHandler noted(SimArgs *a, const char *name, std::function<void(const std::string &)> set) {
  return [=](const std::string &v, std::string *) {
    a->given.insert(std::string("--") + name);
    set(v);
    return true;
  };
}

// The scenario's options: hosts, policy, load balancer, clients, network.
std::vector<dt::OptionSpec> scenario_options(SimArgs *a) {
  Scenario &s = a->s;
  return {
      {"hosts", 0, "N", "hosts behind the load balancer (default 3)",
       noted(a, "hosts", [&s](const std::string &v) { s.hosts = parse_whole(v, 1, 1024, "--hosts"); })},
      {"rate", 0, "R", "policy rate per client: 100, 100/s, 6/m (default 100)",
       noted(a, "rate", [&s](const std::string &v) {
         std::string err;
         if (!dt::parse_rate(v, &s.rate, &err)) usage_error("--rate: " + err);
       })},
      {"burst", 0, "B", "policy burst (default 50)",
       noted(a, "burst", [&s](const std::string &v) { s.burst = parse_whole(v, 1, DT_BURST_MAX, "--burst"); })},
      {"period", 0, "D", "report period: 200ms, 1s (default 200ms)",
       noted(a, "period", [&s](const std::string &v) { s.period = parse_time(v, false, "--period"); })},
      {"duration", 0, "D", "simulated time (default 10s)",
       noted(a, "duration", [&s](const std::string &v) { s.duration = parse_time(v, false, "--duration"); })},
      {"lb", 0, "POLICY", "round-robin | random | sticky (default round-robin)",
       noted(a, "lb", [&s](const std::string &v) {
         if (!parse_lb(v, &s.lb)) usage_error("--lb: '" + v + "' is not round-robin, random or sticky");
       })},
      {"clients", 0, "LIST",
       "one client per item, RATE[@START-STOP], offered requests\nper second, evenly spaced (default 2000)",
       noted(a, "clients", [&s](const std::string &v) { s.clients = parse_clients(v); })},
      {"client-burst", 0, "I:K@T", "client I also sends K requests at once at time T\n(repeatable)",
       noted(a, "client-burst", [a](const std::string &v) { a->bursts.push_back(v); })},
      {"legacy", 0, nullptr, "the cluster before issue 12: every report charged, no\ndebt cap, no resend requests",
       noted(a, "legacy", [&s](const std::string &) { s.legacy(); })},
      {"seed", 0, "S", "seed of the load balancer and network RNGs (default 1)",
       noted(a, "seed", [&s](const std::string &v) { s.seed = parse_whole(v, 0, UINT64_MAX, "--seed"); })},
      {"timeline", 0, "D", "also print admitted per client per D (e.g. 1s)",
       noted(a, "timeline", [a](const std::string &v) { a->timeline = parse_time(v, false, "--timeline"); })},
      {"example", 0, "ab", "the reference daemon's A/B example as a per-second trace",
       noted(a, "example", [a](const std::string &v) { a->example = v; })},
  };
}

// The network between the hosts: loss, duplicates, delay, partitions, report timing.
std::vector<dt::OptionSpec> network_options(SimArgs *a) {
  Scenario &s = a->s;
  return {
      {"loss", 0, "P", "probability that a message to one peer is lost (default 0)",
       noted(a, "loss", [&s](const std::string &v) { s.net.loss = parse_probability(v, "--loss"); })},
      {"dup", 0, "P", "probability that it is delivered twice (default 0)",
       noted(a, "dup", [&s](const std::string &v) { s.net.duplicate = parse_probability(v, "--dup"); })},
      {"delay", 0, "D", "one-way network delay (default 1ms)",
       noted(a, "delay", [&s](const std::string &v) { s.net.delay = parse_time(v, true, "--delay"); })},
      {"jitter", 0, "D", "plus a uniform random [0, D] (default 0)",
       noted(a, "jitter", [&s](const std::string &v) { s.net.jitter = parse_time(v, true, "--jitter"); })},
      {"partition", 0, "A-B:SIDES",
       "from A to B, messages between sides are held (TCP) and\ndelivered at B; SIDES like 0|1,2 (hosts not named "
       "form\none more side), so 3s-6s:0 isolates host 0 (repeatable)",
       noted(a, "partition", [a](const std::string &v) { a->partitions.push_back(v); })},
      {"queue-hwm", 0, "N",
       "messages a cut link holds, beyond them it drops (ZeroMQ's\nhigh-water mark, default 1000); 0: a cut drops "
       "everything",
       noted(a, "queue-hwm", [&s](const std::string &v) { s.net.queue_hwm = parse_whole(v, 0, 10000000, "--queue-hwm"); })},
      {"report-max-age", 0, "D",
       "reports older than D are not charged (default 10 periods);\noff: every report is charged whatever its age",
       noted(a, "report-max-age", [&s](const std::string &v) {
         s.report_max_age = v == "off" ? kNever : parse_time(v, false, "--report-max-age");
       })},
      {"offsets", 0, "LIST", "report phase offset per host: 0,50ms,100ms (default 0)",
       noted(a, "offsets", [a](const std::string &v) { a->offsets = v; })},
      {"down-after", 0, "D", "peer liveness threshold (default 5 periods)",
       noted(a, "down-after", [&s](const std::string &v) { s.peer_down_after = parse_time(v, false, "--down-after"); })},
  };
}

// The adaptive-limit patterns (--pattern) and their controller's parameters.
std::vector<dt::OptionSpec> adaptive_options(SimArgs *a) {
  return {
      {nullptr, 0, nullptr, kAdaptiveHelp, {}},
      {"pattern", 0, "P", "steady (busy the whole 10 s) or flappy (every third second)",
       noted(a, "pattern", [a](const std::string &v) { a->pattern = v; })},
      {"recovery", 0, "R",
       "multiplicative (x3 per busy-free second) or constant\n(+--recovery-add per second); default: both, one "
       "after\nthe other",
       noted(a, "recovery", [a](const std::string &v) { a->recovery = v; })},
      {"recovery-add", 0, "N", "the constant recovery, per second (default 200)",
       noted(a, "recovery-add", [a](const std::string &v) { a->recovery_add = parse_number(v, "--recovery-add"); })},
      {"decrease", 0, "F", "on busy: limit = F x the rate admitted (default 0.5)",
       noted(a, "decrease", [a](const std::string &v) { a->adaptive.decrease = parse_number(v, "--decrease"); })},
      {"floor", 0, "F", "the lowest factor (default 0.01)",
       noted(a, "floor", [a](const std::string &v) { a->adaptive.floor = parse_number(v, "--floor"); })},
  };
}

}  // namespace

int main(int argc, char **argv) {
  // The hosts' AdaptiveSets log their decisions with wall-clock times, which say
  // nothing about simulated time; the tables say it all.
  dt::set_log_level(dt::LogLevel::Warn);
  SimArgs args;
  args.s.clients = parse_clients("2000");
  std::vector<dt::OptionSpec> options = scenario_options(&args);
  for (auto *group : {network_options, adaptive_options})
    for (auto &o : group(&args)) options.push_back(std::move(o));
  if (int code = dt::parse_subcommand(dt::CommandSpec("simulate", kUsage, std::move(options)), argc, argv); code >= 0)
    return code;
  if (!args.example.empty()) {
    if (args.example != "ab") usage_error("--example: the only example is 'ab'");
    return example_ab();
  }
  Scenario &s = args.s;
  const std::vector<std::string> &bursts = args.bursts, &partitions = args.partitions;
  const std::string &offsets = args.offsets, &pattern = args.pattern, &recovery = args.recovery;
  const Ns timeline = args.timeline;
  const std::set<std::string> &given = args.given;
  const dt::AdaptiveParams &adaptive = args.adaptive;
  const double recovery_add = args.recovery_add;
  // Options that refer to hosts or clients, once both are known.
  for (const auto &b : bursts) parse_client_burst(b, &s.clients);
  for (const auto &p : partitions) s.net.partitions.push_back(parse_partition(p, s.hosts));
  if (!offsets.empty())
    for (const auto &o : split(offsets, ',')) s.report_offset.push_back(parse_time(o, true, "--offsets"));
  if (timeline) s.bin = timeline;

  if (!pattern.empty()) {
    BusyPattern bp;
    if (!parse_busy_pattern(pattern, &bp)) usage_error("--pattern: '" + pattern + "' is not steady or flappy");
    for (const char *fixed : {"--rate", "--burst", "--duration", "--clients", "--client-burst", "--partition",
                              "--timeline"})
      if (given.count(fixed)) usage_error(std::string(fixed) + " does not go with --pattern (the pattern fixes it)");
    if (!recovery.empty() && recovery != "multiplicative" && recovery != "constant")
      usage_error("--recovery: '" + recovery + "' is not multiplicative or constant");
    if (!(recovery_add > 0)) usage_error("--recovery-add must be greater than 0");
    Scenario r = busy_reference_scenario(bp, adaptive, given.count("--hosts") ? s.hosts : 1);
    r.period = s.period;
    r.lb = s.lb;
    r.net = s.net;
    r.report_offset = s.report_offset;
    r.peer_down_after = s.peer_down_after;
    r.seed = s.seed;
    std::string err;
    if (!validate(r, &err)) usage_error(err);
    std::string windows;
    for (const BusyWindow &w : r.busy) windows += " " + fmt_time(w.start) + "-" + fmt_time(w.end);
    printf("pattern %s: %zu host%s, one client offering %g/s for %s, adaptive rule %g/s burst %" PRIu64
           ",\nbusy signals (<= %g/s) to host 0 in%s, reports every %s, lb %s\n",
           busy_pattern_name(bp), r.hosts, r.hosts == 1 ? "" : "s", r.clients[0].rate, fmt_time(r.duration).c_str(),
           r.rate, r.burst, r.busy[0].per_second, windows.c_str(), fmt_time(r.period).c_str(), lb_name(r.lb));
    printf("decrease %g (limit = %g x admitted rate, at most once per second), floor %g (limit >= %g/s)\n",
           adaptive.decrease, adaptive.decrease, adaptive.floor, adaptive.floor * r.rate);
    printf("time=N is the second [N-1, N); limit = rate x the factor host 0 applies at its end%s;\n"
           "converged: nothing throttled from time=T on; speed: T - %s (the end of the busy phase)\n\n",
           r.hosts > 1 ? " (limits: every host's)" : "", fmt_time(kReferenceBusyPhase).c_str());
    if (recovery.empty() || recovery == "multiplicative") print_adaptive_run(r, bp);
    if (recovery.empty()) printf("\n");
    if (recovery.empty() || recovery == "constant") {
      r.adaptive_params.recovery_add = recovery_add;
      print_adaptive_run(r, bp);
    }
    return 0;
  }
  for (const char *adaptive_only : {"--recovery", "--recovery-add", "--decrease", "--floor"})
    if (given.count(adaptive_only)) usage_error(std::string(adaptive_only) + " goes with --pattern");

  std::string err;
  auto cluster = ClusterSim::create(s, &err);
  if (!cluster) usage_error(err);
  Scenario alone = s;
  alone.reports = false;
  auto local = ClusterSim::create(alone, &err);
  cluster->run();
  local->run();

  printf("scenario: %zu hosts, rate %g/s, burst %" PRIu64 ", period %s, duration %s, lb %s, seed %" PRIu64 "\n",
         s.hosts, s.rate, s.burst, fmt_time(s.period).c_str(), fmt_time(s.duration).c_str(), lb_name(s.lb), s.seed);
  printf("network:  delay %s + jitter %s, loss %.1f%%, duplicates %.1f%%", fmt_time(s.net.delay).c_str(),
         fmt_time(s.net.jitter).c_str(), 100 * s.net.loss, 100 * s.net.duplicate);
  for (const auto &p : s.net.partitions) printf(", partition %s", fmt_partition(p).c_str());
  printf("\nbudget = burst + rate * T, T = the client's first to last request; ideal = what one\n"
         "global bucket admits of the same requests (<= offered and budget); adm/ideal = admitted/ideal\n\n");
  print_clients("with peer reports:", *cluster);
  print_clients("local only (no reports):", *local);
  print_peers(*cluster);
  if (timeline) print_timeline(*cluster, *local, timeline);
  return 0;
}
