// simulate_options.cpp - the options of build/simulate (simulate_options.h): the value
// parsers, which end the program with a usage error, and the option tables.
#include "simulate_options.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "common/parse_values.h"

namespace dt::sim {
namespace {

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

}  // namespace

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
      if (p.side[host] != static_cast<int>(sides.size())) usage_error("--partition: host " + h + " is named twice");
      p.side[host] = static_cast<int>(side);
    }
  }
  return p;
}

void add_spray(const std::string &spec, std::vector<Client> *clients) {
  const auto parts = split(spec, '@');
  if (parts.size() != 2 && parts.size() != 3)
    usage_error("--spray: '" + spec + "' is not N@D or N@D@S (e.g. 60000@2s)");
  const uint64_t n = parse_whole(parts[0], 1, 100000, "--spray count");
  const Ns d = parse_time(parts[1], false, "--spray");
  const Ns from = parts.size() == 3 ? parse_time(parts[2], true, "--spray start") : 0;
  for (uint64_t i = 0; i < n; i++) {
    Client c;
    c.name = "s" + std::to_string(i);
    c.bursts.push_back({from + d * i / n, 1, -1});
    clients->push_back(c);
  }
}

std::vector<Client> mixed_clients(uint64_t n, double rate) {
  std::vector<Client> out;
  for (uint64_t i = 0; i < n; i++) {
    Client c;
    c.name = "c" + std::to_string(i);
    c.rate = rate * 0.01 * std::pow(5000.0, static_cast<double>(i) / static_cast<double>(n - 1));
    out.push_back(c);
  }
  return out;
}

double parse_number(const std::string &s, const char *what) {
  char *end = nullptr;
  const double v = strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v)) usage_error(std::string(what) + ": '" + s + "' is not a number");
  return v;
}

namespace {

// An option's handler that notes the option as given, then runs `set` on its value.
dt::OptionHandler noted(SimArgs *a, const char *name, std::function<void(const std::string &)> set) {
  return [=](const std::string &v, std::string *) {
    a->given.insert(std::string("--") + name);
    set(v);
    return true;
  };
}

// --NAME, one of two words, `first` or `second` (else a usage error naming both), noted:
// *flag says whether it was `on` (one of them).
dt::OptionHandler noted_either(SimArgs *a, const char *name, const char *first, const char *second, bool *flag,
                               const char *on) {
  return noted(a, name, [=](const std::string &v) {
    if (v != first && v != second)
      usage_error(std::string("--") + name + ": '" + v + "' is not " + first + " or " + second);
    *flag = v == on;
  });
}

// The policy and the load balancer: hosts, rate, burst, period, duration.
std::vector<dt::OptionSpec> policy_options(SimArgs *a) {
  Scenario &s = a->s;
  return {
      {"hosts", 0, "N", "hosts behind the load balancer (default 3)",
       noted(a, "hosts", [&s](const std::string &v) { s.hosts = parse_whole(v, 1, 1024, "--hosts"); })},
      {"rate", 0, "R", "policy rate per client: 100, 100/s, 6/m (default 100)",
       noted(a, "rate",
             [&s](const std::string &v) {
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
       noted(a, "lb",
             [&s](const std::string &v) {
               if (!parse_lb(v, &s.lb)) usage_error("--lb: '" + v + "' is not round-robin, random or sticky");
             })},
  };
}

// The clients: steady ones, a mixed population, a spray, bursts.
std::vector<dt::OptionSpec> client_options(SimArgs *a) {
  Scenario &s = a->s;
  return {
      {"clients", 0, "LIST",
       "one client per item, RATE[@START-STOP], offered requests\nper second, evenly spaced (default 2000)",
       noted(a, "clients", [&s](const std::string &v) { s.clients = parse_clients(v); })},
      {"mixed-clients", 0, "N",
       "N clients of mixed rates instead (geometric from 1% to 50x\nthe policy rate, e.g. 1/s to 5000/s at rate 100)",
       noted(a, "mixed-clients",
             [a](const std::string &v) { a->mixed = parse_whole(v, 2, 100000, "--mixed-clients"); })},
      {"spray", 0, "N@D",
       "also N light sources, one request each, evenly spread over\n[0, D), or [S, S + D) (e.g. 60000@2s, "
       "60000@3s@1s): what\nreports cost",
       noted(a, "spray", [a](const std::string &v) { a->spray = v; })},
      {"client-burst", 0, "I:K@T", "client I also sends K requests at once at time T\n(repeatable)",
       noted(a, "client-burst", [a](const std::string &v) { a->bursts.push_back(v); })},
  };
}

// How reports travel: the scheme, its cadence and liveness, the hubs.
std::vector<dt::OptionSpec> scheme_options(SimArgs *a) {
  Scenario &s = a->s;
  return {
      {"legacy", 0, nullptr, "the cluster before: every report charged, no debt cap,\nno resend requests",
       noted(a, "legacy", [&s](const std::string &) { s.legacy(); })},
      {"scheme", 0, "S",
       "reporting scheme: owner (default: sources seen on one host\ngo to their owner only, shared ones to every "
       "peer), "
       "mesh\n(every source to every peer), hub (a pair of summing hubs:\nagent hub --aggregate; "
       "docs/cluster-scale.md)",
       noted(a, "scheme",
             [&s](const std::string &v) {
               if (!parse_scheme(v, &s.scheme)) usage_error("--scheme: '" + v + "' is not owner, mesh or hub");
             })},
      {"cadence", 0, "C",
       "agent (default: as the agent, a quiet period sends only\nheartbeats, as --liveness says, one-hit sources wait "
       "for\ntheir owner "
       "in batches) or every-period (a report to every\npeer and a message to each owner every period: before)",
       noted_either(a, "cadence", "agent", "every-period", &s.cadence, "agent")},
      {"liveness", 0, "L",
       "with --cadence agent: link (default, the agent with keys in a\nfull mesh: a signed heartbeat every 20 s, "
       "one-hit sources\n"
       "wait until their owner's batch is quiet 1 s, a cut peer\ndown after 2 s) or signed (a heartbeat a second: "
       "hubs,\n--insecure-cluster)",
       noted_either(a, "liveness", "link", "signed", &s.link_liveness, "link")},
      {"shared-period", 0, "D",
       "--scheme owner: at the early ticks, at most every D, the\nhits of shared sources below half the burst to "
       "every\npeer (default: the agent's pace; 0: off)",
       noted(a, "shared-period",
             [&s](const std::string &v) { s.shared_period = parse_time(v, true, "--shared-period"); })},
      {"hub-period", 0, "D",
       "--scheme hub: how often each hub sends its sums (default\n50ms, as agent hub --aggregate)",
       noted(a, "hub-period", [&s](const std::string &v) { s.hub_period = parse_time(v, false, "--hub-period"); })},
      {"hub-fails-at", 0, "T",
       "--scheme hub: the hub the hosts take sums from stops at\ntime T (they switch to the other)",
       noted(a, "hub-fails-at",
             [&s](const std::string &v) { s.hub_fails_at = parse_time(v, true, "--hub-fails-at"); })},
  };
}

// What is printed, and the seed.
std::vector<dt::OptionSpec> output_options(SimArgs *a) {
  Scenario &s = a->s;
  return {
      {"all-rows", 0, nullptr,
       "print every host's and client's row (default: the first\n8 hosts, 24 clients, and the totals)",
       noted(a, "all-rows", [a](const std::string &) { a->all_rows = true; })},
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
       noted(a, "queue-hwm",
             [&s](const std::string &v) { s.net.queue_hwm = parse_whole(v, 0, 10000000, "--queue-hwm"); })},
      {"report-max-age", 0, "D",
       "reports older than D are not charged (default 10 periods);\noff: every report is charged whatever its age",
       noted(a, "report-max-age",
             [&s](const std::string &v) {
               s.report_max_age = v == "off" ? kNever : parse_time(v, false, "--report-max-age");
             })},
      {"offsets", 0, "LIST",
       "report phase offset per host: 0,50ms,100ms; random (default:\nseeded, as agents started at different "
       "times) or aligned\n(every host at 0)",
       noted(a, "offsets", [a](const std::string &v) { a->offsets = v; })},
      {"early-report", 0, "D",
       "report sources new to a host at ticks D apart within a\nperiod (default: a quarter "
       "period); off: only at the\nperiod's end (docs/cluster-scale.md \"First contact\")",
       noted(a, "early-report", [a](const std::string &v) { a->early = v; })},
      {"join", 0, "H@T",
       "host H joins the running cluster at time T (down before:\nno requests, deaf, silent); e.g. 39@2s",
       noted(a, "join", [a](const std::string &v) { a->join = v; })},
      {"join-start", 0, "S",
       "empty (default, the agent's): in the joiner's first report\nmax age, a source a peer reports starts "
       "empty there;\nfull: its buckets start full (docs/cluster-scale.md)",
       noted_either(a, "join-start", "full", "empty", &s.join_empty, "empty")},
      {"early-min-hits", 0, "N", "a new source goes early once it has N hits (default 2)",
       noted(a, "early-min-hits",
             [&s](const std::string &v) { s.early_min_hits = parse_whole(v, 1, 1000000, "--early-min-hits"); })},
      {"down-after", 0, "D", "peer liveness threshold (default 5 periods)",
       noted(a, "down-after",
             [&s](const std::string &v) { s.peer_down_after = parse_time(v, false, "--down-after"); })},
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

int parse_simulate_args(int argc, char **argv, SimArgs *args) {
  args->s.clients = parse_clients("2000");
  args->s.scheme = Scheme::Owner;  // the agent's scheme (Scenario's default stays mesh for the tests)
  args->s.cadence = true;          // ... and its cadence
  args->s.link_liveness = true;    // ... and its liveness with keys in a full mesh
  args->offsets = "random";
  args->s.join_empty = true;  // the agent's JoinGuard (Scenario's default stays full for the tests)
  std::vector<dt::OptionSpec> options = policy_options(args);
  for (auto *group : {client_options, scheme_options, output_options, network_options, adaptive_options})
    for (auto &o : group(args)) options.push_back(std::move(o));
  return dt::parse_subcommand(dt::CommandSpec("simulate", kUsage, std::move(options)), argc, argv);
}

}  // namespace dt::sim
