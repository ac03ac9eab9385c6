// cluster.cpp - ZeroMQ pub-sub of period reports and their application as debits.
#include "cluster/cluster.h"

#include <bpf/bpf.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <zmq.hpp>

#include "cluster/boot_counter.h"
#include "cluster/cluster_status.h"
#include "cluster/curve.h"
#include "cluster/socket_drain.h"
#include "cluster_core/inbound.h"
#include "common/address.h"
#include "common/clock.h"
#include "dataplane/dataplane.h"
#include "dataplane/debits.h"
#include "dthrottle/bucket.h"

namespace dt {
namespace {

constexpr size_t kMaxDrainMessages = 10000;  // a drain at most: the period tick must not starve

}  // namespace

uint64_t report_max_age_ns(const ClusterConfig &cfg) { return report_max_age_ns(cfg.report_max_age_ns, cfg.period_ns); }

bool link_liveness(const ClusterConfig &cfg) { return !cfg.curve_key_file.empty() && cfg.hubs.empty(); }

ClusterTimes cluster_times(const ClusterConfig &cfg) {
  return ClusterTimes{cfg.period_ns, cfg.down_after_ns, report_max_age_ns(cfg), link_liveness(cfg)};
}

uint64_t heartbeat_ns(const ClusterConfig &cfg) { return heartbeat_ns(cluster_times(cfg)); }
CadenceOptions cadence_options(const ClusterConfig &cfg) { return cadence_options(cluster_times(cfg)); }
uint64_t peer_down_after_ns(const ClusterConfig &cfg) { return peer_down_after_ns(cluster_times(cfg)); }
uint64_t aggregate_down_after_ns(const ClusterConfig &cfg) { return aggregate_down_after_ns(cluster_times(cfg)); }

NodeSettings node_settings(const ClusterConfig &cfg, bool took_over) {
  NodeSettings s;
  s.node_id = cfg.node_id;
  s.times = cluster_times(cfg);
  s.owner_scheme = cfg.owner_scheme;
  s.peers = cfg.peers.size();
  s.hubs = cfg.hubs.size();
  s.authenticated = !cfg.curve_key_file.empty();
  s.early_report_ns = cfg.early_report_ns;
  s.starts_empty = !took_over;
  return s;
}

TrackerOptions tracker_options(const ClusterConfig &cfg) { return tracker_options(node_settings(cfg)); }

// Mixed versions: which one a refused message speaks, and what to do.
static std::string version_detail(DecodeError e, const void *data, size_t len) {
  if (e != DecodeError::WrongVersion) return "";
  return " (protocol version " + std::to_string(peek_version(data, len)) + ", this agent speaks " +
         std::to_string(kProtocolVersion) + ": upgrade every agent of the cluster)";
}

Cluster::Cluster(const ClusterConfig &cfg, Dataplane &dp)
    : cfg_(cfg),
      dp_(dp),
      collector_(dp.config_fd(), dp.active_ring_fd(), dp.active_stage_fd(), dp.collect_batch_fd(),
                 dp.collect_prog_fd()),
      node_(node_options(node_settings(cfg, dp.took_over())), rules_),
      verified_ring_(std::make_unique<VerifiedRing>(dp.verified_ring_fd())),
      verified_in_(cfg.verified_ttl_ns, kMaxVerifiedLearnedPerPeriod, cfg.peer_verified, cfg.verified_hold) {
  node_.receiver().set_relay_member([this](const std::string &id) { return relay_member(id); });
}

Cluster::~Cluster() {
  collector_.disable();
  if (pub_mon_) zmq_socket_monitor(pub_->handle(), nullptr, 0);
  if (sub_mon_) zmq_socket_monitor(sub_->handle(), nullptr, 0);
  if (pub_mon_) pub_mon_->close();
  if (sub_mon_) sub_mon_->close();
  if (pub_) pub_->close();
  if (sub_) sub_->close();
  auth_.reset();
}

std::unique_ptr<Cluster> Cluster::create(const ClusterConfig &cfg, Dataplane &dp, std::string *err) {
  std::unique_ptr<Cluster> c(new Cluster(cfg, dp));
  uint32_t random_bits = 0;
  if (getrandom(&random_bits, sizeof random_bits, 0) != sizeof random_bits)
    random_bits = static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::string warn;
  const uint32_t counter = next_boot_counter(cfg.boot_file, unix_now_ms() / 1000, &warn);
  if (!warn.empty())
    DT_WARN(
        "boot counter: %s; this boot is ordered by the clock alone (boot %u): a clock stepped back may make "
        "peers with keys take it for an old boot",
        warn.c_str(), counter);
  c->boot_id_ = make_boot_id(counter, random_bits);

  // Peers' own addresses are never throttled by the traffic between agents.
  c->refresh_exempt();
  if (int rc = c->collector_.enable(!c->exempt_.empty()); rc != 0) {
    *err = std::string("cannot enable report collection: ") + strerror(-rc);
    return nullptr;
  }
  c->adopt_unreported();
  c->collector_.track_fresh(c->node_.early().enabled());
  if (!c->open_sockets(err)) return nullptr;
  Seal seal;
  if (c->signed_) seal = [raw = c.get()](std::string *m) { sign_message(*m, raw->signing_); };
  const Publish publish = [raw = c.get()](const Outgoing &o, uint64_t) { return raw->publish_out(o); };
  c->node_.open(outbox_options(node_settings(cfg), c->boot_id_), std::move(seal),
                NodeIo{publish, [raw = c.get()] { return raw->message_header(raw->collector_.epoch()); },
                       [raw = c.get()] { return raw->message_header(raw->collector_.epoch() - 1); }});
  return c;
}

void Cluster::adopt_unreported() {
  const long n = collector_.adopt_unreported(dp_.buckets_fd());
  if (n < 0) DT_WARN("cannot look for hits a previous agent left unreported: %s", strerror(static_cast<int>(-n)));
  else if (n > 0)
    DT_INFO("%ld sources have hits a previous agent admitted but did not report: they go out with the first report", n);
}

void *Cluster::poll_socket() const { return sub_->handle(); }

// Each message timed when it is read (socket_drain.h): 40 agents starting at once on 2
// cores held one drain up 2.6 s, and messages sent meanwhile, timed at the wake-up, left
// up to 126 of their senders' hits a run uncharged (docs/cluster-scale.md).
void Cluster::on_readable() {
  const DrainResult r = drain_socket(*sub_, kMaxDrainMessages, [this](zmq::message_t &msg, uint64_t now_ns) {
    const char *from = zmq_msg_gets(msg.handle(), "Peer-Address");  // who sent it (a peer, or a hub)
    sender_ = from ? from : "";
    handle_message(msg.data(), msg.size(), now_ns);
  });
  if (r.multipart) counters_.rejected["multipart"] += r.multipart;
  if (!r.error.empty()) DT_WARN("receiving a peer report failed: %s", r.error.c_str());
}

void Cluster::handle_message(const void *data, size_t len, uint64_t now_ns) {
  counters_.messages_received++;
  counters_.bytes_received += len;
  if (is_aggregate_message(data, len)) {
    note_received("aggregate", len);
    return handle_aggregate(data, len, now_ns);
  }
  // Owner scheme: a message to one owner. The envelope only routes (ZeroMQ's subscription
  // filter); the recipient that counts is the signed one in the header.
  std::string envelope;
  size_t inner = 0;
  const bool directed = unwrap_directed(data, len, &envelope, &inner);
  if (directed) {
    data = static_cast<const char *>(data) + inner;
    len -= inner;
  }
  ReportHeader h;
  ReportBody body;
  if ((signed_ && !check_signature(data, len, now_ns)) || !decode_message(data, len, now_ns, &h, &body)) {
    note_received(directed ? "directed" : "rejected", len);
    return;
  }
  note_received(directed ? "directed" : message_kind(body), len);
  if (!addressed_to_us(h, body, directed ? &envelope : nullptr, len, now_ns) || is_own_echo(h, now_ns)) return;
  // One replay rule for every kind: each stream of a node's boot applied once (peer_tracker.h).
  const Arrival a = node_.tracker().arrive(h, now_ns);
  if (!note_arrival(h, a, now_ns)) return;                        // a duplicate, or refused (counted)
  Outbox::Resends served;                                         // a resend request: served by the node
  const Received r = node_.receive(h, body, a, now_ns, &served);  // cluster_core/cluster_node.h
  counters_.resend_requests_received += served.named_us;
  if (served.over_budget) counters_.rejected["resend over budget"]++;
  switch (r.plan.kind) {
    case InboundKind::Dropped:
    case InboundKind::ResendRequest: return;
    case InboundKind::Bans: return apply_bans(h, body, a, now_ns);
    case InboundKind::Verified: return apply_verified(h, body, a, now_ns);
    case InboundKind::Directed:
    case InboundKind::Relay:
    case InboundKind::Report: break;
  }
  if (r.plan.stale) return skip_stale(h, r.stale_hits, a, now_ns);
  apply_received(h, body, r, now_ns);
}

const char *message_kind(const ReportBody &b) {
  if (!b.bans.empty()) return "bans";
  if (!b.verified.empty()) return "verified";
  if (!b.resend.empty()) return "resend";
  if (!b.relayed.empty()) return "relay";
  return b.entries.empty() && b.tags.empty() && b.factors.empty() ? "empty" : "report";
}

void Cluster::note_received(const char *kind, size_t len) {
  counters_.received_bytes_by_kind[kind] += len;
  counters_.received_messages_by_kind[kind]++;
}

// A message not applied: counted by reason, and logged with who passed it on (a peer, or a
// hub) through `log` (rate-limited: a stranger can send as many as it likes).
void Cluster::reject(const std::string &reason, size_t len, const std::string &detail, LogLimiter &log,
                     uint64_t now_ns) {
  counters_.rejected[reason]++;
  log_limited(log, LogLevel::Warn, now_ns, "rejected a peer message of %zu bytes%s%s: %s%s (nothing debited)", len,
              sender_.empty() ? "" : " from ", sender_.c_str(), reason.c_str(), detail.c_str());
}

// A message for us: to everyone, or to us alone (signed: nobody can re-address it), and
// a message to us alone is a report (of hits; no relay, bans or resend request). A
// directed envelope must name the signed recipient. Else refused, counted and logged.
bool Cluster::addressed_to_us(const ReportHeader &h, const ReportBody &body, const std::string *envelope, size_t len,
                              uint64_t now_ns) {
  const std::string route = " (node " + h.node_id + " to " + (h.to.empty() ? "everyone" : h.to) + ")";
  if (!h.to.empty() && h.to != cfg_.node_id)
    return reject("not for us", len, route + ": re-addressed by a member or a hub?", reject_log_, now_ns), false;
  if (envelope && *envelope != h.to)
    return reject("recipient mismatch", len, route + ", in an envelope to " + *envelope, reject_log_, now_ns), false;
  if (!h.to.empty() && (h.stream != Stream::Reports || !body.relayed.empty()))
    return reject("directed non-report", len, route, reject_log_, now_ns), false;
  return true;
}

// With keys, before anything else of a message is read: is it signed by the key of the
// node id it names (cluster/report_signing.h)?
bool Cluster::check_signature(const void *data, size_t len, uint64_t now_ns) {
  const VerifyResult v = verifier_.verify(data, len, link_senders_.node_of(sender_));
  std::string detail;
  switch (v.check) {
    case SignatureCheck::Ok: return counters_.link_authenticated += v.by_link, true;
    case SignatureCheck::Malformed:  // the decoder would stop at the same place
      reject(decode_error_name(v.malformed), len, version_detail(v.malformed, data, len), reject_log_, now_ns);
      return false;
    case SignatureCheck::Unsigned:
      detail = " from node " + v.node_id + " (members with keys sign every message: is it run without them?)";
      break;
    case SignatureCheck::UnknownNode:
      detail = " for node " + v.node_id + ": no .pub file in " + curve_.peers_dir + " speaks for it";
      break;
    case SignatureCheck::BadSignature:
      detail = " for node " + v.node_id + ": not signed by its key (forged, or altered on the way)";
      break;
    case SignatureCheck::HubReport:
      detail = " from " + v.node_id + ", a role = hub key: it may sign only a summing hub's aggregate reports";
      break;
    case SignatureCheck::NotHub: break;  // aggregates only (cluster_aggregates.cpp)
  }
  reject(signature_check_name(v.check), len, detail, auth_log_, now_ns);
  return false;
}

// Decodes one message; a bad one is counted by reason and logged (rate-limited).
bool Cluster::decode_message(const void *data, size_t len, uint64_t now_ns, ReportHeader *h, ReportBody *body) {
  const DecodeError e = decode_report(data, len, h, body);
  if (e == DecodeError::None) return true;
  reject(decode_error_name(e), len, version_detail(e, data, len), reject_log_, now_ns);
  return false;
}

// Our own report, echoed by a hub (or another agent using our node id).
bool Cluster::is_own_echo(const ReportHeader &h, uint64_t now_ns) {
  if (h.node_id != cfg_.node_id) return false;
  if (h.boot_id == boot_id_) {
    counters_.own_echoes++;
    return true;
  }
  counters_.rejected["node id clash"]++;
  uint64_t suppressed = 0;
  if (reject_log_.allow(now_ns, &suppressed))
    DT_WARN(
        "another agent uses our node id '%s': its reports are ignored; give every agent a "
        "unique --node-id",
        h.node_id.c_str());
  return true;
}

// A report too old to charge: its hits are counted, not debited (docs/cluster.md "Faults").
void Cluster::skip_stale(const ReportHeader &h, uint64_t hits, const Arrival &a, uint64_t now_ns) {
  counters_.stale_messages++;
  counters_.stale_hits += hits;
  log_limited(stale_log_, LogLevel::Warn, now_ns, "not charging %llu hits of a report from %s: %.1f s old (%s)",
              static_cast<unsigned long long>(hits), h.node_id.c_str(), a.age_ms / 1e3,
              a.age_ms > node_.tracker().max_age_ns() / 1000000
                  ? "older than --report-max-age"
                  : "sent while it could not hear us, before it came back");
}

// A fresh message, as the receiver made it (cluster_core/receiver.h): counted, its tag hits,
// its charges debited, an owner's relays (cluster_owner.cpp).
void Cluster::apply_received(const ReportHeader &h, const ReportBody &body, const Received &r, uint64_t now_ns) {
  if (r.plan.kind == InboundKind::Directed) counters_.directed_applied++;
  else counters_.messages_applied++;
  if (r.plan.kind == InboundKind::Report && log_level() == LogLevel::Debug && !body.entries.empty())
    DT_DEBUG("report from %s: %zu entries (%llu hits), sent %lld ms ago", h.node_id.c_str(), body.entries.size(),
             static_cast<unsigned long long>(hits_of(body.entries)), sent_ago_ms(h.sent_unix_ms));  // first contact
  if (r.plan.kind != InboundKind::Relay) apply_tags(body, now_ns);
  apply_charges(r, now_ns);
  if (r.plan.kind == InboundKind::Relay) log_relayed(h, r, now_ns);
  if (r.plan.kind == InboundKind::Directed) relay_directed(h, r);
}

// A fresh message's tag hits (query socket tags: set_tag_hooks).
void Cluster::apply_tags(const ReportBody &body, uint64_t now_ns) {
  if (body.tags.empty()) return;
  for (const auto &t : body.tags) counters_.tag_hits_received += t.hits;
  if (debit_tags_) debit_tags_(body.tags, now_ns);
}

// The receiver's charges (cluster_core/receiver.h) debited from our buckets, and counted.
void Cluster::apply_charges(const Received &r, uint64_t now_ns) {
  counters_.unknown_rule_entries += r.unknown_entries;
  counters_.join_sources_emptied += r.join.sources;
  counters_.join_burst_hits += r.join.hits;
  for (const Charge &c : r.charges) {
    if (watch_.active()) watch_.observe(c.node_id, *c.body);
    if (!c.debits.empty()) debit(c.from, c.debits, now_ns);
  }
}

void Cluster::debit(const std::string &from, const std::vector<dt_debit> &debits, uint64_t now_ns) {
  DebitResult r = apply_debits(dp_.debit_batch_fd(), dp_.debit_prog_fd(), debits);
  counters_.entries_applied += r.entries_applied;
  counters_.hits_debited += r.hits_applied;
  counters_.debit_failures += r.entries_failed;
  if (r.error != 0 || r.entries_failed) {
    uint64_t suppressed = 0;
    if (reject_log_.allow(now_ns, &suppressed))
      DT_WARN("applying %zu debits from %s: %llu failed%s%s", debits.size(), from.c_str(),
              static_cast<unsigned long long>(r.entries_failed), r.error ? ": " : "",
              r.error ? strerror(-r.error) : "");
  }
}

void Cluster::on_period(uint64_t now_ns) {
  int err = 0;
  std::vector<ReportEntry> served = collector_.end_period(&err);
  if (err != 0) {
    counters_.collect_errors++;
    uint64_t suppressed = 0;
    if (reject_log_.allow(now_ns, &suppressed)) DT_WARN("collecting this period's hits failed: %s", strerror(-err));
  }
  served = node_.period_served(std::move(served), now_ns);  // with what early ticks held back
  ReportHeader h = message_header(collector_.epoch() - 1);
  ReportBody body;  // the node adds our adaptive factors
  body.entries = std::move(served);
  if (collect_tags_) body.tags = collect_tags_();
  node_.send_period(h, std::move(body), now_ns);  // the owner scheme when owner_ready()
  note_sent();
  counters_.lazy_entries = node_.planner().cadence().lazy_entries();
  counters_.batch_waiting = node_.planner().cadence().waiting();
  publish_bans(now_ns);
  publish_verified(now_ns);
  log_downs(node_.end_period(now_ns), now_ns);  // resends asked for, silent peers down
}

bool Cluster::publish(const std::string &m) {
  try {
    pub_->send(zmq::buffer(m), zmq::send_flags::dontwait);
    return true;
  } catch (const zmq::error_t &e) {
    DT_WARN("publishing a report failed: %s", e.what());
    return false;
  }
}

// A message from our outbox (outbox.h), counted by its kind if it went out.
bool Cluster::publish_out(const Outgoing &o) {
  if (!publish(*o.bytes)) return false;
  const uint64_t n = o.bytes->size();
  switch (o.kind) {
    case OutKind::Report: counters_.messages_sent++, counters_.bytes_sent += n; break;
    case OutKind::Directed: counters_.directed_sent++, counters_.directed_bytes_sent += n; break;
    case OutKind::Relay: counters_.relays_sent++, counters_.messages_sent++, counters_.bytes_sent += n; break;
    case OutKind::Bans: counters_.ban_messages_sent++, counters_.bytes_sent += n; break;
    case OutKind::Verified: counters_.verified_messages_sent++, counters_.bytes_sent += n; break;
    case OutKind::ResendRequest: counters_.resend_requests_sent++, counters_.resend_request_bytes += n; break;
    case OutKind::Resent: counters_.resent_messages++, counters_.resent_bytes += n; break;
  }
  return true;
}

void Cluster::note_sent() {
  const SendCounts &s = node_.sender().counts();
  counters_.reports_sent = s.reports;
  counters_.entries_sent = s.report_entries;
  counters_.max_report_entries = s.max_report_entries;
  counters_.tags_sent = s.tags;
  counters_.directed_entries_sent = s.directed_entries;
  counters_.directed_batches = s.directed_batches;
  counters_.relayed_entries_sent = s.relayed_entries;
  counters_.prefix_entries_sent = s.prefix_entries;
  counters_.dest_entries_sent = s.dest_entries;
  counters_.mesh_periods = s.mesh_periods;
  counters_.quiet_periods = s.quiet_periods;
  counters_.heartbeats_sent = s.heartbeats;
}

// The header of a message this node sends now, in `epoch` (a report's: the period just
// ended; a request's or a bans message's: the current one).
ReportHeader Cluster::message_header(uint64_t epoch) const { return node_.outbox().header(epoch, unix_now_ms()); }

void Cluster::set_tag_hooks(std::function<std::vector<TagHit>()> collect,
                            std::function<void(const std::vector<TagHit> &, uint64_t)> debit) {
  collect_tags_ = std::move(collect);
  debit_tags_ = std::move(debit);
}

void Cluster::log_summary() const {
  DT_INFO(
      "cluster: %zu of %zu peers up; sent %llu reports (%llu entries, %llu bytes); applied %llu "
      "messages (%llu hits debited); rejected %llu, duplicates %llu",
      node_.tracker().up_count(), node_.tracker().peers().size(),
      static_cast<unsigned long long>(counters_.reports_sent), static_cast<unsigned long long>(counters_.entries_sent),
      static_cast<unsigned long long>(counters_.bytes_sent),
      static_cast<unsigned long long>(counters_.messages_applied),
      static_cast<unsigned long long>(counters_.hits_debited),
      static_cast<unsigned long long>(counters_.rejected_total()),
      static_cast<unsigned long long>(counters_.duplicates));
}

std::string Cluster::status_json(uint64_t now_ns) const {
  const ClusterStatusHead head{cfg_.node_id, unix_now_ms(), now_ns, collector_.epoch(), cfg_.period_ns, security()};
  return cluster_status_json(head, counters_, node_.tracker().peers());
}

std::string Cluster::status_text(uint64_t now_ns) const {
  const ClusterStatusHead head{cfg_.node_id, unix_now_ms(), now_ns, collector_.epoch(), cfg_.period_ns, security()};
  return cluster_status_text(head, counters_, node_.tracker().peers());
}

}  // namespace dt
