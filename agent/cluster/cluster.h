// cluster.h - this agent's place in the cluster: publish what this host served every
// period (ZeroMQ PUB), hear every peer (ZeroMQ SUB) and debit what they served from
// our own buckets, so a client sprayed over N hosts gets one budget, not N.
//
// Topology: a full mesh (each agent binds --listen and connects to every --peers
// endpoint) or one or more hubs (`agent hub`, a zmq_proxy between XSUB and XPUB):
// with --hub HOST:PORT an agent publishes to HOST:PORT and subscribes to HOST:PORT+1.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "adaptive/adaptive.h"
#include "bans/ban_sync.h"
#include "cluster/cluster_counters.h"
#include "cluster/curve.h"
#include "cluster/link_senders.h"
#include "cluster/report_signing.h"
#include "cluster/source_watch.h"
#include "cluster/zmq_fwd.h"
#include "cluster_core/cluster_node.h"
#include "cluster_core/cluster_times.h"
#include "cluster_core/peer_protocol.h"
#include "cluster_core/report_cadence.h"
#include "cluster_core/report_router.h"
#include "cluster_core/resend_buffer.h"
#include "cluster_core/rule_groups.h"
#include "cluster_core/verified_share.h"
#include "common/log.h"
#include "common/peer_set.h"
#include "common/peers_file.h"
#include "dataplane/collector.h"
#include "dataplane/verified_maps.h"

namespace dt {

class Dataplane;

struct ClusterConfig {
  std::vector<std::string> peers;  // tcp://host:port
  std::vector<std::string> hubs;   // tcp://host:port of hub frontends
  std::string listen;              // tcp://addr:port to bind ("" with hubs only)
  uint64_t period_ns = 200'000'000;
  uint64_t down_after_ns = 0;      // 0: 5 periods
  uint64_t report_max_age_ns = 0;  // 0: kReportMaxAgePeriods periods; kReportMaxAgeOff: any age
  std::string node_id;
  std::string curve_key_file;   // this node's key pair (agent keygen)
  std::string curve_peers_dir;  // allowlist: the peers' public keys
  std::string boot_file;        // this node's boot counter (cluster/boot_counter.h); "": the clock alone
  // Reporting scheme "owner" (docs/cluster-scale.md; full mesh only, and only while every
  // peer is up: else every source goes to every peer, as with false).
  bool owner_scheme = true;
  // Early reports of sources new to this host, at ticks this far apart (cluster_early.cpp;
  // full mesh only); 0: none.
  uint64_t early_report_ns = 0;
  // SYN cookies: how long a peer's verified source stays so here at most (--verified-ttl).
  uint64_t verified_ttl_ns = DT_DEFAULT_VERIFIED_TTL_NS;
  // SYN cookies: the peers whose verified sources are written here (--peer-verified).
  PeerSet peer_verified;
  // SYN cookies: a peer's verified sources in force here at once (--peer-verified-max),
  // all the peers' (--max-verified).
  VerifiedHoldLimits verified_hold;
};

class Cluster {
 public:
  ~Cluster();
  static std::unique_ptr<Cluster> create(const ClusterConfig &cfg, Dataplane &dp, std::string *err);

  // The socket to poll for incoming reports (a zmq socket handle for zmq_poll).
  void *poll_socket() const;
  // The active-source ring's fd: call on_ring_readable() when it is readable.
  int ring_fd() const { return collector_.poll_fd(); }
  void on_ring_readable() { collector_.drain(); }
  // Reads and applies every report waiting on the socket.
  void on_readable();  // each message timed as it is read
  // End of a period: collect what we served, publish it, check peer liveness.
  void on_period(uint64_t now_ns);
  // Early reports (cluster_early.cpp): when the next tick is due (UINT64_MAX: none), and
  // the tick: sources new to this host since the last one, reported now.
  uint64_t early_deadline() const { return node_.early_deadline(); }
  void on_early_tick(uint64_t now_ns);
  // The local rules by index (names travel in reports; peers may number rules
  // differently). Hits for rules that are not `throttle` here are not debited.
  void set_rules(const std::vector<std::string> &names, const std::vector<bool> &throttles) {
    rules_.set(names, throttles);
  }
  // The prefix levels in force here, as prefix bucket key.rule values (prefix_level_keys):
  // peers' hits for a level we do not have are not debited.
  void set_prefix_levels(std::set<uint32_t> levels) { rules_.prefix_levels = std::move(levels); }
  // The rules keyed by destination here (dest_rule_ids): peers' hits of group RULE::dst
  // debit our destination buckets of RULE only if RULE is one of them, and plain hits
  // of RULE (a peer that keys it by source) are not debited.
  void set_dest_rules(std::set<uint32_t> ids) { rules_.dest_rules = std::move(ids); }
  // Per local rule index, its burst in hits (rule_burst_hits): what a joiner's first debit
  // of a peer-reported source adds (cluster_core/join_guard.h).
  void set_rule_bursts(std::vector<uint64_t> burst_hits) { rules_.burst_hits = std::move(burst_hits); }
  // Query-socket tags: where this host's served tag hits come from each period,
  // and where the peers' tag hits go.
  void set_tag_hooks(std::function<std::vector<TagHit>()> collect,
                     std::function<void(const std::vector<TagHit> &, uint64_t now_ns)> debit);

  // Adaptive limits: reports carry our factors, peers' factors and every served hit
  // (ours and theirs, for the busiest-key measurement) go to `a` (may be nullptr).
  void set_adaptive(AdaptiveSet *a) {
    adaptive_ = a;
    node_.set_adaptive(a);
  }
  // Bans (docs/bans.md): each period this host's new, changed and lifted bans go to the
  // peers in a bans message of their own, and the peers' bans messages go to `b`.
  void set_bans(BanSync *b) { bans_ = b; }
  // Called when the tracker finds a peer up or down (docs/events.md peer_up, peer_down):
  // its node id, up or not, why ("silent", "link", "forgotten"; "" when up), and how long
  // it had been silent (s).
  using PeerEventHook = std::function<void(const std::string &node, bool up, const char *why, double silent_s)>;
  void set_peer_events(PeerEventHook hook) { peer_events_ = std::move(hook); }

  // One log line with the cluster's counters.
  void log_summary() const;
  // Writes the peers' state and the counters as JSON (for `agent stats`).
  std::string status_json(uint64_t now_ns) const;
  // The same as an aligned human-readable table.
  std::string status_text(uint64_t now_ns) const;

  // Membership (agent reload): connects to the endpoints of `peers` not connected yet,
  // disconnects from those no longer in it, resolves every peer's and hub's name again
  // for the exempt map, and forgets the removed peers (by the address their reports came
  // from) and the verified sources they wrote here (deleted as a reload of --peer-verified
  // deletes them: change->verified_withdrawn). With CurveZMQ the --curve-peers directory is
  // read again first (the keys of new peers, the allowlist); a new peer without a key
  // refuses the change (false, *err) and nothing changes; the report signing keys (node
  // id -> key) are replaced with the allowlist. Buckets are not touched.
  bool update_peers(const std::vector<std::string> &peers, PeersChange *change, std::string *err);
  // Every period: forgets removed peers whose last queued reports arrived after the change.
  void tick_membership(uint64_t now_ns);
  const std::vector<std::string> &peer_endpoints() const { return cfg_.peers; }
  // --peer-verified from now on (agent reload): the sources a peer no longer listed wrote
  // are deleted from the verified map (cluster_verified.cpp), unless a listed peer holds
  // them too or this host verified them since; how many were deleted.
  size_t set_peer_verified(const PeerSet &peers);
  const PeerSet &peer_verified() const { return verified_in_.peers(); }

  const ClusterCounters &counters() const { return counters_; }
  const PeerTracker &tracker() const { return node_.tracker(); }
  // "keys" with --curve-key, "insecure" without (only with --insecure-cluster): agent stats.
  const char *security() const { return cfg_.curve_key_file.empty() ? "insecure" : "keys"; }
  // Which peers report one source (agent explain): started by the daemon, fed here.
  SourceWatch &source_watch() { return watch_; }
  // What BanSync has to announce now, signed like reports (cluster_bans.cpp): every period,
  // and at once after the daemon made bans (escalation), so peers need not wait a period.
  // Only what changed goes out: a call with nothing new sends nothing.
  void publish_bans(uint64_t now_ns);

 private:
  Cluster(const ClusterConfig &cfg, Dataplane &dp);
  void handle_message(const void *data, size_t len, uint64_t now_ns);
  void note_received(const char *kind, size_t len);  // ClusterCounters::received_bytes_by_kind
  // A summing hub's aggregate (cluster_aggregates.cpp): checked, our own hits taken out,
  // debited if it comes from the active hub.
  void handle_aggregate(const void *data, size_t len, uint64_t now_ns);
  // Membership (cluster_membership.cpp).
  bool open_sockets(std::string *err);
  bool connect_peer(const std::string &endpoint, std::string *err);
  bool connect_hub(const std::string &frontend, std::string *err);
  void refresh_exempt();
  // At start: hits a previous agent on the same maps admitted but never reported go
  // out with the first report (logged; a failed walk is logged and skipped).
  void adopt_unreported();
  void note_sender(const std::string &node_id) { senders_[node_id] = sender_; }
  // The tracker's verdicts (cluster_peers.cpp).
  bool note_arrival(const ReportHeader &h, const Arrival &a, uint64_t now_ns);
  void log_refusal(const ReportHeader &h, const Arrival &a, uint64_t now_ns);
  void log_downs(const std::vector<LivenessChange> &downs, uint64_t now_ns);
  // Forgets the removed peers that reported since; how many of their verified sources it deleted.
  size_t forget_removed();
  // drops (VerifiedIntake) out of the verified map, at now_ns (CLOCK_MONOTONIC); how many went.
  size_t withdraw_verified(const std::vector<VerifiedDrop> &drops, uint64_t now_ns);
  // CurveZMQ: a server that refuses our key ends the connection for good (ZeroMQ does
  // not retry after a handshake error); the refusal is logged and the connection made
  // again every kRetryRefusedNs, so a key allowed later (its reload) lets us in.
  void start_monitors();
  void poll_monitor(zmq::socket_t &mon, bool pub, uint64_t now_ns);
  void retry_refused(uint64_t now_ns);
  // Link liveness (cluster_links.cpp).
  void map_peer_links();
  void map_link_senders();
  bool on_link_event(bool pub, uint16_t event, const std::string &endpoint, uint64_t now_ns);
  // With keys: the report signing key and who may sign for which node id, from `keys`.
  bool load_signing(const CurveKeys &keys, std::string *err);
  bool check_signature(const void *data, size_t len, uint64_t now_ns);
  void reject(const std::string &reason, size_t len, const std::string &detail, LogLimiter &log, uint64_t now_ns);
  bool decode_message(const void *data, size_t len, uint64_t now_ns, ReportHeader *h, ReportBody *body);
  bool is_own_echo(const ReportHeader &h, uint64_t now_ns);
  void skip_stale(const ReportHeader &h, uint64_t hits, const Arrival &a, uint64_t now_ns);
  // What the receiver (cluster_core/receiver.h) made of a fresh message, acted on (cluster_owner.cpp
  // for the owner scheme's parts): counted, tag hits, debits, relays.
  void apply_received(const ReportHeader &h, const ReportBody &body, const Received &r, uint64_t now_ns);
  void apply_tags(const ReportBody &body, uint64_t now_ns);
  void apply_charges(const Received &r, uint64_t now_ns);
  // At an early tick: our buckets as the shared sources' early reports read them
  // (cluster_early.cpp, cluster_core/shared_early.h).
  BucketLookup shared_lookup();
  ReportHeader message_header(uint64_t epoch) const;  // now, from this node
  // What the sender (cluster_core/report_sender.h) sent, in our counters.
  void note_sent();
  bool publish_out(const Outgoing &o);  // publish() and ClusterCounters by its kind
  bool addressed_to_us(const ReportHeader &h, const ReportBody &body, const std::string *envelope, size_t len,
                       uint64_t now_ns);
  void relay_directed(const ReportHeader &h, const Received &r);
  bool relay_member(const std::string &node_id) const;
  void log_relayed(const ReportHeader &h, const Received &r, uint64_t now_ns);
  void debit(const std::string &from, const std::vector<dt_debit> &debits, uint64_t now_ns);
  bool publish(const std::string &msg);
  // Peers' bans in (cluster_bans.cpp).
  void apply_bans(const ReportHeader &h, const ReportBody &body, const Arrival &a, uint64_t now_ns);
  uint64_t peer_clock_ms(const std::string &node_id, uint64_t now_ns) const;
  // Sources verified by SYN cookies (cluster_verified.cpp, cluster_core/verified_share.h).
  void publish_verified(uint64_t now_ns);
  void apply_verified(const ReportHeader &h, const ReportBody &body, const Arrival &a, uint64_t now_ns);
  void write_learned(const std::string &from, const std::vector<VerifiedWrite> &writes, uint64_t now_ns);

  ClusterConfig cfg_;
  Dataplane &dp_;
  std::unique_ptr<zmq::context_t> ctx_;
  std::unique_ptr<zmq::socket_t> pub_, sub_;
  CurveAuthPtr auth_;                                 // destroyed before ctx_ (declared after it)
  CurveKeys curve_;                                   // with --curve-key: this node's keys and the allowlist
  bool signed_ = false;                               // with --curve-key: we sign, and require signatures
  SigningKey signing_;                                // ... this node's report signing key
  ReportVerifier verifier_;                           // ... the peers' (and our) signing keys by node id
  LogLimiter auth_log_{10'000'000'000ull, 5};         // rejected signatures: forged at will
  std::vector<dt_exempt_key> exempt_;                 // in the cluster_exempt map (sorted: cluster_exempt.h)
  std::string sender_;                                // Peer-Address of the message being handled
  std::map<std::string, std::string> senders_;        // node id -> the address its reports come from (tracked ones)
  std::vector<dt_key> removed_addrs_;                 // of peers removed by the last change
  uint64_t forget_until_ns_ = 0;                      // ... forgotten if heard until then
  std::unique_ptr<zmq::socket_t> pub_mon_, sub_mon_;  // handshake events (with CurveZMQ)
  std::map<std::pair<bool, std::string>, uint64_t> retry_;  // (pub?, endpoint) -> when to connect again
  LogLimiter refused_log_{10'000'000'000ull, 3};
  std::map<std::string, std::string> link_nodes_;      // link liveness: SUB endpoint -> its peer's node id
  LinkSenders link_senders_;                           // with keys: a connection's address -> its member
  std::map<std::string, std::string> connected_keys_;  // with keys: SUB endpoint -> the server key it uses
  Collector collector_;
  LocalRules rules_;  // the rules peers' hits are charged to (cluster_core/rule_groups.h)
  // The protocol's state and decisions (cluster_core/cluster_node.h): the tracker, the planner
  // (owners, cadence), the joiner's guard, the receiver, the early reports, and once open our
  // message streams (signed, kept for resends) and the sender.
  ClusterNode node_;
  uint64_t boot_id_ = 0;
  ClusterCounters counters_;
  std::function<std::vector<TagHit>()> collect_tags_;
  std::function<void(const std::vector<TagHit> &, uint64_t)> debit_tags_;
  LogLimiter reject_log_{10'000'000'000ull, 5};
  LogLimiter stale_log_{10'000'000'000ull, 5};
  LogLimiter peer_log_{10'000'000'000ull, 10};  // peer up, down, restarted, forgotten
  PeerEventHook peer_events_;
  AdaptiveSet *adaptive_ = nullptr;
  BanSync *bans_ = nullptr;
  SourceWatch watch_;
  LogLimiter hub_log_{10'000'000'000ull, 5};
  std::unique_ptr<VerifiedRing> verified_ring_;  // what our SYN cookies verified (to tell)
  VerifiedIntake verified_in_;                   // what we take of the peers'
  LogLimiter verified_log_{10'000'000'000ull, 5};
};

// The report age the tracker tolerates for `cfg` (0: any).
uint64_t report_max_age_ns(const ClusterConfig &cfg);
// Liveness from the link (docs/cluster-scale.md "Cadence"): with CurveZMQ in a full mesh,
// every peer's link to us is authenticated (its server key is its node's), and ZMTP
// heartbeats close a silent one within 2.5 s: a peer is down at once when our link to it
// drops, so its signed heartbeats are needed only for the report sequence (every 20 s).
// Not with hubs (an agent has no link of its own to each peer) nor --insecure-cluster.
bool link_liveness(const ClusterConfig &cfg);
// The timings of `cfg` (cluster_core/cluster_times.h: the heartbeat, the cadence, when a
// silent peer or hub is down), and each of them for `cfg`.
ClusterTimes cluster_times(const ClusterConfig &cfg);
uint64_t heartbeat_ns(const ClusterConfig &cfg);
CadenceOptions cadence_options(const ClusterConfig &cfg);
uint64_t peer_down_after_ns(const ClusterConfig &cfg);
uint64_t aggregate_down_after_ns(const ClusterConfig &cfg);
// What `cfg` comes down to for the cluster core (cluster_core/cluster_node.h: node_options).
// A restart that took over pinned maps keeps its buckets: only a new agent's start empty.
// Authenticated only when every report's signature is verified before the tracker (with keys).
NodeSettings node_settings(const ClusterConfig &cfg, bool took_over = false);
// The tracker's options for `cfg` (cluster_core/cluster_node.h: tracker_options).
TrackerOptions tracker_options(const ClusterConfig &cfg);
// A decoded message's kind for ClusterCounters::received_bytes_by_kind.
const char *message_kind(const ReportBody &body);

// Resolves the host of every tcp://host:port endpoint to addresses (for the exempt
// map). Unresolvable hosts are reported in *err and skipped.
std::vector<dt_key> resolve_endpoint_hosts(const std::vector<std::string> &endpoints, std::string *err);

}  // namespace dt
