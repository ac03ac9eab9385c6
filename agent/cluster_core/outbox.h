// outbox.h - this node's outgoing message streams (the cluster core: no I/O). Each kind of
// message numbered in its own stream (peer_protocol.h): the reports (and an owner's relays),
// a stream per owner for directed messages, bans, verified sources, resend requests; each message encoded,
// sealed (signed, with keys) and, in the report stream, kept for resend requests
// (resend_buffer.h). The caller publishes what it returns, as it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster_core/peer_protocol.h"
#include "cluster_core/resend_buffer.h"

namespace dt {

enum class OutKind { Report, Directed, Relay, Bans, Verified, ResendRequest, Resent };

// One message to publish.
struct Outgoing {
  OutKind kind = OutKind::Report;
  std::string to;    // Directed: the owner's node id (bytes carry its envelope: wrap_directed)
  uint64_t seq = 0;  // Report, Relay: its seq in our report stream
  std::shared_ptr<const std::string> bytes;
};

struct OutboxOptions {
  std::string node_id;
  uint64_t boot_id = 0;
  uint64_t resend_keep_ns = 5'000'000'000ull;  // the report max age (resend_buffer.h)
  uint64_t resend_gap_ns = 100'000'000;        // a kept message sent again at most this often
  size_t max_message_bytes = kMaxMessageBytes;
};

// Signs a message in place (report_signing.h: sign_message); empty: messages go unsigned.
using Seal = std::function<void(std::string *)>;

class Outbox {
 public:
  explicit Outbox(const OutboxOptions &o, Seal seal = {});

  // The header of a message of ours in `epoch`, sent at unix_ms.
  ReportHeader header(uint64_t epoch, uint64_t unix_ms) const;
  // A report to everyone (in parts if large), kept for resends.
  std::vector<Outgoing> report(const ReportHeader &h, const ReportBody &body, uint64_t now_ns);
  // Entries for one owner (`to`), in that owner's stream, naming it in the signed header.
  std::vector<Outgoing> directed(const std::string &to, ReportHeader h, const ReportBody &body);
  // An owner's relay of members' hits, in our report stream (kept for resends).
  std::vector<Outgoing> relay(const ReportHeader &h, const std::vector<RelayedReport> &blocks, uint64_t now_ns);
  // Bans notices, in the bans stream.
  std::vector<Outgoing> bans(ReportHeader h, const std::vector<BanNotice> &notices);
  // Sources our SYN cookies verified, in the verified sources stream.
  std::vector<Outgoing> verified(ReportHeader h, const std::vector<VerifiedSource> &sources);
  // A request for the messages missing in peers' streams (none if `reqs` is empty).
  std::optional<Outgoing> resend_request(ReportHeader h, const std::vector<ResendRequest> &reqs);

  // What a peer's resend request makes us publish again: the first part naming us counts,
  // within the period's ResendBudget (one publish reaches every subscriber).
  struct Resends {
    bool named_us = false;
    size_t over_budget = 0;
    std::vector<Outgoing> out;
  };
  Resends serve_resend(const std::string &from, const std::vector<ResendRequest> &reqs, uint64_t now_ns);
  // The end of a period: the resend budget starts again.
  void new_period() { budget_.new_period(); }

  const OutboxOptions &options() const { return opt_; }
  const ResendBuffer &kept() const { return kept_; }

 private:
  size_t body_limit() const { return opt_.max_message_bytes - (seal_ ? kSignatureBytes : 0); }
  std::shared_ptr<const std::string> sealed(std::string m) const;
  Outgoing keep(OutKind kind, std::string m, uint64_t now_ns);

  OutboxOptions opt_;
  Seal seal_;
  ResendBuffer kept_;
  ResendBudget budget_;
  uint64_t next_seq_ = 1;                         // reports and relays
  uint64_t next_ban_seq_ = 1;                     // bans messages
  uint64_t next_verified_seq_ = 1;                // verified sources messages
  uint64_t next_resend_seq_ = 1;                  // resend requests
  std::map<std::string, uint64_t> directed_seq_;  // per owner: the next seq of our messages to it
};

}  // namespace dt
