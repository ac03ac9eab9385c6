// cluster_membership.cpp - the cluster's sockets and who is in it: connecting to peers and
// hubs (with CurveZMQ or not), the cluster_exempt map of their TCP ports, peers added and removed
// by a reload.
#include <bpf/bpf.h>
#include <netdb.h>
#include <zmq.h>

#include <algorithm>
#include <cstring>
#include <zmq.hpp>

#include "cluster/cluster.h"
#include "cluster/cluster_exempt.h"
#include "common/address.h"
#include "common/clock.h"
#include "common/endpoint.h"
#include "dataplane/dataplane.h"
#include "dataplane/policy.h"

namespace dt {
namespace {

constexpr uint64_t kRetryRefusedNs = 3'000'000'000ull;  // a peer or hub that refused our key
constexpr int kHandshakeFailed =
    ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;

// A dead link is noticed and replaced within seconds: ZMTP heartbeats (a ping every second)
// close a connection silent for 3 s (its queued messages go with it: a partition's backlog
// is dropped, not delivered late), and a connection attempt gives up after 1 s instead of
// the kernel's two minutes of SYN retries, so a healed partition reconnects within about a
// second. A connection that has not finished its ZMTP (and CURVE) handshake within 3 s is
// closed (ZeroMQ's default: 30 s), so a stranger's idle or stalled connections to our
// --listen port hold a descriptor for seconds, not half a minute.
// With link liveness (cluster.h) our links to the peers are what says they are alive: the
// SUB socket closes a link that sent nothing in the 1.2 s after a ping, so a partition is a
// peer down within 2.2 s plus a period, as the signed heartbeats did before
// (cluster_links.cpp). Pings every 400 ms with a 1.8 s timeout gave the same bound at 2.5
// times the pings: each ping and pong is a CurveZMQ frame through ZeroMQ's I/O thread and
// the kernel, and at 40 agents they were most of an idle agent's CPU, which a starved first
// second paid for (docs/cluster-scale.md "First contact").
constexpr int kPingMs = 1000;
constexpr int kTimeoutMs = 3000;
constexpr int kLinkTimeoutMs = 1200;

void set_link_options(zmq::socket_t &s, bool liveness = false) {
  s.set(zmq::sockopt::heartbeat_ivl, kPingMs);
  s.set(zmq::sockopt::heartbeat_timeout, liveness ? kLinkTimeoutMs : kTimeoutMs);
  s.set(zmq::sockopt::connect_timeout, 1000);
  s.set(zmq::sockopt::handshake_ivl, 3000);
}

bool same_key(const dt_key &a, const dt_key &b) { return memcmp(&a, &b, sizeof a) == 0; }

bool has_key(const std::vector<dt_key> &keys, const dt_key &k) {
  return std::any_of(keys.begin(), keys.end(), [&](const dt_key &x) { return same_key(x, k); });
}

}  // namespace

std::vector<dt_key> resolve_endpoint_hosts(const std::vector<std::string> &endpoints, std::string *err) {
  std::vector<dt_key> keys;
  for (const auto &ep : endpoints) {
    HostPort hp;
    if (!parse_host_port(ep, {.tcp_scheme = true}, &hp)) continue;
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    if (int rc = getaddrinfo(hp.host.c_str(), nullptr, &hints, &res); rc != 0) {
      *err += (err->empty() ? "" : "; ") + std::string("cannot resolve ") + hp.host + ": " + gai_strerror(rc);
      continue;
    }
    for (addrinfo *ai = res; ai; ai = ai->ai_next) {
      dt_key k{};
      if (ai->ai_family == AF_INET) {
        k.addr[10] = k.addr[11] = 0xff;
        memcpy(&k.addr[12], &reinterpret_cast<sockaddr_in *>(ai->ai_addr)->sin_addr, 4);
      } else if (ai->ai_family == AF_INET6) {
        memcpy(k.addr, &reinterpret_cast<sockaddr_in6 *>(ai->ai_addr)->sin6_addr, 16);
      } else {
        continue;
      }
      keys.push_back(k);
    }
    freeaddrinfo(res);
  }
  return keys;
}

// The PUB socket binds --listen (a CURVE server with --curve-key), the SUB socket
// connects to every peer, and both connect to every hub (CURVE clients of it).
bool Cluster::open_sockets(std::string *err) {
  try {
    ctx_ = std::make_unique<zmq::context_t>(1);
    pub_ = std::make_unique<zmq::socket_t>(*ctx_, zmq::socket_type::pub);
    sub_ = std::make_unique<zmq::socket_t>(*ctx_, zmq::socket_type::sub);
    pub_->set(zmq::sockopt::linger, 0);
    sub_->set(zmq::sockopt::linger, 0);
    set_link_options(*pub_);
    set_link_options(*sub_, link_liveness(cfg_));
    // A message larger than the decoder accepts is refused by ZeroMQ itself, before it is
    // read into memory: ZeroMQ drops the whole connection it came on (its sender
    // reconnects), and nothing of it is counted here.
    sub_->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(kMaxAcceptedBytes));
    if (cfg_.hubs.empty()) {
      // Every message but those directed to other owners (peer_protocol.h): ZeroMQ's
      // publisher filters, so a directed message reaches its recipient alone.
      sub_->set(zmq::sockopt::subscribe, kReportMagicPrefix);
      sub_->set(zmq::sockopt::subscribe,
                std::string(kDirectedMagic) + static_cast<char>(cfg_.node_id.size()) + cfg_.node_id);
    } else {
      sub_->set(zmq::sockopt::subscribe, "");  // a hub may add messages of its own
    }
    // What reaches the PUB socket is subscriptions (one byte here): a stranger's large ones
    // drop its connection instead of being buffered.
    pub_->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(64 * 1024));
    if (!cfg_.curve_key_file.empty()) {
      if (!load_curve_keys(cfg_.curve_key_file, cfg_.curve_peers_dir, &curve_, err) || !load_signing(curve_, err))
        return false;
      auth_ = start_curve_auth(*ctx_, curve_.peers, "a subscriber");
      make_curve_server(*pub_, curve_);
      DT_INFO("CurveZMQ on: %zu peer keys allowed; reports signed, and checked against %zu node keys",
              curve_.peers.size(), verifier_.size());
      start_monitors();
    } else {
      DT_WARN(
          "insecure cluster (--insecure-cluster): peer traffic is unauthenticated and unencrypted: "
          "anyone who can reach %s can send or read reports; use --curve-key and --curve-peers instead",
          cfg_.listen.empty() ? "the hubs" : cfg_.listen.c_str());
    }
    if (!cfg_.listen.empty()) {
      try {
        pub_->bind(cfg_.listen);
      } catch (const zmq::error_t &e) {
        *err = "cannot listen on " + cfg_.listen + ": " + e.what();
        return false;
      }
    }
    for (const auto &p : cfg_.peers)
      if (!connect_peer(p, err)) return false;
    for (const auto &h : cfg_.hubs)
      if (!connect_hub(h, err)) return false;
    map_peer_links();
  } catch (const zmq::error_t &e) {
    *err = std::string("ZeroMQ: ") + e.what();
    return false;
  }
  return true;
}

// Our signing key (derived from the CURVE secret) and the node keys of keys.peers; nothing
// changes unless both load.
bool Cluster::load_signing(const CurveKeys &keys, std::string *err) {
  if (keys.node_id != cfg_.node_id) {
    *err = "node id " + cfg_.node_id + " but " + cfg_.curve_key_file + " speaks for node " + keys.node_id;
    return false;
  }
  SigningKey key;
  ReportVerifier verifier;
  if (!derive_signing_key(keys.secret_key, &key, err) || !verifier.load(keys.peers, cfg_.node_id, key, err))
    return false;
  signing_ = key;
  verifier_ = std::move(verifier);
  signed_ = true;
  return true;
}

bool Cluster::connect_peer(const std::string &endpoint, std::string *err) {
  if (cfg_.curve_key_file.empty()) {
    sub_->connect(endpoint);
    return true;
  }
  if (!connect_curve_client(*sub_, endpoint, endpoint, curve_, err)) return false;
  // ZeroMQ keeps this server key for the connection and its reconnections: a member's
  // link proves its messages only while its .pub still has that key (map_link_senders).
  if (const CurvePeer *p = find_curve_peer(curve_.peers, endpoint)) connected_keys_[endpoint] = p->public_key;
  return true;
}

// Agents publish to a hub's frontend and subscribe to its backend; with CurveZMQ both
// are the hub's (one key, named by the frontend in --curve-peers).
bool Cluster::connect_hub(const std::string &frontend, std::string *err) {
  std::string backend;
  if (!hub_backend_endpoint(frontend, &backend, err)) return false;
  if (cfg_.curve_key_file.empty()) {
    pub_->connect(frontend);
    sub_->connect(backend);
    return true;
  }
  if (!check_curve_endpoints(curve_, {}, {frontend}, err)) return false;
  return connect_curve_client(*pub_, frontend, frontend, curve_, err) &&
         connect_curve_client(*sub_, backend, frontend, curve_, err);
}

// Resolves every peer's and hub's host again and makes the cluster_exempt map hold exactly
// the cluster's own TCP ports at those addresses (cluster_exempt_keys; a name that no
// longer resolves loses its exemption, with a warning). A change is logged; entries a
// previous agent left in the pinned map are replaced at start.
void Cluster::refresh_exempt() {
  std::string resolve_err;
  std::vector<dt_exempt_key> next = cluster_exempt_keys(cfg_.peers, cfg_.hubs, cfg_.listen, &resolve_err);
  if (!resolve_err.empty()) DT_WARN("%s (that host's cluster traffic may be throttled)", resolve_err.c_str());
  std::string map_err;
  const std::vector<dt_exempt_key> before =
      install_cluster_exempt(dp_.cluster_exempt_fd(), dp_.cluster_ports_fd(), next, &map_err);
  if (!map_err.empty()) DT_WARN("the cluster's exemption: %s (that traffic may be throttled)", map_err.c_str());
  if (const std::string change = describe_exempt_change(before, next); !change.empty()) DT_INFO("%s", change.c_str());
  exempt_ = std::move(next);
}

bool Cluster::update_peers(const std::vector<std::string> &peers, PeersChange *change, std::string *err) {
  PeersChange c = diff_peers(cfg_.peers, peers);
  if (!cfg_.curve_key_file.empty()) {  // every key first: a refused change changes nothing
    CurveKeys keys;
    if (!load_curve_keys(cfg_.curve_key_file, cfg_.curve_peers_dir, &keys, err)) return false;
    if (!check_curve_endpoints(keys, c.added, {}, err) || !load_signing(keys, err)) return false;
    curve_ = std::move(keys);
    update_curve_allowed(auth_.get(), curve_.peers);
    DT_INFO("read %s again: %zu peer keys allowed, reports checked against %zu node keys", curve_.peers_dir.c_str(),
            curve_.peers.size(), verifier_.size());
  }
  try {
    for (const auto &ep : c.removed) {
      sub_->disconnect(ep);
      connected_keys_.erase(ep);
    }
    for (const auto &ep : c.added)
      if (!connect_peer(ep, err)) return false;  // cannot happen: the keys were checked
  } catch (const zmq::error_t &e) {
    *err = std::string("ZeroMQ: ") + e.what();
    return false;
  }
  cfg_.peers = peers;
  node_.planner().set_configured_peers(peers.size());
  map_peer_links();
  node_.tracker().set_max_peers(tracker_options(cfg_).max_peers);
  // The removed peers' addresses, unless a remaining peer or hub has them too.
  std::string ignored;
  const std::vector<dt_key> gone = resolve_endpoint_hosts(c.removed, &ignored);
  refresh_exempt();
  if (int rc = update_config_flags(dp_.config_fd(), exempt_.empty() ? 0 : DT_CFG_EXEMPT,
                                   exempt_.empty() ? DT_CFG_EXEMPT : 0);
      rc != 0)
    DT_WARN("cannot switch the peers' exemption: %s", strerror(-rc));
  removed_addrs_.clear();
  for (const auto &k : gone)
    if (!exempts_address(exempt_, k)) removed_addrs_.push_back(k);
  forget_until_ns_ = mono_now_ns() + 2 * (cfg_.down_after_ns ? cfg_.down_after_ns : 5 * cfg_.period_ns);
  c.verified_withdrawn = forget_removed();
  *change = std::move(c);
  return true;
}

// Removed peers leave the tracker (stats, metrics): those whose reports came from a
// removed peer's address. The verified sources they wrote here go too, whatever
// --peer-verified says: a peer no longer in the cluster vouches for no one.
size_t Cluster::forget_removed() {
  std::vector<std::string> gone;
  for (auto it = senders_.begin(); it != senders_.end();) {
    dt_key k{};
    if (key_from_string(it->second, &k) && has_key(removed_addrs_, k)) {
      if (node_.tracker().peers().count(it->first)) DT_INFO("peer %s removed: forgotten", it->first.c_str());
      node_.tracker().forget(it->first);
      gone.push_back(it->first);
      it = senders_.erase(it);
    } else {
      ++it;
    }
  }
  if (gone.empty()) return 0;
  const uint64_t now_ns = mono_now_ns();
  return withdraw_verified(verified_in_.forget_peers(gone, now_ns), now_ns);
}

void Cluster::tick_membership(uint64_t now_ns) {
  if (pub_mon_) poll_monitor(*pub_mon_, true, now_ns);
  if (sub_mon_) poll_monitor(*sub_mon_, false, now_ns);
  if (!retry_.empty()) retry_refused(now_ns);
  if (removed_addrs_.empty()) return;
  if (now_ns > forget_until_ns_) {
    removed_addrs_.clear();
    return;
  }
  forget_removed();
}

// With link liveness also: subscribers that joined our PUB socket, our SUB socket's links
// that dropped (cluster_links.cpp).
void Cluster::start_monitors() {
  int n = 0;
  const bool links = link_liveness(cfg_);
  for (auto *s : {&pub_, &sub_}) {
    const std::string addr = "inproc://dthrottle-monitor-" + std::to_string(n++);
    const int link_events = !links ? 0 : s == &pub_ ? ZMQ_EVENT_HANDSHAKE_SUCCEEDED : ZMQ_EVENT_DISCONNECTED;
    if (zmq_socket_monitor((*s)->handle(), addr.c_str(), kHandshakeFailed | link_events) != 0) {
      DT_WARN("cannot watch the CurveZMQ handshakes: %s (a refused connection is not retried)", zmq_strerror(errno));
      return;
    }
    auto mon = std::make_unique<zmq::socket_t>(*ctx_, zmq::socket_type::pair);
    mon->set(zmq::sockopt::linger, 0);
    mon->connect(addr);
    (s == &pub_ ? pub_mon_ : sub_mon_) = std::move(mon);
  }
}

// Monitor events: a frame with the event (16 bits) and its value (32 bits), then one with
// the endpoint. Only connections we make are retried (not subscribers refused on --listen).
void Cluster::poll_monitor(zmq::socket_t &mon, bool pub, uint64_t now_ns) {
  for (int i = 0; i < 100; i++) {  // bounded
    zmq::message_t ev, ep;
    try {
      if (!mon.recv(ev, zmq::recv_flags::dontwait)) return;
      if (!ev.more() || !mon.recv(ep, zmq::recv_flags::dontwait)) continue;
    } catch (const zmq::error_t &) {
      return;
    }
    if (ev.size() < 6) continue;
    uint16_t event = 0;
    uint32_t value = 0;
    memcpy(&event, ev.data(), 2);
    memcpy(&value, static_cast<const char *>(ev.data()) + 2, 4);
    const std::string endpoint = ep.to_string();
    if (!(event & kHandshakeFailed)) {
      on_link_event(pub, event, endpoint, now_ns);
      continue;
    }
    std::string what, err;
    for (const auto &h : cfg_.hubs) {
      std::string backend;
      if (pub ? endpoint == h : hub_backend_endpoint(h, &backend, &err) && endpoint == backend)
        what = "hub " + h.substr(6);
    }
    if (!pub && std::find(cfg_.peers.begin(), cfg_.peers.end(), endpoint) != cfg_.peers.end())
      what = "peer " + endpoint.substr(6);
    if (what.empty()) continue;
    uint64_t suppressed = 0;
    if (refused_log_.allow(now_ns, &suppressed))
      DT_WARN("%s refused our CurveZMQ handshake (%s%s): %s; trying again every %.0f s", what.c_str(),
              event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ? "authentication failed, status " : "protocol error",
              event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ? std::to_string(value).c_str() : "",
              event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ? "add this node's .pub file to its --curve-peers and reload it"
                                                       : "is its key the one in our --curve-peers?",
              kRetryRefusedNs / 1e9);
    retry_.try_emplace({pub, endpoint}, now_ns + kRetryRefusedNs);
  }
}

// A refused connection made again, with the keys in force now.
void Cluster::retry_refused(uint64_t now_ns) {
  for (auto it = retry_.begin(); it != retry_.end();) {
    if (it->second > now_ns) {
      ++it;
      continue;
    }
    const auto [pub, endpoint] = it->first;
    it = retry_.erase(it);
    zmq::socket_t &s = pub ? *pub_ : *sub_;
    std::string key_endpoint = endpoint, err;
    for (const auto &h : cfg_.hubs) {
      std::string backend;
      if (hub_backend_endpoint(h, &backend, &err) && (endpoint == h || endpoint == backend)) key_endpoint = h;
    }
    const bool still_ours = key_endpoint != endpoint || pub ||
                            std::find(cfg_.peers.begin(), cfg_.peers.end(), endpoint) != cfg_.peers.end();
    if (!still_ours) continue;  // removed by a reload meanwhile
    try {
      try {
        s.disconnect(endpoint);
      } catch (const zmq::error_t &) {
        // the refused connection is gone already
      }
      if (!connect_curve_client(s, endpoint, key_endpoint, curve_, &err))
        DT_WARN("cannot connect to %s again: %s", endpoint.c_str(), err.c_str());
    } catch (const zmq::error_t &e) {
      DT_WARN("cannot connect to %s again: %s", endpoint.c_str(), e.what());
    }
  }
}

}  // namespace dt
