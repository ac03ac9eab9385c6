// report_signing.cpp - Ed25519 signatures of peer messages (libsodium).
#include "cluster/report_signing.h"

#include <sodium.h>
#include <zmq.h>

#include <cstring>
#include <mutex>

#include "cluster_core/aggregate_protocol.h"

namespace dt {
namespace {

// The BLAKE2b key of the signing seed: a new version of the derivation changes it.
constexpr char kDeriveContext[] = "dthrottle report signing v1";

bool z85_decode_32(const std::string &z85, uint8_t out[32]) {
  return z85.size() == 40 && zmq_z85_decode(out, z85.c_str()) != nullptr;
}

}  // namespace

bool init_sodium() {
  static std::once_flag once;
  static bool ok = false;
  std::call_once(once, [] { ok = sodium_init() >= 0; });  // 1: already initialised (libzmq)
  return ok;
}

SigningKey::~SigningKey() { sodium_memzero(secret.data(), secret.size()); }

std::string SigningKey::public_z85() const {
  char z85[41];
  zmq_z85_encode(z85, public_key.data(), public_key.size());
  return z85;
}

bool derive_signing_key(const std::string &curve_secret_z85, SigningKey *out, std::string *err) {
  if (!init_sodium()) return *err = "cannot initialise libsodium", false;
  uint8_t curve_secret[32], seed[crypto_sign_SEEDBYTES];
  if (!z85_decode_32(curve_secret_z85, curve_secret)) return *err = "the secret key is not 40 characters of Z85", false;
  static_assert(sizeof kDeriveContext - 1 >= crypto_generichash_KEYBYTES_MIN);
  crypto_generichash(seed, sizeof seed, curve_secret, sizeof curve_secret,
                     reinterpret_cast<const unsigned char *>(kDeriveContext), sizeof kDeriveContext - 1);
  crypto_sign_seed_keypair(out->public_key.data(), out->secret.data(), seed);
  sodium_memzero(seed, sizeof seed);
  sodium_memzero(curve_secret, sizeof curve_secret);
  return true;
}

void sign_message(std::string &msg, const SigningKey &key) {
  if (msg.size() <= kFlagsOffset) return;  // not an encoded message: nothing to sign
  msg[kFlagsOffset] = static_cast<char>(static_cast<uint8_t>(msg[kFlagsOffset]) | kFlagSigned);
  uint8_t sig[crypto_sign_BYTES];
  static_assert(crypto_sign_BYTES == kSignatureBytes);
  crypto_sign_detached(sig, nullptr, reinterpret_cast<const uint8_t *>(msg.data()), msg.size(), key.secret.data());
  msg.append(reinterpret_cast<const char *>(sig), sizeof sig);
}

const char *signature_check_name(SignatureCheck c) {
  switch (c) {
    case SignatureCheck::Ok: return "ok";
    case SignatureCheck::Malformed: return "malformed";
    case SignatureCheck::Unsigned: return "unsigned";
    case SignatureCheck::UnknownNode: return "unknown_node";
    case SignatureCheck::BadSignature: return "bad_signature";
    case SignatureCheck::HubReport: return "hub_report";
    case SignatureCheck::NotHub: return "not_hub";
  }
  return "?";
}

bool ReportVerifier::load(const std::vector<CurvePeer> &peers, const std::string &own_node_id, const SigningKey &own,
                          std::string *err) {
  if (!init_sodium()) return *err = "cannot initialise libsodium", false;
  std::map<std::string, Signer> signers;
  signers[own_node_id] = Signer{own.public_key, KeyRole::Node};
  for (const auto &p : peers) {
    Signer s;
    if (!z85_decode_32(p.sign_key, s.key.data()))
      return *err = p.file + ": 'sign' is not a 40-character Z85 key", false;
    s.role = p.role;
    if (p.node_id == own_node_id && s.key != own.public_key)
      return *err = p.file + " speaks for node " + own_node_id +
                    ", this node, with another key than --curve-key's: remove it (or use that node's key)",
             false;
    signers[p.node_id] = s;  // read_curve_peers refused two keys for one node id
  }
  signers_ = std::move(signers);
  return true;
}

VerifyResult ReportVerifier::verify(const void *data, size_t len, const std::string &link_node) const {
  VerifyResult r;
  uint8_t flags = 0;
  if (len > kMaxAcceptedBytes) {
    r.malformed = DecodeError::TooLarge;  // not worth hashing
    return r;
  }
  r.malformed = peek_sender(data, len, &r.node_id, &flags);
  if (r.malformed != DecodeError::None) return r;
  return check(r, flags, data, len, KeyRole::Node, link_node);
}

VerifyResult ReportVerifier::verify_aggregate(const void *data, size_t len) const {
  VerifyResult r;
  uint8_t flags = 0;
  if (len > kMaxAcceptedBytes) {
    r.malformed = DecodeError::TooLarge;
    return r;
  }
  r.malformed = peek_aggregate_sender(data, len, &r.node_id, &flags);
  if (r.malformed != DecodeError::None) return r;
  return check(r, flags, data, len, KeyRole::Hub);
}

// The signature of a message whose sender (r.node_id) and flags are read, by a key of the
// role `wanted`: a node's report, or a hub's aggregate.
VerifyResult ReportVerifier::check(VerifyResult r, uint8_t flags, const void *data, size_t len, KeyRole wanted,
                                   const std::string &link_node) const {
  if (!(flags & kFlagSigned) || len < kSignatureBytes) return r.check = SignatureCheck::Unsigned, r;
  const auto it = signers_.find(r.node_id);
  if (it == signers_.end()) return r.check = SignatureCheck::UnknownNode, r;
  if (!link_node.empty() && link_node == r.node_id && it->second.role == wanted) {
    r.by_link = true;
    return r.check = SignatureCheck::Ok, r;
  }
  const auto *bytes = static_cast<const uint8_t *>(data);
  const size_t signed_len = len - kSignatureBytes;
  if (crypto_sign_verify_detached(bytes + signed_len, bytes, signed_len, it->second.key.data()) != 0)
    return r.check = SignatureCheck::BadSignature, r;
  if (it->second.role != wanted)
    return r.check = wanted == KeyRole::Node ? SignatureCheck::HubReport : SignatureCheck::NotHub, r;
  r.check = SignatureCheck::Ok;
  return r;
}

}  // namespace dt
