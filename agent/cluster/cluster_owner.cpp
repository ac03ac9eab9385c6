// cluster_owner.cpp - the reporting scheme "owner" in the agent's full mesh
// (docs/cluster-scale.md, cluster/report_router.h): sources seen only here go to their
// owner alone, shared ones to every peer; an owner relays what turns out to be shared.
#include <algorithm>
#include <map>
#include <zmq.hpp>

#include "cluster/cluster.h"
#include "common/clock.h"

namespace dt {
// The owner scheme needs members that agree on who owns what: a full mesh (no hubs) in
// which exactly as many node ids are up as peers are configured (each one's id known; one
// more, say a forged or stray node id, could otherwise own sources nobody receives). Else
// every source goes to every peer, as in the mesh: more bytes, never less accuracy.
bool Cluster::owner_ready() {
  if (!cfg_.owner_scheme || !cfg_.hubs.empty() || cfg_.peers.empty()) return false;
  std::vector<std::string> ids{cfg_.node_id};
  for (const auto &[id, p] : tracker_.peers())
    if (p.up) ids.push_back(id);
  if (ids.size() != cfg_.peers.size() + 1) return false;
  std::sort(ids.begin(), ids.end());
  if (ids != router_.members())
    router_.set_members(ids, static_cast<size_t>(std::find(ids.begin(), ids.end(), cfg_.node_id) - ids.begin()));
  return true;
}

// This period's served sources: those for every peer are returned; those for one owner
// wait in its batch (report_cadence.h: send_period sends the batches due), or at an early
// tick go to it now; ours that turned shared are relayed now.
std::vector<ReportEntry> Cluster::route_served(std::vector<ReportEntry> served, uint64_t now_ns, bool period) {
  const bool owners = owner_ready();
  if (period) owner_period_ = owners;
  if (!owners) {
    counters_.mesh_periods += period;
    for (const ReportEntry &e : cadence_.take_all()) served.push_back(e);  // batches waiting: everyone
    for (const ReportEntry &e : served) router_.heard(e.key, now_ns);  // every peer hears them
    return served;
  }
  RoutedReport r = router_.route(served, now_ns);
  for (const auto &[owner, entries] : r.to_owner) {
    if (period) cadence_.queue(router_.members()[owner], entries, now_ns);
    else publish_directed(router_.members()[owner], entries, now_ns);  // new sources: no waiting
  }
  if (!r.relays.empty()) publish_relays(r.relays, now_ns);
  return std::move(r.everyone);
}

// Entries for one owner, in messages of their own (a stream per owner: their seqs are not
// the report's), naming the owner in their signed header, prefixed with its node id.
void Cluster::publish_directed(const std::string &to, const std::vector<ReportEntry> &entries, uint64_t now_ns) {
  uint64_t &seq = directed_seq_.try_emplace(to, 1).first->second;
  ReportHeader h = message_header(collector_.epoch() - 1);
  h.to = to;
  ReportBody body;
  body.rules = rule_names_;
  body.entries = entries;
  name_prefix_groups(&body);
  name_dest_groups(&body);
  for (auto &m : encode_report(h, seq, body, kMaxMessageBytes - (signed_ ? kSignatureBytes : 0))) {
    seq++;
    if (signed_) sign_message(m, signing_);
    if (!publish(wrap_directed(to, m))) continue;
    counters_.directed_sent++;
    counters_.directed_bytes_sent += m.size() + 4 + to.size();
  }
  counters_.directed_entries_sent += entries.size();
  (void)now_ns;
}

// As owner: hits members admitted of sources now shared, to everyone, each block naming
// the member; in our report sequence (kept for resends, signed).
void Cluster::publish_relays(const std::vector<RelayEntry> &relays, uint64_t now_ns,
                             const std::vector<std::string> *ids) {
  if (!ids) ids = &router_.members();  // RelayEntry::from indexes these
  std::map<uint32_t, std::vector<ReportEntry>> by_member;
  for (const RelayEntry &r : relays) by_member[r.from].push_back(r.entry);
  std::vector<RelayedReport> blocks;
  for (auto &[member, entries] : by_member) {
    ReportBody named;
    named.rules = rule_names_;
    named.entries = std::move(entries);
    name_prefix_groups(&named);
    name_dest_groups(&named);
    blocks.push_back(RelayedReport{(*ids)[member], std::move(named.rules), std::move(named.entries)});
  }
  const ReportHeader h = message_header(collector_.epoch() - 1);
  for (auto &m : encode_relay(h, next_seq_, blocks)) {
    if (signed_) sign_message(m, signing_);
    auto kept = std::make_shared<const std::string>(std::move(m));
    resend_.keep(next_seq_++, kept, now_ns);
    if (!publish(*kept)) continue;
    counters_.relays_sent++;
    counters_.messages_sent++;
    counters_.bytes_sent += kept->size();
    cadence_.sent_to_everyone(true, now_ns);
  }
  counters_.relayed_entries_sent += relays.size();
}

// A message a member sent to us alone as the owner of its sources, checked as every
// message (signature, recipient, once only in its stream, age: Cluster::handle_message),
// charged, then noted as owner.
void Cluster::handle_directed(const ReportHeader &h, const ReportBody &body, const Arrival &a, uint64_t now_ns) {
  if (a.stale) return skip_stale(h, body, a, now_ns);
  counters_.directed_applied++;
  const std::vector<dt_debit> debits = apply_report(h, body, now_ns);
  const auto &members = router_.members();
  const auto it = std::find(members.begin(), members.end(), h.node_id);
  if (it == members.end()) {  // our members are not settled yet: pass everything on at once
    std::vector<RelayEntry> all;
    std::vector<std::string> ids{h.node_id};
    for (const dt_debit &d : debits) all.push_back({0, ReportEntry{d.key, d.hits}});
    return publish_relays(all, now_ns, &ids);
  }
  std::vector<RelayEntry> relays;
  for (const dt_debit &d : debits)
    for (RelayEntry &r : router_.contribute(d.key, static_cast<size_t>(it - members.begin()), d.hits, now_ns))
      relays.push_back(std::move(r));
  if (log_level() == LogLevel::Debug)
    DT_DEBUG("directed from %s: %zu entries applied, %zu relayed, sent %lld ms ago", h.node_id.c_str(), debits.size(),
             relays.size(), sent_ago_ms(h.sent_unix_ms));
  if (!relays.empty()) publish_relays(relays, now_ns);
}

// An owner's relay: every member's hits but ours, as if that member had reported them.
// A node an owner may relay hits of: a member (a role = node key in --curve-peers, not a
// hub's; without keys a peer we track), never us (we charged ours when we admitted them).
bool Cluster::relay_member(const std::string &node_id) const {
  if (node_id == cfg_.node_id) return false;
  return signed_ ? verifier_.knows_node(node_id) : tracker_.peers().count(node_id) != 0;
}

void Cluster::apply_relayed(const ReportHeader &h, const ReportBody &body, uint64_t now_ns) {
  for (const RelayedReport &r : body.relayed) {
    if (r.node_id == cfg_.node_id) continue;  // ours: charged here when we admitted them
    if (!relay_member(r.node_id)) {
      reject("relay names a stranger", 0,
             " (" + std::to_string(r.entries.size()) + " entries of " + r.node_id + " relayed by " + h.node_id + ")",
             reject_log_, now_ns);
      continue;
    }
    ReportHeader from = h;
    from.node_id = r.node_id;
    ReportBody hits;
    hits.rules = r.rules;
    hits.entries = r.entries;
    const std::vector<dt_debit> debits = apply_report(from, hits, now_ns, h.node_id);
    uint64_t debited = 0;
    for (const dt_debit &d : debits) debited += d.hits;
    counters_.relayed_hits_debited += debited;
    if (log_level() == LogLevel::Debug)
      DT_DEBUG("relay from %s: %llu hits of %s debited, sent %lld ms ago", h.node_id.c_str(),
               static_cast<unsigned long long>(debited), r.node_id.c_str(), sent_ago_ms(h.sent_unix_ms));
    note_shared(debits, now_ns);
  }
}

// Sources a peer told everyone about are shared: we tell everyone too, for a while.
void Cluster::note_shared(const std::vector<dt_debit> &debits, uint64_t now_ns) {
  for (const dt_debit &d : debits) router_.heard(d.key, now_ns);
}

}  // namespace dt
