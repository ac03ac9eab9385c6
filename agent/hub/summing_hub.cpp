// summing_hub.cpp - the loop of a summing hub: receive, check, sum; every period, send.
#include "hub/summing_hub.h"

#include <sys/random.h>

#include <chrono>
#include <zmq.hpp>

#include "common/clock.h"
#include "common/log.h"

namespace dt {
namespace {

uint64_t mono_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

uint64_t random_boot_id() {
  uint64_t id = 0;
  if (getrandom(&id, sizeof id, 0) != sizeof id) id = mono_ns();
  return id;
}

// The loop's side of a summing hub: ZeroMQ and signatures; what a message does and the
// period's aggregate are the hub's core (hub_core.h), as in the simulator.
class SummingHub {
 public:
  SummingHub(zmq::socket_t &back, const SummingHubConfig &cfg, const SharedVerifier &verifier)
      : back_(back), cfg_(cfg), verifier_(verifier), core_(cfg.hub_id, random_boot_id()) {}
  void on_message(const zmq::message_t &msg, uint64_t now_ns);
  void send_period();
  const SummingHubCounters &counters() const { return core_.counters(); }

 private:
  bool accepted(const void *data, size_t len, uint64_t now_ns);
  void send(const void *data, size_t len);

  zmq::socket_t &back_;
  const SummingHubConfig &cfg_;
  const SharedVerifier &verifier_;
  HubCore core_;
  LogLimiter log_{10'000'000'000ull, 5};
};

void SummingHub::send(const void *data, size_t len) {
  try {
    back_.send(zmq::const_buffer(data, len), zmq::send_flags::dontwait);
  } catch (const zmq::error_t &e) {
    DT_WARN("hub: sending to the agents failed: %s", e.what());
  }
}

// With keys: signed by the key of the node it names (as an agent checks it).
bool SummingHub::accepted(const void *data, size_t len, uint64_t now_ns) {
  if (!cfg_.keys) return true;
  const auto v = verifier_.get();
  const VerifyResult r = v->verify(data, len);
  if (r.check == SignatureCheck::Ok) return true;
  log_limited(log_, LogLevel::Warn, now_ns, "hub: dropped a message of %zu bytes from node '%s': %s", len,
              r.node_id.c_str(),
              r.check == SignatureCheck::Malformed ? decode_error_name(r.malformed) : signature_check_name(r.check));
  return false;
}

void SummingHub::on_message(const zmq::message_t &msg, uint64_t now_ns) {
  std::string why;
  const auto check = [&] { return accepted(msg.data(), msg.size(), now_ns); };
  if (core_.on_message(msg.data(), msg.size(), check, &why) == HubCore::Outcome::Relay)
    return send(msg.data(), msg.size());
  if (why.empty()) return;
  std::string node = "?";
  uint8_t flags = 0;
  peek_sender(msg.data(), msg.size(), &node, &flags);
  log_limited(log_, LogLevel::Warn, now_ns, "hub: dropped a report from node '%s': %s", node.c_str(), why.c_str());
}

// One aggregate, even an empty one: the agents judge a hub's liveness by them.
void SummingHub::send_period() {
  const size_t sig = cfg_.keys ? kSignatureBytes : 0;
  for (auto &m : core_.period(unix_now_ms(), kMaxMessageBytes - sig, sig)) {
    if (cfg_.keys) sign_message(m, cfg_.signing);
    send(m.data(), m.size());
  }
}

constexpr uint64_t kLogEveryNs = 60'000'000'000ull;

}  // namespace

void log_summing_hub(const SummingHubCounters &c) {
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  DT_INFO(
      "hub: received %llu messages: summed %llu, relayed %llu, duplicates %llu, rejected %llu; sent %llu "
      "aggregates (%llu messages, %llu bytes)",
      u(c.received), u(c.summed), u(c.relayed), u(c.duplicates), u(c.rejected), u(c.aggregates),
      u(c.aggregate_messages), u(c.aggregate_bytes));
}

void run_summing_hub(zmq::socket_t &front, zmq::socket_t &back, zmq::socket_t &control, const SummingHubConfig &cfg,
                     const SharedVerifier &verifier, SummingHubCounters *out) {
  SummingHub hub(back, cfg, verifier);
  const uint8_t subscribe_all = 1;  // XSUB: a subscription to every message
  front.send(zmq::const_buffer(&subscribe_all, 1), zmq::send_flags::none);
  zmq::pollitem_t items[] = {
      {front.handle(), 0, ZMQ_POLLIN, 0}, {back.handle(), 0, ZMQ_POLLIN, 0}, {control.handle(), 0, ZMQ_POLLIN, 0}};
  uint64_t next_ns = mono_ns() + cfg.period_ns, next_log_ns = mono_ns() + kLogEveryNs;
  for (;;) {
    const uint64_t now = mono_ns();
    const long wait_ms = next_ns > now ? static_cast<long>((next_ns - now) / 1000000) + 1 : 0;
    zmq::poll(items, 3, std::chrono::milliseconds(wait_ms));
    if (items[2].revents & ZMQ_POLLIN) break;
    zmq::message_t msg;
    while ((items[1].revents & ZMQ_POLLIN) && back.recv(msg, zmq::recv_flags::dontwait)) {
    }  // the agents' subscriptions: everything goes to everyone
    for (int i = 0; i < 10000 && (items[0].revents & ZMQ_POLLIN); i++) {  // bounded: the period must go out
      if (!front.recv(msg, zmq::recv_flags::dontwait)) break;
      if (msg.more()) continue;  // agents never send multipart
      hub.on_message(msg, mono_ns());
    }
    if (mono_ns() >= next_ns) {
      hub.send_period();
      next_ns += cfg.period_ns;
      if (next_ns < mono_ns()) next_ns = mono_ns() + cfg.period_ns;  // fell behind: do not burst
    }
    if (mono_ns() >= next_log_ns) {
      log_summing_hub(hub.counters());
      next_log_ns += kLogEveryNs;
    }
  }
  *out = hub.counters();
}

}  // namespace dt
