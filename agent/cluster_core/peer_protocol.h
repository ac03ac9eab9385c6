// peer_protocol.h - the report a host publishes to its peers every period: which
// sources (per rule) and which query-socket tags it served, and how many hits each
// (the reference daemon's "Throttle Tag / Hit Count" table), and the current factor
// of each of its adaptive rules; compact and versioned.
//
// Wire format v2 (integers little-endian; "varint" = LEB128, at most 10 bytes):
//   magic "DTRP" | u8 version=2 | u8 flags | u8 node_id_len (1..64) | node_id
//   u8 to_len (0..64) | to: the recipient's node id, empty for every member
//   u64 boot_id | u64 seq | u64 epoch | u64 sent_unix_ms | u16 part | u16 parts
// Every message is signed whole (kFlagSigned below), so its recipient and its stream are:
// a message's stream is (its kind, its recipient), the kind from the flags: reports and
// relays (no kFlagBans, no kFlagResend), bans (kFlagBans), resend requests (kFlagResend).
// seq counts the sender's messages of one stream from 1 within one boot; boot_id's high
// 32 bits are the sender's boot counter (boot_counter(): it only grows, node by node).
// A receiver refuses a message whose recipient is another node, and applies a message
// of a stream at most once (PeerTracker). Version 1 (the recipient outside the signature,
// seq 0 for bans and resend requests) is refused as "wrong version", counted and logged.
//   varint ngroups, then per group (one per rule, named: peers may number their
//     rules differently; a rule's prefix budget level travels as a group of its own
//     named "RULE::pBITS", see prefix_group_name):  u8 name_len (1..47) | name
//                          varint n4 | n4 x (4-byte IPv4 address, varint hits)
//                          varint n6 | n6 x (16-byte IPv6 address, varint hits)
//   varint ntags, then per tag: varint len (1..1024) | tag bytes | varint hits
//   only if flags bit 0 (kFlagFactors) is set, the adaptive factors section:
//     varint nfactors (0..512), then per factor:
//       u8 kind (0 packet rule, 1 tag rule) | varint name_len | name | u32 factor_ppm
//     name: the packet rule's name (1..47 chars, as above) or the tag rule's prefix
//     (0..1024 bytes, no newline or NUL; "" is the catch-all); factor_ppm 1..1000000.
//   only if flags bit 1 (kFlagResend) is set, in a message of its own (its own stream, no
//     rule groups, no tags, no factors), the resend requests section:
//     varint npeers (1..kMaxResendPeers), then per peer whose messages we miss:
//       u8 node_id_len | node_id | u64 boot_id | varint nseqs (1..kMaxResendSeqs)
//       | varint first seq (>= 1) | (nseqs - 1) x varint gap to the next (>= 1)
//     Its sender asks each named peer to publish those messages of that boot again
//     (the very bytes, with their seq); a receiver applies a resent message once
//     (PeerTracker) and not at all if it is stale by then.
//   only if flags bit 2 (kFlagSigned) is set, last: a 64-byte Ed25519 detached signature
//     over every byte before it (the header, with this flag set, included), by the key
//     of the header's node id (cluster/report_signing.h). The decoder does not check it
//     (the receiver verifies before decoding); it only sets the 64 bytes aside.
//   only if flags bit 3 (kFlagBans) is set, in a message of its own (its own stream, no
//     rule groups, no tags, no factors, no resend requests), the bans section (docs/bans.md):
//     varint nbans (1..kMaxBansPerMessage), then per ban:
//       u8 op (0 lift, 1 set) | u8 family (4, 6) | u8 prefix length (1..32, 1..128)
//       | address (4 or 16 bytes, host bits clear) | u64 unix_ms (set: when it was set at
//       its origin; lift: when it was lifted)
//       set only: u64 expires_unix_ms (by the sender's clock, after sent_unix_ms by 1..kMaxBanNs
//       in ms; decoded as remaining_ms = expires - sent_unix_ms) | u8 len | reason (0..95)
//       | u8 len | origin (0..63) | u8 len | who (0..63), none with a control byte.
//     Bans have a stream of their own: a recorded bans message replayed later is a
//     duplicate (seq), or an old boot's, or stale (its age by the sender's clock); a lost
//     one costs a delay, not a ban (a host re-announces its own bans).
//   only if flags bit 5 (kFlagRelay) is set, in a message of its own (in the sender's
//     sequence, no rule groups, no tags, no factors), the relay section (reporting scheme
//     "owner", docs/cluster-scale.md): hits other members admitted and sent to this one as
//     the sources' owner, passed on once the sources turned out to be shared:
//     varint nhosts (1..kMaxRelayHosts), then per host that admitted them:
//       u8 node_id_len | node_id | groups, encoded as the report's own (varint ngroups,
//       per group the rule name and its IPv4 then IPv6 entries)
//     A receiver charges every host's entries but its own, as if that host had reported them,
//     and only a member's (a node with a key in --curve-peers, or a peer it tracks): a block
//     naming us or a stranger is refused and counted.
//   only if flags bit 4 (kFlagVerified) is set, in a message of its own (its own stream, no
//     rule groups, no tags, no factors, no other section), the verified sources section
//     (SYN cookies, docs/rules.md "SYN cookies"): sources whose cookie checked out at the
//     sender since its last such message:
//     varint n (1..kMaxVerifiedPerMessage), then per source:
//       u8 family (4, 6) | address (4 or 16 bytes) | varint remaining_ms (1..kMaxVerifiedMs:
//       how long it stays verified at the sender, from sent_unix_ms)
//     A receiver takes the message's age off, caps the rest at its own --verified-ttl and
//     writes at most kMaxVerifiedLearnedPerPeriod a period (cluster_core/verified_share.h).
// and nothing after. Other flag bits are ignored.
//
// Directed messages (reporting scheme "owner"): "DTO" | u8 len | recipient node id, then a
// whole message as above whose header names the same recipient (signed: the envelope only
// routes, the signed header decides) and whose seq counts the sender's directed messages
// to that recipient (a stream of its own). Subscribers subscribe to "DTR" (every message
// above) and to "DTO" + their own length and id, so ZeroMQ's publisher sends a directed
// message only to its recipient. A member (or a hub) that wraps another node's message
// for a third one gains nothing: the third refuses it (its signed recipient is not us). The encoder sets kFlagFactors
// only when there are factors, so a report without adaptive rules is the same bytes
// as before the section existed (and agents older than it still decode it).
// Mixed versions: agents of versions 1 and 2 refuse each other's messages ("wrong
// version", counted, and logged with the version heard): upgrade a cluster's agents
// together (meanwhile each side enforces alone, as in a partition).
// An IPv4 entry costs 5 bytes while its hits fit in 7 bits (< 128 hits per period),
// 6 below 16384; an IPv6 entry 17 and 18; a rule group 3 bytes plus its name; a
// factor 6 bytes plus its name. A period's report is split into messages of at most
// kMaxMessageBytes, numbered part/parts; the factors travel in part 0 only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bans/ban_types.h"
#include "common/report_types.h"
#include "dthrottle/common.h"

namespace dt {

constexpr uint8_t kProtocolVersion = 2;
constexpr size_t kMaxMessageBytes = 60 * 1024;     // what we send
constexpr size_t kMaxAcceptedBytes = 1 << 20;      // what we accept from others
constexpr uint64_t kMaxHitsPerEntry = 1000000000;  // more in one period is absurd
constexpr uint16_t kMaxParts = 4096;
constexpr size_t kMaxFactors = 512;  // adaptive factors per report
constexpr uint8_t kFlagFactors = 1;  // header flags bit 0: a factors section follows the tags
constexpr uint8_t kFlagResend = 2;   // header flags bit 1: a resend request message
constexpr uint8_t kFlagSigned = 4;   // header flags bit 2: an Ed25519 signature ends the message
constexpr uint8_t kFlagBans = 8;     // header flags bit 3: a bans message (docs/bans.md)
constexpr size_t kSignatureBytes = 64;
constexpr size_t kMaxBansPerMessage = 512;       // bans (sets and lifts) in one bans message
constexpr size_t kFlagsOffset = 5;               // the flags byte: after the magic and the version
constexpr size_t kMaxResendPeers = 64;           // peers named in one resend request message
constexpr size_t kMaxResendSeqs = 64;            // seqs asked of one peer in one message
constexpr uint8_t kFlagVerified = 16;            // header flags bit 4: a verified sources message (SYN cookies)
constexpr size_t kMaxVerifiedPerMessage = 1024;  // sources in one verified sources message
constexpr uint64_t kMaxVerifiedMs = 7ull * 24 * 3600 * 1000;  // the longest --verified-ttl
constexpr uint8_t kFlagRelay = 32;                            // header flags bit 5: a relay message (owner scheme)
constexpr size_t kMaxRelayHosts = 1024;                       // hosts named in one relay message
constexpr size_t kMaxRelayEntries = 4096;                     // entries in one relay message (more: several)
constexpr char kDirectedMagic[] = "DTO";                      // a directed message's prefix (3 bytes)
constexpr char kReportMagicPrefix[] = "DTR";                  // every other message's first 3 bytes

// A message's stream (with its recipient): what its seq counts (see the top of this file).
enum class Stream : uint8_t { Reports = 0, Bans = 1, Resend = 2, Verified = 3 };
const char *stream_name(Stream s);  // "reports", "bans", "resend requests", "verified sources"

// A boot id: the sender's boot counter (persisted, it only grows: boot_counter.h) in the
// high 32 bits, random bits below. Boots of a node compare by their counters.
inline uint32_t boot_counter(uint64_t boot_id) { return static_cast<uint32_t>(boot_id >> 32); }

struct ReportHeader {
  std::string node_id;
  std::string to;                   // the recipient (a directed message); "" for every member
  Stream stream = Stream::Reports;  // set by the decoder (the encoders know their kind)
  uint64_t boot_id = 0;             // per agent start (boot_counter above): a restart resets sequence tracking
  uint64_t seq = 0;                 // per message of the stream, from 1, per boot; the first of a resend
                                    // request or bans message (encode_resend_request, encode_ban_messages)
  uint64_t epoch = 0;               // the sender's period number
  uint64_t sent_unix_ms = 0;
  uint16_t part = 0;  // 0..parts-1
  uint16_t parts = 1;
};

// A request to a peer to send some of its messages again (its boot's seqs).
struct ResendRequest {
  std::string node_id;
  uint64_t boot_id = 0;
  std::vector<uint64_t> seqs;  // ascending, distinct, >= 1
};

// A source a SYN cookie verified (kFlagVerified): its key in the verified map (key.rule
// DT_VERIFIED_V4 or DT_VERIFIED_V6, the address in dt_key's form) and how long it stays so.
struct VerifiedSource {
  dt_key key{};
  uint64_t remaining_ms = 0;
};

// Hits host `node_id` admitted, passed on by the sources' owner (kFlagRelay).
struct RelayedReport {
  std::string node_id;
  std::vector<std::string> rules;  // indexed by entries' key.rule
  std::vector<ReportEntry> entries;
};

struct ReportBody {
  std::vector<std::string> rules;  // rule names, indexed by ReportEntry::key.rule
  std::vector<ReportEntry> entries;
  std::vector<TagHit> tags;
  std::vector<RuleFactor> factors;       // sent in part 0 of a report only
  std::vector<ResendRequest> resend;     // only in a resend request message (kFlagResend)
  std::vector<BanNotice> bans;           // only in a bans message (kFlagBans)
  std::vector<RelayedReport> relayed;    // only in a relay message (kFlagRelay)
  std::vector<VerifiedSource> verified;  // only in a verified sources message (kFlagVerified)
};

enum class DecodeError {
  None,
  TooShort,  // truncated anywhere
  TooLarge,  // over kMaxAcceptedBytes
  BadMagic,
  WrongVersion,
  BadNodeId,
  BadParts,
  BadVarint,
  AbsurdCount,  // a count larger than the bytes could hold
  AbsurdHits,   // 0 or more than kMaxHitsPerEntry hits
  BadRuleName,
  BadTag,  // empty, too long, or with a newline or NUL byte
  TrailingBytes,
  BadFactor,     // factor 0 or above 1000000, bad rule name or prefix, or unknown kind
  BadResend,     // a resend request with hits, a seq, no peers or seqs, or seqs not ascending
  BadBan,        // a bans message with hits or a seq, or a ban with a bad prefix, duration or text
  BadRelay,      // a relay message with groups, tags or factors, no hosts, or a bad host id
  BadRecipient,  // a recipient id that is not a valid node id
  BadVerified,   // a verified sources message with hits or another section, none, too many,
                 // or a source of an unknown family or a remaining time of 0 or over kMaxVerifiedMs
};
const char *decode_error_name(DecodeError e);

// Encodes one period's report as one or more messages of at most max_bytes each.
// Message i gets seq = first_seq + i and part i of N. Entries whose hits are 0 are
// skipped; hits above kMaxHitsPerEntry are clamped to it; entries whose rule has no
// valid name, invalid tags and invalid factors are skipped, as are valid factors past
// the first kMaxFactors. The factors go in message 0 (which may then exceed max_bytes
// only if they alone do not fit). Always returns at least one message (an empty
// report says "alive, served nothing").
std::vector<std::string> encode_report(const ReportHeader &hdr, uint64_t first_seq, const ReportBody &body,
                                       size_t max_bytes = kMaxMessageBytes);

// Encodes a resend request message (seq hdr.seq, kFlagResend): the first kMaxResendPeers
// requests with valid node ids, the first kMaxResendSeqs valid seqs of each (ascending,
// distinct, >= 1). Empty if nothing valid is left.
std::string encode_resend_request(const ReportHeader &hdr, const std::vector<ResendRequest> &reqs);

// Encodes bans messages (seqs hdr.seq, hdr.seq + 1, ...; kFlagBans) of at most kMaxBansPerMessage notices and
// about max_bytes each; notices that are not valid (bad prefix, duration, text) are
// skipped. Empty if none is left.
std::vector<std::string> encode_ban_messages(const ReportHeader &hdr, const std::vector<BanNotice> &notices,
                                             size_t max_bytes = kMaxMessageBytes);

// Encodes verified sources messages (seqs hdr.seq, hdr.seq + 1, ...; kFlagVerified) of at most
// kMaxVerifiedPerMessage sources and about max_bytes each; sources that are not valid
// (family, remaining time) are skipped. Empty if none is left.
std::vector<std::string> encode_verified_messages(const ReportHeader &hdr, const std::vector<VerifiedSource> &sources,
                                                  size_t max_bytes = kMaxMessageBytes);
// Whether `v` can go on the wire (its family known, 1..kMaxVerifiedMs, an IPv4 one mapped).
bool valid_verified(const VerifiedSource &v);

// Encodes relay messages (kFlagRelay), seqs first_seq, first_seq + 1, ...: the hosts' valid
// entries, at most kMaxRelayEntries and kMaxRelayHosts a message. Empty if none is valid.
std::vector<std::string> encode_relay(const ReportHeader &hdr, uint64_t first_seq,
                                      const std::vector<RelayedReport> &relayed);

// A directed message: the prefix naming `to`, then `msg`.
std::string wrap_directed(const std::string &to, const std::string &msg);
// If data is a directed message: its recipient and where the inner message starts. False
// if it is not one (or its prefix is malformed).
bool unwrap_directed(const void *data, size_t len, std::string *to, size_t *inner_offset);

// The sender's node id and the header flags, from the start of a message (magic, version,
// flags, node id) without reading the rest: to check a signature before decoding. None,
// or the error decode_report would return for that prefix.
DecodeError peek_sender(const void *data, size_t len, std::string *node_id, uint8_t *flags);
// The protocol version byte of a message that starts with the report magic (0 if none):
// to name the version of a message refused as "wrong version".
uint8_t peek_version(const void *data, size_t len);

// Decodes and validates one message. On error *body is left empty.
DecodeError decode_report(const void *data, size_t len, ReportHeader *hdr, ReportBody *body);

}  // namespace dt
