// outbox.cpp - this node's outgoing message streams (see outbox.h).
#include "cluster_core/outbox.h"

#include <algorithm>

namespace dt {

namespace {

// `m` signed by `seal` (if it signs), to share: resent as it is, signed once.
std::shared_ptr<const std::string> seal_with(const Seal &seal, std::string m) {
  if (seal) seal(&m);
  return std::make_shared<const std::string>(std::move(m));
}

// The messages of a stream of its own (bans, verified sources), numbered by their encoder
// from *next_seq on, sealed; *next_seq goes past them. Not kept: no resends in those streams.
std::vector<Outgoing> own_stream(OutKind kind, std::vector<std::string> msgs, const Seal &seal, uint64_t *next_seq) {
  std::vector<Outgoing> out;
  for (std::string &m : msgs) out.push_back({kind, {}, 0, seal_with(seal, std::move(m))});
  *next_seq += msgs.size();
  return out;
}

}  // namespace

Outbox::Outbox(const OutboxOptions &o, Seal seal) : opt_(o), seal_(std::move(seal)), kept_(o.resend_keep_ns) {}

ReportHeader Outbox::header(uint64_t epoch, uint64_t unix_ms) const {
  ReportHeader h;
  h.node_id = opt_.node_id;
  h.boot_id = opt_.boot_id;
  h.epoch = epoch;
  h.sent_unix_ms = unix_ms;
  return h;
}

std::shared_ptr<const std::string> Outbox::sealed(std::string m) const { return seal_with(seal_, std::move(m)); }

Outgoing Outbox::keep(OutKind kind, std::string m, uint64_t now_ns) {
  Outgoing o{kind, {}, next_seq_, sealed(std::move(m))};
  kept_.keep(next_seq_++, o.bytes, now_ns);
  return o;
}

std::vector<Outgoing> Outbox::report(const ReportHeader &h, const ReportBody &body, uint64_t now_ns) {
  std::vector<Outgoing> out;
  for (auto &m : encode_report(h, next_seq_, body, body_limit()))
    out.push_back(keep(OutKind::Report, std::move(m), now_ns));
  return out;
}

std::vector<Outgoing> Outbox::directed(const std::string &to, ReportHeader h, const ReportBody &body) {
  uint64_t &seq = directed_seq_.try_emplace(to, 1).first->second;
  h.to = to;
  std::vector<Outgoing> out;
  for (auto &m : encode_report(h, seq, body, body_limit())) {
    const std::shared_ptr<const std::string> signed_msg = sealed(std::move(m));
    out.push_back({OutKind::Directed, to, seq++, std::make_shared<const std::string>(wrap_directed(to, *signed_msg))});
  }
  return out;
}

std::vector<Outgoing> Outbox::relay(const ReportHeader &h, const std::vector<RelayedReport> &blocks, uint64_t now_ns) {
  std::vector<Outgoing> out;
  for (auto &m : encode_relay(h, next_seq_, blocks)) out.push_back(keep(OutKind::Relay, std::move(m), now_ns));
  return out;
}

std::vector<Outgoing> Outbox::bans(ReportHeader h, const std::vector<BanNotice> &notices) {
  h.seq = next_ban_seq_;  // a stream of its own (peer_protocol.h): a replay is a duplicate
  return own_stream(OutKind::Bans, encode_ban_messages(h, notices, body_limit()), seal_, &next_ban_seq_);
}

std::vector<Outgoing> Outbox::verified(ReportHeader h, const std::vector<VerifiedSource> &sources) {
  h.seq = next_verified_seq_;  // a stream of its own, as the bans'
  return own_stream(OutKind::Verified, encode_verified_messages(h, sources, body_limit()), seal_, &next_verified_seq_);
}

std::optional<Outgoing> Outbox::resend_request(ReportHeader h, const std::vector<ResendRequest> &reqs) {
  h.seq = next_resend_seq_;
  std::string msg = encode_resend_request(h, reqs);
  if (msg.empty()) return std::nullopt;
  next_resend_seq_++;
  return Outgoing{OutKind::ResendRequest, {}, 0, sealed(std::move(msg))};
}

Outbox::Resends Outbox::serve_resend(const std::string &from, const std::vector<ResendRequest> &reqs, uint64_t now_ns) {
  Resends r;
  const auto mine = std::find_if(reqs.begin(), reqs.end(), [&](const auto &q) { return q.node_id == opt_.node_id; });
  if (mine == reqs.end()) return r;
  r.named_us = true;
  const auto msgs = kept_.take(*mine, opt_.boot_id, now_ns, opt_.resend_gap_ns, budget_.left(from), &r.over_budget);
  budget_.spend(from, msgs.size());
  for (const auto &m : msgs) r.out.push_back({OutKind::Resent, {}, 0, m});
  return r;
}

}  // namespace dt
