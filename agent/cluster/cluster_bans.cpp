// cluster_bans.cpp - bans between peers (bans/ban_sync.h, docs/bans.md "Cluster"): this
// host's bans out in bans messages of their own, the peers' in.

#include "cluster/cluster.h"
#include "cluster/report_signing.h"
#include "common/clock.h"

namespace dt {
// What BanSync has to announce now (cluster.h), signed like reports when keys are used.
void Cluster::publish_bans(uint64_t now_ns) {
  if (!bans_) return;
  const std::vector<BanNotice> notices = bans_->on_period(now_ns, unix_now_ms());
  counters_.bans = bans_->counters();
  if (notices.empty()) return;
  for (const Outgoing &o : node_.outbox().bans(message_header(collector_.epoch()), notices)) publish_out(o);
}

// Peer `node_id`'s clock now, in unix ms, as far as this host knows it: by the offset its
// messages taught the tracker (peer_tracker.h), else by our own clock.
uint64_t Cluster::peer_clock_ms(const std::string &node_id, uint64_t now_ns) const {
  const auto &peers = node_.tracker().peers();
  const auto it = peers.find(node_id);
  if (it == peers.end() || !it->second.have_offset) return unix_now_ms();
  const int64_t us = static_cast<int64_t>(now_ns / 1000) - it->second.offset_us;
  return us > 0 ? static_cast<uint64_t>(us) / 1000 : 0;
}

// A peer's bans message (already checked: its signature with keys, its recipient, not our
// own echo, once only in its stream: PeerTracker). Its sets' remaining times are by the
// sender's clock at sending (peer_protocol.h: expiry - sent_unix_ms); the message's age by
// that clock (the tracker's) is taken off. A stale one is not applied (its sender
// announces its bans again: bans/ban_sync.h). The peers' and hubs' addresses are never
// banned (bans/never_ban.h): the set follows exempt_.
void Cluster::apply_bans(const ReportHeader &h, const ReportBody &body, const Arrival &a, uint64_t now_ns) {
  counters_.ban_messages_received++;
  if (!bans_) return;
  if (a.stale) return void(counters_.rejected["stale bans"]++);
  std::vector<BanNotice> notices;
  for (BanNotice n : body.bans) {
    if (!n.remove && n.remaining_ms <= a.age_ms) {
      counters_.rejected["ban expired in transit"]++;
      continue;
    }
    if (!n.remove) n.remaining_ms -= a.age_ms;
    notices.push_back(std::move(n));
  }
  bans_->set_cluster_addresses(exempt_);
  bans_->apply(h.node_id, notices, now_ns, peer_clock_ms(h.node_id, now_ns));
  counters_.bans = bans_->counters();
}

}  // namespace dt
