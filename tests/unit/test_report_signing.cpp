// test_report_signing.cpp - reports bound to their node: the key files agent keygen
// writes (node id, signing key, role, --from), the signing key derived from the CURVE
// secret, and what ReportVerifier accepts and rejects (cluster/report_signing.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent_args.h"
#include "cluster/curve.h"
#include "cluster/key_files.h"
#include "cluster/report_signing.h"
#include "cluster_core/aggregate_protocol.h"
#include "cluster_core/peer_protocol.h"
#include "commands/commands.h"
#include "common/address.h"
#include "report_fixtures.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A file without the lines whose key starts with one of `keys` (an older keygen's file).
void drop_lines(const std::string &path, const std::vector<std::string> &keys) {
  std::istringstream in(slurp(path));
  std::string line, text;
  while (std::getline(in, line)) {
    bool drop = false;
    for (const auto &k : keys) drop = drop || line.rfind(k, 0) == 0;
    if (!drop) text += line + "\n";
  }
  std::ofstream(path, std::ios::trunc) << text;
}

// One period's report of `node`: one source, one tag.
std::string report_of(const std::string &node, uint64_t seq = 1) {
  dt::ReportHeader h;
  h.node_id = node;
  h.boot_id = 7;
  h.epoch = 3;
  h.sent_unix_ms = 1700000000000;
  dt::ReportBody b = dt::test::body_of({dt::test::entry("198.18.0.1", 5)});
  b.tags = {{"api", 9}};
  return dt::encode_report(h, seq, b)[0];
}

class ReportSigningTest : public dt::test::TempDirTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(TempDirTest::SetUp());
    fs::create_directories(dir_ + "/peers");
    for (const char *n : {"web1", "web2"}) keygen({n});
    keygen({"hub", "--role", "hub"});
    for (const char *n : {"web1", "web2", "hub"}) fs::copy_file(pub(n), dir_ + "/peers/" + n + ".pub");
    ASSERT_TRUE(load_key("web1", &web1_));
    ASSERT_TRUE(load_key("web2", &web2_));
    ASSERT_TRUE(load_key("hub", &hub_));
    std::vector<dt::CurvePeer> peers;
    std::string err;
    ASSERT_TRUE(dt::read_curve_peers(dir_ + "/peers", &peers, &err)) << err;
    // The receiver is web2: web1 and the hub are peers, web2 itself is known too.
    ASSERT_TRUE(verifier_.load(peers, "web2", web2_, &err)) << err;
  }

  // `agent keygen ARGS --dir DIR`; returns its exit status.
  int keygen(std::vector<std::string> args, bool with_dir = true) {
    args.insert(args.begin(), "keygen");
    if (with_dir) args.insert(args.end(), {"--dir", dir_});
    return dt::test::run_captured(dt::cmd_keygen, args, &stderr_);
  }

  bool load_key(const std::string &name, dt::SigningKey *key) {
    dt::KeyPairFile kp;
    std::string err;
    const bool ok =
        dt::read_key_pair_file(this->key(name), &kp, &err) && dt::derive_signing_key(kp.secret_key, key, &err);
    EXPECT_TRUE(ok) << err;
    return ok;
  }

  std::string key(const std::string &name) const { return dir_ + "/" + name + ".key"; }
  std::string pub(const std::string &name) const { return dir_ + "/" + name + ".pub"; }

  const std::string dir_ = tmp_.path();
  std::string stderr_;
  dt::SigningKey web1_, web2_, hub_;
  dt::ReportVerifier verifier_;
};

TEST_F(ReportSigningTest, SignedReportVerifiesAndDecodesAsBefore) {
  const std::string plain = report_of("web1");
  std::string msg = plain;
  dt::sign_message(msg, web1_);
  ASSERT_EQ(msg.size(), plain.size() + dt::kSignatureBytes);
  EXPECT_TRUE(msg[dt::kFlagsOffset] & dt::kFlagSigned);
  const dt::VerifyResult v = verifier_.verify(msg.data(), msg.size());
  EXPECT_EQ(v.check, dt::SignatureCheck::Ok) << dt::signature_check_name(v.check);
  EXPECT_EQ(v.node_id, "web1");

  dt::ReportHeader h, h0;
  dt::ReportBody b, b0;
  ASSERT_EQ(dt::decode_report(msg.data(), msg.size(), &h, &b), dt::DecodeError::None)
      << "the decoder sets the signature aside";
  ASSERT_EQ(dt::decode_report(plain.data(), plain.size(), &h0, &b0), dt::DecodeError::None);
  EXPECT_EQ(h.seq, h0.seq);
  ASSERT_EQ(b.entries.size(), 1u);
  EXPECT_EQ(b.entries[0].hits, 5u);
  ASSERT_EQ(b.tags.size(), 1u);
  EXPECT_EQ(b.tags[0].hits, 9u);
  // A resend request is signed the same way.
  dt::ReportHeader rh;
  rh.node_id = "web1";
  std::string req = dt::encode_resend_request(rh, {{"web2", 7, {3, 4}}});
  dt::sign_message(req, web1_);
  EXPECT_EQ(verifier_.verify(req.data(), req.size()).check, dt::SignatureCheck::Ok);
  ASSERT_EQ(dt::decode_report(req.data(), req.size(), &h, &b), dt::DecodeError::None);
  ASSERT_EQ(b.resend.size(), 1u);
  EXPECT_EQ(b.resend[0].seqs, (std::vector<uint64_t>{3, 4}));
}

TEST_F(ReportSigningTest, AnyFlippedByteIsRejected) {
  std::string msg = report_of("web1");
  dt::sign_message(msg, web1_);
  const size_t prefix = 4 + 1 + 1 + 1 + 4;  // magic, version, flags, id length, "web1"
  for (size_t i = 0; i < msg.size(); i++) {
    std::string bad = msg;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    const dt::VerifyResult v = verifier_.verify(bad.data(), bad.size());
    if (i >= prefix || i == dt::kFlagsOffset)  // the flags byte: bit 0 flipped, still signed
      EXPECT_EQ(v.check, dt::SignatureCheck::BadSignature) << "byte " << i << ": " << dt::signature_check_name(v.check);
    else EXPECT_NE(v.check, dt::SignatureCheck::Ok) << "byte " << i << " of the header's prefix";
  }
  // Cut short, or a byte more: the signature no longer covers what precedes it.
  EXPECT_EQ(verifier_.verify(msg.data(), msg.size() - 1).check, dt::SignatureCheck::BadSignature);
  std::string longer = msg + "x";
  EXPECT_EQ(verifier_.verify(longer.data(), longer.size()).check, dt::SignatureCheck::BadSignature);
}

TEST_F(ReportSigningTest, MemberSigningForAnotherNodeIsRejected) {
  // web1's own valid key, a report that claims to be the hub's or ours (web2).
  for (const char *claimed : {"web2", "hub"}) {
    std::string msg = report_of(claimed);
    dt::sign_message(msg, web1_);
    const dt::VerifyResult v = verifier_.verify(msg.data(), msg.size());
    EXPECT_EQ(v.check, dt::SignatureCheck::BadSignature) << claimed << ": " << dt::signature_check_name(v.check);
    EXPECT_EQ(v.node_id, claimed);
  }
  EXPECT_STREQ(dt::signature_check_name(dt::SignatureCheck::BadSignature), "bad_signature");
}

// A message to one owner names it in its signed header: a member or hub that wraps it for
// another node cannot change whom it is for (the envelope only routes), and one that
// rewrites the header breaks the signature.
TEST_F(ReportSigningTest, TheRecipientIsSigned) {
  dt::ReportHeader h;
  h.node_id = "web1";
  h.to = "web3";
  h.boot_id = 7;
  h.sent_unix_ms = 1700000000000;
  std::string msg = dt::encode_report(h, 1, dt::ReportBody{{"default"}, {}, {}, {}, {}, {}, {}, {}})[0];
  dt::sign_message(msg, web1_);
  const std::string wrapped = dt::wrap_directed("web2", msg);
  std::string to;
  size_t at = 0;
  ASSERT_TRUE(dt::unwrap_directed(wrapped.data(), wrapped.size(), &to, &at));
  EXPECT_EQ(to, "web2");
  ASSERT_EQ(verifier_.verify(wrapped.data() + at, wrapped.size() - at).check, dt::SignatureCheck::Ok);
  dt::ReportHeader got;
  dt::ReportBody body;
  ASSERT_EQ(dt::decode_report(wrapped.data() + at, wrapped.size() - at, &got, &body), dt::DecodeError::None);
  EXPECT_EQ(got.to, "web3") << "the signed recipient, whatever the envelope says";
  std::string readdressed = msg;
  const size_t to_at = readdressed.find("web3");
  ASSERT_NE(to_at, std::string::npos);
  readdressed[to_at + 3] = '2';  // web3 -> web2
  EXPECT_EQ(verifier_.verify(readdressed.data(), readdressed.size()).check, dt::SignatureCheck::BadSignature);
}

TEST_F(ReportSigningTest, UnsignedAndUnknownNodesAreRejected) {
  const std::string plain = report_of("web1");
  EXPECT_EQ(verifier_.verify(plain.data(), plain.size()).check, dt::SignatureCheck::Unsigned);
  // The flag alone, without a signature's worth of bytes: unsigned, not read past the end.
  std::string flagged = plain.substr(0, 20);
  flagged[dt::kFlagsOffset] = static_cast<char>(flagged[dt::kFlagsOffset] | dt::kFlagSigned);
  EXPECT_EQ(verifier_.verify(flagged.data(), flagged.size()).check, dt::SignatureCheck::Unsigned);

  std::string stranger = report_of("web9");
  dt::sign_message(stranger, web1_);
  const dt::VerifyResult v = verifier_.verify(stranger.data(), stranger.size());
  EXPECT_EQ(v.check, dt::SignatureCheck::UnknownNode);
  EXPECT_EQ(v.node_id, "web9");
  EXPECT_TRUE(verifier_.knows("web1"));
  EXPECT_TRUE(verifier_.knows("web2")) << "our own node id, for our echoes through a hub";
  EXPECT_FALSE(verifier_.knows("web9"));
  EXPECT_STREQ(dt::signature_check_name(dt::SignatureCheck::Unsigned), "unsigned");
  EXPECT_STREQ(dt::signature_check_name(dt::SignatureCheck::UnknownNode), "unknown_node");

  // Not a report at all: the decoder's reason, nothing verified.
  const std::string junk = "GARBAGE";
  const dt::VerifyResult j = verifier_.verify(junk.data(), junk.size());
  EXPECT_EQ(j.check, dt::SignatureCheck::Malformed);
  EXPECT_EQ(j.malformed, dt::DecodeError::BadMagic);
}

// A message on a member's own CurveZMQ connection (link_senders.h) naming that member: its
// link proved it, so its signature is not checked; every other message is checked as before.
TEST_F(ReportSigningTest, TheSendersOwnLinkProvesItsMessage) {
  std::string msg = report_of("web1");
  dt::sign_message(msg, web1_);
  std::string garbled = msg;
  garbled.back() = static_cast<char>(garbled.back() ^ 0x01);  // the signature's last byte
  const dt::VerifyResult v = verifier_.verify(garbled.data(), garbled.size(), "web1");
  EXPECT_EQ(v.check, dt::SignatureCheck::Ok) << dt::signature_check_name(v.check);
  EXPECT_TRUE(v.by_link);
  EXPECT_FALSE(verifier_.verify(msg.data(), msg.size()).by_link) << "no link known: checked";
  // Another member's link (web2's connection carrying a message that names web1): checked.
  EXPECT_EQ(verifier_.verify(garbled.data(), garbled.size(), "web2").check, dt::SignatureCheck::BadSignature);
  const dt::VerifyResult other = verifier_.verify(msg.data(), msg.size(), "web2");
  EXPECT_EQ(other.check, dt::SignatureCheck::Ok);
  EXPECT_FALSE(other.by_link);
  // Still signed or refused, a known node, and a node's key for a report.
  const std::string plain = report_of("web1");
  EXPECT_EQ(verifier_.verify(plain.data(), plain.size(), "web1").check, dt::SignatureCheck::Unsigned);
  std::string stranger = report_of("web9");
  dt::sign_message(stranger, web1_);
  EXPECT_EQ(verifier_.verify(stranger.data(), stranger.size(), "web9").check, dt::SignatureCheck::UnknownNode);
  std::string hub_report = report_of("hub");
  dt::sign_message(hub_report, hub_);
  EXPECT_EQ(verifier_.verify(hub_report.data(), hub_report.size(), "hub").check, dt::SignatureCheck::HubReport);
}

// Relay blocks are charged only for members: nodes with a role = node key (not a hub).
TEST_F(ReportSigningTest, OnlyNodeKeysAreMembers) {
  EXPECT_TRUE(verifier_.knows_node("web1"));
  EXPECT_TRUE(verifier_.knows_node("web2")) << "ours";
  EXPECT_FALSE(verifier_.knows_node("hub")) << "a hub admits no traffic";
  EXPECT_FALSE(verifier_.knows_node("web9"));
}

TEST_F(ReportSigningTest, HubKeySignsNoNodeReport) {
  std::string msg = report_of("hub");
  dt::sign_message(msg, hub_);
  EXPECT_EQ(verifier_.verify(msg.data(), msg.size()).check, dt::SignatureCheck::HubReport)
      << "a role = hub key is reserved for aggregate reports";
}

TEST_F(ReportSigningTest, SigningKeyIsDerivedDeterministically) {
  dt::KeyPairFile kp;
  std::string err;
  ASSERT_TRUE(dt::read_key_pair_file(key("web1"), &kp, &err)) << err;
  dt::SigningKey a, b;
  ASSERT_TRUE(dt::derive_signing_key(kp.secret_key, &a, &err)) << err;
  ASSERT_TRUE(dt::derive_signing_key(kp.secret_key, &b, &err)) << err;
  EXPECT_EQ(a.secret, b.secret);
  EXPECT_EQ(a.public_key, b.public_key);
  EXPECT_NE(a.public_key, web2_.public_key) << "another secret, another key";
  dt::CurvePeer p;
  ASSERT_TRUE(dt::read_public_file(pub("web1"), &p, &err)) << err;
  EXPECT_EQ(p.sign_key, a.public_z85()) << "the .pub's sign key is the one derived from the .key";
  EXPECT_FALSE(dt::derive_signing_key("not a key", &a, &err));
}

TEST_F(ReportSigningTest, KeygenFilesParse) {
  ASSERT_EQ(keygen({"edge7", "--node-id", "edge7-3fa2c1", "--endpoint", "198.18.1.7:7700"}), 0) << stderr_;
  dt::KeyPairFile kp;
  dt::CurvePeer p;
  std::string err;
  ASSERT_TRUE(dt::read_key_pair_file(key("edge7"), &kp, &err)) << err;
  ASSERT_TRUE(dt::read_public_file(pub("edge7"), &p, &err)) << err;
  EXPECT_EQ(kp.node_id, "edge7-3fa2c1");
  EXPECT_EQ(p.node_id, "edge7-3fa2c1");
  EXPECT_EQ(p.public_key, kp.public_key);
  EXPECT_EQ(p.sign_key.size(), 40u);
  EXPECT_EQ(p.role, dt::KeyRole::Node) << "role node by default";
  EXPECT_EQ(p.endpoint, "tcp://198.18.1.7:7700");
  dt::CurvePeer h;
  ASSERT_TRUE(dt::read_public_file(pub("hub"), &h, &err)) << err;
  EXPECT_EQ(h.role, dt::KeyRole::Hub);
  EXPECT_EQ(h.node_id, "hub") << "node id NAME by default";
  struct stat st {};
  ASSERT_EQ(stat(key("edge7").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(pub("edge7").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);

  EXPECT_EQ(keygen({"bad", "--node-id", "a b"}), 2);
  EXPECT_NE(stderr_.find("node id 'a b' must be"), std::string::npos) << stderr_;
  EXPECT_EQ(keygen({"bad", "--role", "boss"}), 2);
  EXPECT_NE(stderr_.find("--role: 'boss' is not one of node, hub"), std::string::npos) << stderr_;
}

TEST_F(ReportSigningTest, KeygenNeverFollowsASymlink) {
  const std::string target = dir_ + "/elsewhere";
  ASSERT_EQ(symlink(target.c_str(), key("trap").c_str()), 0);
  EXPECT_EQ(keygen({"trap"}), 1);
  EXPECT_NE(stderr_.find("it is a symlink"), std::string::npos) << stderr_;
  EXPECT_FALSE(fs::exists(target)) << "the secret went through the symlink";
}

TEST_F(ReportSigningTest, FromRewritesThePubIdentically) {
  ASSERT_EQ(keygen({"edge8", "--endpoint", "198.18.1.8:7700", "--role", "hub"}), 0) << stderr_;
  const std::string key_text = slurp(key("edge8")), pub_text = slurp(pub("edge8"));
  fs::remove(pub("edge8"));
  ASSERT_EQ(keygen({"edge8", "--from", key("edge8"), "--endpoint", "198.18.1.8:7700", "--role", "hub"}), 0) << stderr_;
  EXPECT_EQ(slurp(pub("edge8")), pub_text);
  EXPECT_EQ(slurp(key("edge8")), key_text) << "--from leaves a current .key as it is";
  // With the old .pub in place, its endpoint and role are kept without being given again.
  ASSERT_EQ(keygen({"edge8", "--from", key("edge8")}, false), 0) << stderr_;
  EXPECT_EQ(slurp(pub("edge8")), pub_text) << "the default --dir is the .key's";
}

TEST_F(ReportSigningTest, OlderKeygenFilesAreRefusedThenUpgraded) {
  // An older keygen's files: no node_id in the .key; no sign, node_id, role in the .pub.
  drop_lines(key("web1"), {"node_id"});
  drop_lines(pub("web1"), {"sign", "node_id", "role"});
  const std::string curve_line = slurp(key("web1")).substr(slurp(key("web1")).find("public"));
  std::vector<dt::CurvePeer> peers;
  std::string err;
  fs::create_directories(dir_ + "/old");
  fs::copy_file(pub("web1"), dir_ + "/old/web1.pub");
  EXPECT_FALSE(dt::read_curve_peers(dir_ + "/old", &peers, &err));
  EXPECT_NE(err.find(dir_ + "/old/web1.pub has no 'sign' and 'node_id' lines"), std::string::npos) << err;
  EXPECT_NE(err.find("agent keygen web1 --from web1.key"), std::string::npos) << err;
  dt::CurveKeys keys;
  EXPECT_FALSE(dt::load_curve_keys(key("web1"), dir_ + "/peers", &keys, &err));
  EXPECT_NE(err.find("agent keygen web1 --from web1.key"), std::string::npos) << err;

  ASSERT_EQ(keygen({"web1", "--from", key("web1")}), 0) << stderr_;
  EXPECT_NE(slurp(key("web1")).find(curve_line), std::string::npos) << "the key pair is kept";
  dt::KeyPairFile kp;
  dt::CurvePeer p;
  ASSERT_TRUE(dt::read_key_pair_file(key("web1"), &kp, &err)) << err;
  ASSERT_TRUE(dt::read_public_file(pub("web1"), &p, &err)) << err;
  EXPECT_EQ(kp.node_id, "web1");
  EXPECT_EQ(p.sign_key, web1_.public_z85()) << "the same signing key as before the upgrade";
  struct stat st {};
  ASSERT_EQ(stat(key("web1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(ReportSigningTest, OneNodeIdOneKey) {
  ASSERT_EQ(keygen({"impostor", "--node-id", "web1"}), 0) << stderr_;
  fs::copy_file(pub("impostor"), dir_ + "/peers/impostor.pub");
  std::vector<dt::CurvePeer> peers;
  std::string err;
  EXPECT_FALSE(dt::read_curve_peers(dir_ + "/peers", &peers, &err));
  EXPECT_NE(err.find("both speak for node web1 with different keys"), std::string::npos) << err;
  fs::remove(dir_ + "/peers/impostor.pub");
  // A copy of the same file is no conflict.
  fs::copy_file(pub("web1"), dir_ + "/peers/web1-copy.pub");
  EXPECT_TRUE(dt::read_curve_peers(dir_ + "/peers", &peers, &err)) << err;
  // A .pub that claims our node id with another key.
  dt::ReportVerifier v;
  EXPECT_FALSE(v.load(peers, "web1", web2_, &err));
  EXPECT_NE(err.find("speaks for node web1, this node"), std::string::npos) << err;
  // The same, as the agent, the hub and agent check read the keys: refused up front.
  fs::remove(dir_ + "/peers/web1-copy.pub");
  fs::copy_file(pub("impostor"), dir_ + "/peers/impostor.pub");
  fs::remove(dir_ + "/peers/web1.pub");
  dt::CurveKeys keys;
  EXPECT_FALSE(dt::load_curve_keys(key("web1"), dir_ + "/peers", &keys, &err));
  EXPECT_NE(err.find("impostor.pub speaks for node web1, this node"), std::string::npos) << err;
}

TEST_F(ReportSigningTest, KeyBindsTheNodeId) {
  std::string id, err;
  EXPECT_TRUE(dt::bind_node_id_to_key(key("web1"), &id, &err)) << err;
  EXPECT_EQ(id, "web1");
  EXPECT_TRUE(dt::bind_node_id_to_key(key("web1"), &id, &err)) << "the same --node-id is fine: " << err;
  id = "web2";
  EXPECT_FALSE(dt::bind_node_id_to_key(key("web1"), &id, &err));
  EXPECT_NE(err.find("--node-id web2 but web1.key speaks for node web1"), std::string::npos) << err;
}

}  // namespace

// A summing hub's aggregate (cluster_core/aggregate_protocol.h): only a role = hub key signs one.
TEST_F(ReportSigningTest, HubKeySignsAggregatesNodeKeysDoNot) {
  dt::ReportHeader h;
  h.node_id = "hub";
  h.boot_id = 1;
  h.epoch = 1;
  const dt::ReportBody sums = dt::test::body_of({dt::test::entry("198.18.0.1", 12)});
  std::string agg = dt::encode_aggregate("hub", {{"web1", 7, {3}}}, h, 1, sums)[0];
  std::string by_hub = agg, by_node = agg;
  dt::sign_message(by_hub, hub_);
  dt::sign_message(by_node, web1_);
  const dt::VerifyResult ok = verifier_.verify_aggregate(by_hub.data(), by_hub.size());
  EXPECT_EQ(ok.check, dt::SignatureCheck::Ok) << dt::signature_check_name(ok.check);
  EXPECT_EQ(ok.node_id, "hub");
  by_hub[by_hub.size() / 2] ^= 1;
  EXPECT_EQ(verifier_.verify_aggregate(by_hub.data(), by_hub.size()).check, dt::SignatureCheck::BadSignature);
  // web1's own key cannot sign sums: under the hub's name it is a bad signature, under its own a node's key.
  EXPECT_EQ(verifier_.verify_aggregate(by_node.data(), by_node.size()).check, dt::SignatureCheck::BadSignature);
  std::string as_web1 = dt::encode_aggregate(
      "web1", {},
      [] {
        dt::ReportHeader w;
        w.node_id = "web1";
        return w;
      }(),
      1, sums)[0];
  dt::sign_message(as_web1, web1_);
  EXPECT_EQ(verifier_.verify_aggregate(as_web1.data(), as_web1.size()).check, dt::SignatureCheck::NotHub);
  // And a hub's key still signs no report.
  std::string report = report_of("hub");
  dt::sign_message(report, hub_);
  EXPECT_EQ(verifier_.verify(report.data(), report.size()).check, dt::SignatureCheck::HubReport);
}
