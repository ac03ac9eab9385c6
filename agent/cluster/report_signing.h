// report_signing.h - reports bound to their node, end to end: each message signed with
// its node's key, checked against the key of the node id it names before it is decoded.
//
// With keys (--curve-key), every message an agent publishes is signed with its node's
// key, and every message it hears is verified against the key of the node id in its
// header before anything else of it is read.
//
// Why signatures and not CurveZMQ alone: CURVE authenticates a connection, not the node
// id inside what travels on it. A receiving agent is a CURVE *client* of its peers' PUB
// sockets and of the hub's XPUB (ZAP, and its User-Id, run on the server side only), and
// a hub relays every agent's messages on one connection; so any allowlisted member, and
// the hub, could otherwise write any node id in a report. Where the connection does prove
// the node (a member's own link in a full mesh, cluster/link_senders.h), a message naming
// that node needs no check of its signature (verify's link_node): a keyed agent checks
// only what comes through a hub or names another node.
//
// The keys: a node's Ed25519 signing key is derived from its CURVE secret (seed =
// BLAKE2b-256 keyed with "dthrottle report signing v1" over the 32 secret bytes), so a
// node keeps one secret, and its NAME.pub carries the public half (`sign = ...`) beside
// the node id it speaks for (cluster/key_files.h). Verifying needs the .pub of every
// node whose reports we apply, in --curve-peers, in a mesh and through a hub alike.
//
// The wire: header flags bit 2 (kFlagSigned, cluster_core/peer_protocol.h) says the last 64
// bytes are a detached Ed25519 signature over every byte before them, the header with
// the flag set included. Resent messages are the stored signed bytes, unchanged.
//
// What a receiver with keys rejects (ClusterCounters::rejected, `agent stats --json`,
// metrics, a rate-limited log line), before decoding the body:
//   "unsigned"       no kFlagSigned (or too short to hold a signature)
//   "unknown_node"   its node id has no .pub in --curve-peers (nor is ours)
//   "bad_signature"  the signature is not that node's key's over these bytes: altered,
//                    or signed by another member's key
//   "hub_report"     a report signed by a role = hub key, which may sign only the
//                    aggregates of a summing hub (cluster_core/aggregate_protocol.h)
//   "not_hub"        an aggregate signed by a role = node key
// Without keys (--insecure-cluster) nothing is signed and nothing is required to be.
//
// The hub's role, settled: `agent hub` is a relay and is NOT trusted to speak for any
// node. Agents verify every report against the originating node's key, end to end, so
// a hub (or any allowlisted member, or anyone on the path behind CURVE) can drop, delay
// or read reports (the hub terminates CURVE: it sees them in clear), but cannot forge or
// alter them; a replayed report carries its old (boot, seq) and is dropped as a
// duplicate or stale by the PeerTracker. A compromised hub can therefore silence the
// cluster (each agent then admits its own budget: the partition case), not turn it
// against a victim. Keys with `role = hub` are reserved for the summing hub (docs/hub.md),
// whose signed aggregate reports speak for the nodes it sums; a `role = node` key never
// may, and until aggregate reports exist a hub key's messages are rejected ("hub_report").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster/key_files.h"
#include "cluster_core/peer_protocol.h"

namespace dt {

constexpr size_t kSignPublicBytes = 32;

// libsodium initialised, once per process (any thread); false if it cannot be.
bool init_sodium();

// A node's report signing key pair.
struct SigningKey {
  SigningKey() = default;
  SigningKey(const SigningKey &) = default;
  SigningKey &operator=(const SigningKey &) = default;
  ~SigningKey();                     // wipes the secret
  std::array<uint8_t, 64> secret{};  // libsodium's Ed25519 secret key (seed and public key)
  std::array<uint8_t, kSignPublicBytes> public_key{};
  std::string public_z85() const;  // as `sign = ...` in the .pub file
};

// The signing key derived from a CURVE secret key (Z85, as in the .key file): the same
// secret always gives the same key. False with *err if the secret is not valid Z85.
bool derive_signing_key(const std::string &curve_secret_z85, SigningKey *out, std::string *err);

// Signs an encoded message (encode_report, encode_resend_request) in place: sets
// kFlagSigned in its header and appends the signature over every byte before it.
void sign_message(std::string &msg, const SigningKey &key);

// NotHub: an aggregate (cluster_core/aggregate_protocol.h) signed by a role = node key.
enum class SignatureCheck { Ok, Malformed, Unsigned, UnknownNode, BadSignature, HubReport, NotHub };
// The rejection counter's name ("unsigned", "unknown_node", "bad_signature", "hub_report",
// "not_hub").
const char *signature_check_name(SignatureCheck c);

struct VerifyResult {
  SignatureCheck check = SignatureCheck::Malformed;
  DecodeError malformed = DecodeError::None;  // with Malformed: why the header prefix is bad
  std::string node_id;                        // the header's (valid unless Malformed)
  bool by_link = false;                       // Ok by its CurveZMQ link (link_senders.h), not checked
};

// Who may sign for which node id: the --curve-peers .pub files, and this node.
class ReportVerifier {
 public:
  // Every peer's sign key by its node id, and ours under `own_node_id` (our echoes through
  // a hub verify too). False with *err if a .pub's sign key is not valid Z85 or a .pub
  // claims our node id with another key.
  bool load(const std::vector<CurvePeer> &peers, const std::string &own_node_id, const SigningKey &own,
            std::string *err);
  // Checks the signature of one message; reads only the header's prefix (peek_sender).
  // `link_node`: the member whose CurveZMQ connection the message came on, when that is
  // known (link_senders.h): a signed message naming that member as its sender is Ok
  // without the signature's check (the link proved it; Ed25519's check costs 40 us here).
  VerifyResult verify(const void *data, size_t len, const std::string &link_node = {}) const;
  // The same for a summing hub's aggregate: only a role = hub key may sign one (Ok), and
  // r.node_id is the hub's.
  VerifyResult verify_aggregate(const void *data, size_t len) const;
  size_t size() const { return signers_.size(); }
  // A key speaks for `node_id` (state kept per node id can be limited to these).
  bool knows(const std::string &node_id) const { return signers_.count(node_id) != 0; }
  // A role = node key speaks for `node_id` (a member that admits traffic; not a hub).
  bool knows_node(const std::string &node_id) const {
    const auto it = signers_.find(node_id);
    return it != signers_.end() && it->second.role == KeyRole::Node;
  }

 private:
  struct Signer {
    std::array<uint8_t, kSignPublicBytes> key{};
    KeyRole role = KeyRole::Node;
  };
  VerifyResult check(VerifyResult r, uint8_t flags, const void *data, size_t len, KeyRole wanted,
                     const std::string &link_node = {}) const;
  std::map<std::string, Signer> signers_;
};

}  // namespace dt
