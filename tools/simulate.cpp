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
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/parse_values.h"
#include "sim/cluster_sim.h"
#include "simulate_options.h"

namespace {

using namespace dt::sim;

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

constexpr size_t kMaxClientRows = 24;

void print_clients(const char *title, const ClusterSim &c, bool all) {
  const size_t cols = std::min(c.scenario().hosts, kMaxHostColumns);
  printf("%s\n%-8s %9s %8s %8s %9s %9s %9s |", title, "client", "offered", "budget", "ideal", "admitted", "adm/ideal",
         "refused");
  for (size_t h = 0; h < cols; h++) printf(" %7s", ("h" + std::to_string(h)).c_str());
  printf("%s\n", c.scenario().hosts > cols ? " ..." : "");
  auto row = [](const char *name, uint64_t offered, uint64_t budget, uint64_t ideal, uint64_t admitted,
                uint64_t refused) {
    printf("%-8s %9" PRIu64 " %8" PRIu64 " %8" PRIu64 " %9" PRIu64 " %9.3f %9" PRIu64 " |", name, offered, budget,
           ideal, admitted, ideal ? static_cast<double>(admitted) / static_cast<double>(ideal) : 0.0, refused);
  };
  uint64_t offered = 0, budget = 0, ideal = 0, admitted = 0, refused = 0;
  size_t row_no = 0;
  for (const auto &cl : c.clients()) {
    offered += cl.offered, budget += cl.budget, ideal += cl.ideal, admitted += cl.admitted(), refused += cl.refused;
    if (!all && row_no++ >= kMaxClientRows) continue;
    row(cl.name.c_str(), cl.offered, cl.budget, cl.ideal, cl.admitted(), cl.refused);
    for (size_t h = 0; h < cols; h++) printf(" %7" PRIu64, cl.admitted_by_host[h]);
    printf("\n");
  }
  if (!all && c.clients().size() > kMaxClientRows)
    printf("... %zu clients more (--all-rows prints them)\n", c.clients().size() - kMaxClientRows);
  if (c.clients().size() > 1) {
    row("all", offered, budget, ideal, admitted, refused);
    printf("\n");
  }
  printf("\n");
}

// Host h's row is printed: every host with --all-rows, else the first kMaxHostColumns.
bool shown(size_t h, bool all) { return all || h < kMaxHostColumns; }

// Scheme::Hub: which hub the hosts took their sums from, failovers, own hits taken out.
void print_intake(const ClusterSim &c) {
  std::map<std::string, size_t> active;
  uint64_t failovers = 0, replayed = 0, overlaps = 0, missing = 0, own = 0;
  for (size_t h = 0; h < c.hosts().size(); h++) {
    const dt::AggregateCounters a = c.aggregate_counters(h);
    active[a.active_hub.empty() ? "none" : a.active_hub]++;
    failovers += a.failovers, replayed += a.replayed, overlaps += a.overlaps, missing += a.own_missing;
    own += a.own_hits_subtracted;
  }
  printf("summing hubs: hosts taking sums from");
  for (const auto &[hub, n] : active) printf(" %s: %zu", hub.c_str(), n);
  printf("; failovers %" PRIu64 ", aggregates replayed %" PRIu64 ", refused (overlap %" PRIu64 ", own missing %" PRIu64
         "); own hits subtracted %" PRIu64 "\n\n",
         failovers, replayed, overlaps, missing, own);
}

// Per host, per period: entries, bytes and messages received and sent (mean and busiest
// period), then the same over all hosts (mean of the means, max of the maxima).
void print_traffic(const ClusterSim &c, bool all) {
  printf(
      "report traffic per host and period (with reports; every copy a peer gets or sends):\n"
      "%-6s %9s %9s %10s %10s %7s | %9s %9s %10s %10s %7s\n",
      "host", "in-ent", "max", "in-bytes", "max", "in-msg", "out-ent", "max", "out-bytes", "max", "out-msg");
  HostTraffic sum_in, sum_out;
  auto row = [](const char *name, const HostTraffic &in, const HostTraffic &out, double n) {
    const double p = static_cast<double>(in.periods ? in.periods : 1) * n;
    printf("%-6s %9.1f %9" PRIu64 " %10.0f %10" PRIu64 " %7.1f | %9.1f %9" PRIu64 " %10.0f %10" PRIu64 " %7.1f\n", name,
           static_cast<double>(in.total.entries) / p, in.max.entries, static_cast<double>(in.total.bytes) / p,
           in.max.bytes, static_cast<double>(in.total.messages) / p, static_cast<double>(out.total.entries) / p,
           out.max.entries, static_cast<double>(out.total.bytes) / p, out.max.bytes,
           static_cast<double>(out.total.messages) / p);
  };
  for (size_t h = 0; h < c.hosts().size(); h++) {
    const HostTraffic in = c.traffic(h, true), out = c.traffic(h, false);
    if (shown(h, all)) row(("h" + std::to_string(h)).c_str(), in, out, 1);
    for (auto [sum, t] : {std::pair{&sum_in, &in}, std::pair{&sum_out, &out}}) {
      sum->total += t->total;
      sum->periods = t->periods;
      sum->max = Traffic{std::max(sum->max.entries, t->max.entries), std::max(sum->max.bytes, t->max.bytes),
                         std::max(sum->max.messages, t->max.messages)};
    }
  }
  row("all", sum_in, sum_out, static_cast<double>(c.hosts().size()));
  for (size_t j = 0; j < c.hub_count(); j++)
    row(("hub" + std::to_string(j + 1)).c_str(), c.hub_traffic(j, true), c.hub_traffic(j, false), 1);
  printf(
      "(mean per period; max: the busiest period of a host; all: the mean host, the busiest host's\n"
      " busiest period%s)\n\n",
      c.hub_count() ? "; hubN: a summing hub, out = to every host" : "");
  if (c.hub_count()) print_intake(c);
}

void print_peers(const ClusterSim &c, bool all) {
  printf(
      "peer reports (with reports):\n%-5s %7s %8s %8s %6s %6s %6s %6s %6s | %7s %7s %8s %6s %6s %6s %8s %8s %5s %5s\n",
      "host", "reports", "hits-out", "msgs-out", "lost", "held", "cut", "dup", "resent", "msgs-in", "applied",
      "rejected", "gaps", "recov", "stale", "debited", "not-chg", "downs", "ups");
  for (size_t h = 0; h < c.hosts().size(); h++) {
    const HostStats &s = c.hosts()[h];
    uint64_t gaps = 0;
    for (const auto &[id, p] : c.tracker(h).peers()) gaps += p.lost;
    if (!shown(h, all)) continue;
    printf("h%-4zu %7" PRIu64 " %8" PRIu64 " %8" PRIu64 " %6" PRIu64 " %6" PRIu64 " %6" PRIu64 " %6" PRIu64 " %6" PRIu64
           " | %7" PRIu64 " %7" PRIu64 " %8" PRIu64 " %6" PRIu64 " %6" PRIu64 " %6" PRIu64 " %8" PRIu64 " %8" PRIu64
           " %5" PRIu64 " %5" PRIu64 "\n",
           h, s.reports, s.hits_reported, s.messages_sent, s.lost, s.queued, s.cut, s.duplicated, s.resends, s.received,
           s.accepted, s.rejected, gaps, s.recovered, s.stale, s.hits_debited, s.stale_hits, s.peer_downs, s.peer_ups);
  }
  if (!shown(c.hosts().size() - 1, all))
    printf("... %zu hosts more (--all-rows prints them)\n", c.hosts().size() - kMaxHostColumns);
  uint64_t report_bytes = 0, resend_bytes = 0, request_bytes = 0, reports = 0;
  uint64_t early_msgs = 0, early_entries = 0, directed = 0, relayed = 0;
  for (const HostStats &s : c.hosts()) {
    report_bytes += s.report_bytes, resend_bytes += s.resend_bytes, request_bytes += s.request_bytes;
    reports += s.reports * (c.hosts().size() - 1);
    early_msgs += s.early_messages, early_entries += s.early_entries, directed += s.directed, relayed += s.relayed;
  }
  printf(
      "(msgs-out counts one per receiver; held = kept by a partition and delivered at its end,\n"
      " cut = dropped by it; rejected = duplicates or late reorders the tracker refused; gaps =\n"
      " messages missing from a peer's sequence, recov = of those, resent and applied; stale =\n"
      " messages too old to charge, not-chg = their hits)\n");
  if (c.scenario().scheme == Scheme::Owner || early_msgs)
    printf("all hosts: %" PRIu64 " messages to one owner, %" PRIu64
           " entries relayed by owners; early reports: %" PRIu64 " messages (one per destination), %" PRIu64
           " entries\n",
           directed, relayed, early_msgs, early_entries);
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
      {"0", 0, false, "10", "10"},           {"0.1", 0, true, "1", "2"},
      {"0.2", 100 * kMs, true, "0", "2"},    {"1", kSec, true, "", ""},
      {"2", 2 * kSec, true, "", ""},         {"3", 3 * kSec, true, "", ""},
      {"4", 4 * kSec, true, "", ""},         {"5", 4900 * kMs, true, "", ""},
      {"5.1", 5000 * kMs, true, "-3", "-3"}, {"5.2", 5100 * kMs, true, "-3", "-3"},
      {"6", 6 * kSec, true, "-2", "-2"},     {"7", 7 * kSec, true, "-1", "-1"},
      {"8", 8 * kSec, true, "0", "0"},       {"9", 9 * kSec, false, "1", "1"},
      {"9", 9 * kSec, true, "", ""},         {"-", 10 * kSec, true, "", ""},
  };
  std::string err;
  auto c = ClusterSim::create(reference_ab_scenario(), &err);
  if (!c) usage_error(err);
  const char *names[] = {"A", "B"};
  printf(
      "Reference A/B example (dthrottle-daemon.txt): hosts A and B, burst 10, rate 1/s,\n"
      "reports every 5 s (sent at t=4.9 and 9.9, 0.1 s on the wire). Events happen 0.1 s\n"
      "earlier here (C's burst at t=0, not 0.1); whole-second rows are at the same second:\n"
      "the reference refills whole tokens at whole seconds from t=0, we refill continuously\n"
      "from C's first request, so both agree at every whole second.\n\n");
  printf("%-6s %-6s %9s %5s %9s %5s  %s\n", "ref t", "sim t", "A tokens", "(ref)", "B tokens", "(ref)",
         "what happened");
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
    printf("    %s time=%g offered=%" PRIu64 " admitted=%" PRIu64 " throttled=%" PRIu64 " busy=%" PRIu64 " limit=%.0f",
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
  else printf("    failed to converge\n");
}

// Completes the scenario with the options that refer to hosts or clients, once both are known.
void apply_host_options(SimArgs &args) {
  Scenario &s = args.s;
  const std::set<std::string> &given = args.given;
  for (const auto &b : args.bursts) parse_client_burst(b, &s.clients);
  for (const auto &p : args.partitions) s.net.partitions.push_back(parse_partition(p, s.hosts));
  const std::string &offsets = args.offsets;
  if (offsets == "random") s.random_phase = true;
  else if (offsets != "aligned" && !offsets.empty())
    for (const auto &o : split(offsets, ',')) s.report_offset.push_back(parse_time(o, true, "--offsets"));
  if (!args.join.empty()) {
    const auto at = args.join.find('@');
    if (at == std::string::npos) usage_error("--join: give HOST@TIME, e.g. 39@2s");
    s.join_host = static_cast<int>(parse_whole(args.join.substr(0, at), 0, s.hosts - 1, "--join"));
    s.join_at = parse_time(args.join.substr(at + 1), true, "--join");
  }
  if (args.early == "quarter") s.early_report = s.period / 4;
  else if (args.early != "off") s.early_report = parse_time(args.early, false, "--early-report");
  if (s.early_report >= s.period) usage_error("--early-report must be shorter than the period (or off)");
  // The agent's owner scheme sends shared sources near their limit at its early ticks.
  if (s.scheme == Scheme::Owner && !given.count("--shared-period"))  // as the agent's ticks
    s.shared_period = s.early_report ? dt::shared_early_pace(s.period, s.early_report) : 0;
  if (args.timeline) s.bin = args.timeline;
  else s.bin = s.duration;  // one bin: the per-client tables need no more (memory)
  if (args.mixed) {
    if (given.count("--clients")) usage_error("--mixed-clients replaces --clients: give one of them");
    s.clients = mixed_clients(args.mixed, s.rate);
  }
  if (!args.spray.empty()) add_spray(args.spray, &s.clients);
}

// --pattern: the adaptive rule's reference scenario, with each recovery asked for.
int run_pattern(const SimArgs &args) {
  const Scenario &s = args.s;
  const std::string &pattern = args.pattern, &recovery = args.recovery;
  const std::set<std::string> &given = args.given;
  const dt::AdaptiveParams &adaptive = args.adaptive;
  BusyPattern bp;
  if (!parse_busy_pattern(pattern, &bp)) usage_error("--pattern: '" + pattern + "' is not steady or flappy");
  for (const char *fixed :
       {"--rate", "--burst", "--duration", "--clients", "--client-burst", "--partition", "--timeline"})
    if (given.count(fixed)) usage_error(std::string(fixed) + " does not go with --pattern (the pattern fixes it)");
  if (!recovery.empty() && recovery != "multiplicative" && recovery != "constant")
    usage_error("--recovery: '" + recovery + "' is not multiplicative or constant");
  if (!(args.recovery_add > 0)) usage_error("--recovery-add must be greater than 0");
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
  printf(
      "time=N is the second [N-1, N); limit = rate x the factor host 0 applies at its end%s;\n"
      "converged: nothing throttled from time=T on; speed: T - %s (the end of the busy phase)\n\n",
      r.hosts > 1 ? " (limits: every host's)" : "", fmt_time(kReferenceBusyPhase).c_str());
  if (recovery.empty() || recovery == "multiplicative") print_adaptive_run(r, bp);
  if (recovery.empty()) printf("\n");
  if (recovery.empty() || recovery == "constant") {
    r.adaptive_params.recovery_add = args.recovery_add;
    print_adaptive_run(r, bp);
  }
  return 0;
}

// The scenario run twice, with peer reports and without, and the tables asked for.
int run_scenario(const SimArgs &args) {
  const Scenario &s = args.s;
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
  printf("reports:  scheme %s, phases %s, early reports %s%s\n", scheme_name(s.scheme),
         s.random_phase            ? "random (seeded)"
         : s.report_offset.empty() ? "aligned"
                                   : "given",
         s.early_report ? ("every " + fmt_time(s.early_report)).c_str() : "off",
         s.shared_period ? (", shared sources near their limit every " + fmt_time(s.shared_period)).c_str() : "");
  printf("network:  delay %s + jitter %s, loss %.1f%%, duplicates %.1f%%", fmt_time(s.net.delay).c_str(),
         fmt_time(s.net.jitter).c_str(), 100 * s.net.loss, 100 * s.net.duplicate);
  for (const auto &p : s.net.partitions) printf(", partition %s", fmt_partition(p).c_str());
  printf(
      "\nbudget = burst + rate * T, T = the client's first to last request; ideal = what one\n"
      "global bucket admits of the same requests (<= offered and budget); adm/ideal = admitted/ideal\n\n");
  print_clients("with peer reports:", *cluster, args.all_rows);
  print_clients("local only (no reports):", *local, args.all_rows);
  print_peers(*cluster, args.all_rows);
  print_traffic(*cluster, args.all_rows);
  if (args.timeline) print_timeline(*cluster, *local, args.timeline);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  // The hosts' AdaptiveSets log their decisions with wall-clock times, which say
  // nothing about simulated time; the tables say it all.
  dt::set_log_level(dt::LogLevel::Warn);
  SimArgs args;
  if (int code = parse_simulate_args(argc, argv, &args); code >= 0) return code;
  if (!args.example.empty()) {
    if (args.example != "ab") usage_error("--example: the only example is 'ab'");
    return example_ab();
  }
  apply_host_options(args);
  if (!args.pattern.empty()) return run_pattern(args);
  for (const char *adaptive_only : {"--recovery", "--recovery-add", "--decrease", "--floor"})
    if (args.given.count(adaptive_only)) usage_error(std::string(adaptive_only) + " goes with --pattern");
  return run_scenario(args);
}
