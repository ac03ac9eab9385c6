// cluster_bans.cpp - bans between peers (bans/ban_sync.h, docs/bans.md "Cluster"): this
// host's bans out in bans messages of their own, the peers' in.

#include "cluster/cluster.h"
#include "common/clock.h"
#include "cluster/report_signing.h"

namespace dt {
// What BanSync has to announce this period, signed like reports when keys are used.
void Cluster::publish_bans(uint64_t now_ns) {
  if (!bans_) return;
  const std::vector<BanNotice> notices = bans_->on_period(now_ns, unix_now_ms());
  counters_.bans = bans_->counters();
  if (notices.empty()) return;
  const ReportHeader h = message_header(collector_.epoch());
  for (std::string &m : encode_ban_messages(h, notices, kMaxMessageBytes - (signed_ ? kSignatureBytes : 0))) {
    if (signed_) sign_message(m, signing_);
    if (!publish(m)) continue;
    counters_.ban_messages_sent++;
    counters_.bytes_sent += m.size();
  }
}

// A peer's bans message (already checked: its signature with keys, not our own echo).
void Cluster::apply_bans(const ReportHeader &h, const ReportBody &body, uint64_t now_ns) {
  counters_.ban_messages_received++;
  if (!bans_) return;
  bans_->apply(h.node_id, body.bans, now_ns);
  counters_.bans = bans_->counters();
}

}  // namespace dt
