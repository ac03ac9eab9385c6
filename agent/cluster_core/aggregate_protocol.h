// aggregate_protocol.h - the message a summing hub (`agent hub --aggregate`, agent/hub/)
// sends every period instead of relaying every report to every agent: one sum per source
// (and tag) of the reports it received in that period, and which reports those were.
//
// A message type of its own (magic "DTAG"), so that the report format (peer_protocol.h)
// stays as it is and the two can change apart. Wire format v1 (integers little-endian,
// varint = LEB128, as in peer_protocol.h):
//   magic "DTAG" | u8 version=1 | u8 flags | u8 hub_id_len (1..64) | hub node id
//   varint nnodes (0..kMaxAggregateNodes), then per node whose reports are in the sum:
//     u8 node_id_len | node_id | u64 boot_id | varint nseqs (1..kMaxAggregateSeqs)
//     | varint first seq (>= 1) | (nseqs - 1) x varint gap to the next (>= 1)
//   varint report_len | report_len bytes: one report message (peer_protocol.h, unsigned,
//     its node id the hub's, its seq, epoch and part/parts the hub's) holding the sums
//   only if flags bit 2 (kFlagSigned) is set, last: a 64-byte Ed25519 signature over every
//     byte before it, by the hub's key (role = hub: cluster/report_signing.h)
// and nothing after. A period's sums too large for one message are split into parts
// (the embedded report's part/parts); every part carries the whole list of included
// reports, so that each part can be applied alone.
//
// Why the list of included reports: each agent's own hits are in the sums too, and it
// must not charge them again. It keeps what it reported under each seq (for a while) and
// subtracts its own entries of the seqs the hub names (cluster_core/aggregate_intake.h). The
// list also lets an agent with two hubs take the other hub's sums after a failover
// without charging a report twice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cluster_core/peer_protocol.h"

namespace dt {

constexpr size_t kMaxAggregateNodes = 4096;
constexpr size_t kMaxAggregateSeqs = 1024;  // seqs of one node in one period's sums

// The reports of one node (one boot) a hub summed: their seqs, ascending.
using IncludedSeqs = ResendRequest;

struct AggregateMessage {
  std::string hub_id;                  // the hub's node id (its key's, with keys)
  std::vector<IncludedSeqs> included;  // whose reports the sums hold
  ReportHeader header;                 // the embedded report's: the hub's boot, seq, epoch, part
  ReportBody body;                     // the sums
};

// True if the message starts like an aggregate (its magic).
bool is_aggregate_message(const void *data, size_t len);

// Encodes one period's sums: one message per part of the embedded report (encode_report
// with max_bytes less the included list), each with the whole included list.
std::vector<std::string> encode_aggregate(const std::string &hub_id, const std::vector<IncludedSeqs> &included,
                                          const ReportHeader &hdr, uint64_t first_seq, const ReportBody &sums,
                                          size_t max_bytes = kMaxMessageBytes);

// The hub's node id and the flags, without reading the rest (to check the signature first).
DecodeError peek_aggregate_sender(const void *data, size_t len, std::string *hub_id, uint8_t *flags);

// Decodes and validates one aggregate message (the signature is set aside, not checked).
DecodeError decode_aggregate(const void *data, size_t len, AggregateMessage *out);

}  // namespace dt
