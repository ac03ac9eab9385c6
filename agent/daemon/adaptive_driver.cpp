// adaptive_driver.cpp - adaptive limits wired to the maps, the tag table and the
// listen-queue signal.
#include "daemon/adaptive_driver.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/json.h"
#include "dataplane/collector.h"
#include "dataplane/dataplane.h"

namespace dt {

bool BusyRelay::busy(std::string_view name, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  return driver_ && driver_->busy_from_query(name, now_ns);
}

void BusyRelay::attach(AdaptiveDriver *d) {
  std::lock_guard<std::mutex> lock(mu_);
  driver_ = d;
}

AdaptiveDriver::AdaptiveDriver(Dataplane &dp, const RuleMaps &maps, TagTable &tags, BusyRelay *relay)
    : dp_(dp), relay_(relay), maps_(maps), tags_(tags) {
  if (relay_) relay_->attach(this);
}

AdaptiveDriver::~AdaptiveDriver() {
  if (relay_) relay_->attach(nullptr);
  if (collector_) collector_->disable();
}

bool AdaptiveDriver::configure(const LoadedRules &rules, const std::vector<TagRule> &tag_rules, bool own_collector,
                               uint64_t period_ns, std::string *err) {
  std::vector<AdaptiveRuleSpec> specs;
  std::vector<Watched> watched;
  bool packet = false;
  for (const PacketRule &r : rules.set.rules) {
    if (!r.adaptive.enabled) continue;
    specs.push_back({AdaptiveKind::Packet, r.name, r.id, r.rate, r.adaptive.params});
    if (r.adaptive.listen_port) watched.push_back({AdaptiveKind::Packet, r.name, r.adaptive.listen_port});
    packet = true;
  }
  for (size_t i = 0; i < tag_rules.size(); i++) {
    const TagRule &t = tag_rules[i];
    if (!t.adaptive.enabled) continue;
    specs.push_back({AdaptiveKind::Tag, t.prefix, static_cast<uint32_t>(i), t.rate, t.adaptive.params});
    if (t.adaptive.listen_port) watched.push_back({AdaptiveKind::Tag, t.prefix, t.adaptive.listen_port});
  }
  // Peers' factors count for as long as a peer counts as alive: 5 periods.
  set_.configure(specs, 5 * period_ns);
  rules_ = &rules;
  tag_rules_ = tag_rules;
  tries_synced_ = false;  // the agent has just published `rules` once: one more to go
  applied_base_ = false;
  period_ns_ = period_ns;

  if (packet && own_collector && !collector_) {
    collector_ = std::make_unique<Collector>(dp_.config_fd(), dp_.active_ring_fd(), dp_.active_stage_fd(),
                                             dp_.collect_batch_fd(), dp_.collect_prog_fd());
    if (int rc = collector_->enable(false); rc != 0) {
      collector_.reset();
      *err = std::string("cannot turn on per-source hit counting for adaptive rules: ") + strerror(-rc);
      return false;
    }
  } else if ((!packet || !own_collector) && collector_) {
    collector_->disable();
    collector_.reset();
  }

  std::vector<uint16_t> ports;
  for (const Watched &w : watched) ports.push_back(w.port);
  watched_ = std::move(watched);
  listen_ = ports.empty() ? nullptr : std::make_unique<ListenQueueWatch>(ports);
  return apply(err);
}

bool AdaptiveDriver::busy_from_query(std::string_view name, uint64_t now_ns) {
  if (set_.busy(AdaptiveKind::Packet, name, "query socket", now_ns)) return true;
  const std::optional<std::string> prefix = tags_.rule_prefix_of(name);
  return prefix && set_.busy(AdaptiveKind::Tag, *prefix, "query socket", now_ns);
}

void AdaptiveDriver::observe_tags(const std::vector<TagHit> &hits) {
  for (const TagHit &h : hits)
    if (const auto rule = tags_.rule_of(h.tag)) set_.add_tag_hits(*rule, h.tag, h.hits);
}

void AdaptiveDriver::poll_signals(uint64_t now_ns) {
  if (!listen_) return;
  std::vector<ListenQueueWatch::PortState> ports;
  std::string why;
  uint64_t suppressed = 0;
  if (!listen_->poll(&ports, &why)) {
    if (warn_.allow(now_ns, &suppressed)) DT_WARN("adaptive rules: cannot read the TCP listen queues: %s", why.c_str());
    return;
  }
  for (size_t i = 0; i < ports.size() && i < watched_.size(); i++) {
    if (!ports[i].busy()) continue;
    char source[96];
    snprintf(source, sizeof source, "TCP port %u listen queue %u/%u%s", ports[i].port, ports[i].queued,
             ports[i].backlog, ports[i].overflows ? ", overflowing" : "");
    set_.busy(watched_[i].kind, watched_[i].name, source, now_ns);
  }
}

void AdaptiveDriver::on_period(uint64_t now_ns, bool own_tags) {
  if (set_.empty()) return;
  if (collector_) {
    int rc = 0;
    const std::vector<ReportEntry> served = collector_->end_period(&rc);
    uint64_t suppressed = 0;
    if (rc != 0 && warn_.allow(now_ns, &suppressed))
      DT_WARN("adaptive rules: counting this period's hits failed: %s", strerror(-rc));
    set_.add_packet_hits(served);
  }
  if (own_tags) observe_tags(tags_.collect());
  const uint64_t span = last_period_ns_ && now_ns > last_period_ns_ ? now_ns - last_period_ns_ : period_ns_;
  last_period_ns_ = now_ns;
  if (set_.on_period(now_ns, span)) {
    std::string err;
    uint64_t suppressed = 0;
    if (!apply(&err) && warn_.allow(now_ns, &suppressed))
      DT_WARN("adaptive rules: cannot apply the new limits: %s", err.c_str());
  }
}

bool AdaptiveDriver::apply(std::string *err) {
  if (!rules_) return true;
  // Tag rules: the table scales their rates itself.
  tags_.set_factors(set_.factors(AdaptiveKind::Tag, tag_rules_.size()));
  // Packet rules: the kernel's policies, republished as a whole (double-banked).
  bool any_packet = false;
  std::vector<dt_policy> policies = rules_->compiled.policies;
  const std::vector<double> f = set_.factors(AdaptiveKind::Packet, policies.size());
  for (size_t i = 0; i < policies.size(); i++) {
    if (f[i] >= 1.0) continue;
    policies[i] = adaptive_policy(policies[i], f[i]);
    any_packet = true;
  }
  if (!any_packet && applied_base_) return true;
  // Until both banks of the rules trie hold this rule set (one full publish of ours
  // after the agent's own), the trie is written too; then the policies alone.
  const int rc = tries_synced_ ? publish_policies_only(maps_, policies)
                               : publish_rules(maps_, policies, rules_->compiled.lpm, rules_->names,
                                               rules_->compiled.prefix, rules_->compiled.cond);
  if (rc != 0) {
    *err = std::string("cannot write the policies: ") + strerror(-rc);
    return false;
  }
  tries_synced_ = true;
  applied_base_ = !any_packet;
  return true;
}

std::string AdaptiveDriver::status_json(uint64_t now_ns) const { return adaptive_status_json(status(now_ns)); }

std::string adaptive_status_json(const std::vector<AdaptiveStatus> &all) {
  Json j = Json::array();
  for (const AdaptiveStatus &s : all)
    j.push_back(Json{{"kind", s.kind == AdaptiveKind::Packet ? "rule" : "tag"},
                     {"name", s.name},
                     {"rate", printed_number("%.9g", s.rate)},
                     {"factor", printed_number("%.6f", s.factor)},
                     {"limit", printed_number("%.9g", s.rate * s.factor)},
                     {"own_factor", printed_number("%.6f", s.local_factor)},
                     {"lowest_from", s.lowest_from},
                     {"observed", printed_number("%.9g", s.observed)},
                     {"busy_signals", s.busy_signals},
                     {"decreases", s.decreases},
                     {"scope", s.cluster ? "cluster" : "local"}});
  return dump_json(j);
}

std::string AdaptiveDriver::status_text(uint64_t now_ns) const {
  const auto all = status(now_ns);
  if (all.empty()) return "";
  std::string out = "adaptive rules:\n";
  char buf[512];
  snprintf(buf, sizeof buf, "  %-4s %-24s %12s %9s %12s %12s %8s  %s\n", "KIND", "NAME", "RATE/S", "FACTOR", "LIMIT/S",
           "BUSIEST/S", "BUSY", "LOWEST FROM");
  out += buf;
  for (const AdaptiveStatus &s : all) {
    const std::string name = s.kind == AdaptiveKind::Tag ? "\"" + s.name + "\"" : s.name;
    snprintf(buf, sizeof buf, "  %-4s %-24s %12.6g %9.4f %12.6g %12.6g %8llu  %s\n",
             s.kind == AdaptiveKind::Packet ? "rule" : "tag", name.c_str(), s.rate, s.factor, s.rate * s.factor,
             s.observed, static_cast<unsigned long long>(s.busy_signals),
             !s.cluster              ? "(local only)"
             : s.lowest_from.empty() ? "this host"
                                     : s.lowest_from.c_str());
    out += buf;
  }
  return out;
}

}  // namespace dt
