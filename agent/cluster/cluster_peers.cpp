// cluster_peers.cpp - what the cluster makes of the peer tracker's verdicts: the counters,
// and the log lines a stranger can trigger (peer up and down, restarts, refusals), each
// through a LogLimiter.
#include <string>

#include "cluster/cluster.h"

namespace dt {

// Counts and logs what the tracker made of a report; true if it is to be applied
// (or skipped as stale) by the caller.
bool Cluster::note_arrival(const ReportHeader &h, const Arrival &a, uint64_t now_ns) {
  for (const auto &id : a.evicted) {
    senders_.erase(id);
    if (peer_events_) peer_events_(id, false, "forgotten", 0);
    log_limited(peer_log_, LogLevel::Info, now_ns,
                "peer %s forgotten (down) to make room for %s: %zu node ids "
                "tracked at most",
                id.c_str(), h.node_id.c_str(), node_.tracker().options().max_peers);
  }
  if (a.verdict == Verdict::Rejected) {
    counters_.rejected[refusal_name(a.refused)]++;
    log_refusal(h, a, now_ns);
    return false;
  }
  note_sender(h.node_id);
  if (a.verdict == Verdict::Duplicate) {
    counters_.duplicates++;
    return false;
  }
  if (a.restarted)
    log_limited(peer_log_, LogLevel::Info, now_ns, "peer %s restarted (a new boot; sequence tracking starts again)",
                h.node_id.c_str());
  if (a.came_up) {
    log_limited(peer_log_, LogLevel::Info, now_ns, "peer %s is up (epoch %llu)", h.node_id.c_str(),
                static_cast<unsigned long long>(h.epoch));
    if (peer_events_) peer_events_(h.node_id, true, "", 0);
  }
  if (a.relearned_ms)
    log_limited(peer_log_, LogLevel::Warn, now_ns,
                "peer %s: its reports were all stale for 10 s while arriving "
                "steadily, so its clock was stepped by %lld ms; its clock offset is learned again",
                h.node_id.c_str(), static_cast<long long>(a.relearned_ms));
  counters_.recovered += a.recovered;
  return true;
}

void Cluster::log_refusal(const ReportHeader &h, const Arrival &a, uint64_t now_ns) {
  switch (a.refused) {
    case Refusal::AbsurdTime:
      log_limited(reject_log_, LogLevel::Warn, now_ns,
                  "rejected a report from %s sent at %llu ms past 1970: no "
                  "clock is that late (nothing debited)",
                  h.node_id.c_str(), static_cast<unsigned long long>(h.sent_unix_ms));
      break;
    case Refusal::NewBoot:
      log_limited(reject_log_, LogLevel::Warn, now_ns,
                  "rejected a report from %s of a new boot while its current "
                  "boot still reports (a forged restart, or a restart within --down-after; nothing debited)",
                  h.node_id.c_str());
      break;
    case Refusal::TooManyPeers:
      log_limited(reject_log_, LogLevel::Warn, now_ns,
                  "rejected a report from %s: %zu node ids are tracked and "
                  "none is down (nothing debited)",
                  h.node_id.c_str(), node_.tracker().options().max_peers);
      break;
    case Refusal::OldBoot:
      log_limited(
          reject_log_, LogLevel::Warn, now_ns,
          "rejected a %s message from %s of boot %u, older than its "
          "current boot %u (boots only move forward: an old boot replayed; nothing applied)",
          stream_name(h.stream), h.node_id.c_str(), boot_counter(h.boot_id),
          node_.tracker().peers().count(h.node_id) ? boot_counter(node_.tracker().peers().at(h.node_id).boot_id) : 0u);
      break;
    case Refusal::NoSeq:
      log_limited(reject_log_, LogLevel::Warn, now_ns,
                  "rejected a %s message from %s without a sequence number "
                  "(nothing applied)",
                  stream_name(h.stream), h.node_id.c_str());
      break;
    case Refusal::None: break;
  }
}

// Every period: the peers silent for --down-after went down (period_end.h): logged,
// rate-limited (forged node ids go down too).
void Cluster::log_downs(const std::vector<LivenessChange> &downs, uint64_t now_ns) {
  for (const auto &ch : downs) {
    log_limited(peer_log_, LogLevel::Warn, now_ns, "peer %s is down: nothing heard for %.1fs", ch.node_id.c_str(),
                ch.silent_ns / 1e9);
    if (peer_events_) peer_events_(ch.node_id, false, "silent", ch.silent_ns / 1e9);
  }
}

}  // namespace dt
