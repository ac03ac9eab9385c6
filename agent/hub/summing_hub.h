// summing_hub.h - `agent hub --aggregate`'s loop: reports in on the XSUB port, checked
// (with keys: each against the key of the node it names) and summed per period
// (hub/aggregator.h); every period one aggregate out on the XPUB port, signed with the
// hub's role = hub key (cluster_core/aggregate_protocol.h). Messages it does not sum pass
// unchanged: resend requests, reports with adaptive factors, any message with a flag it
// does not know (a bans section, a relayed report) or of another type (a directed
// message): never summed, never altered; the agents check their signatures end to end.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "cluster/report_signing.h"
#include "cluster/zmq_fwd.h"
#include "hub/hub_core.h"

namespace dt {

struct SummingHubConfig {
  std::string hub_id;  // the node id its aggregates carry (its key's, with keys)
  uint64_t period_ns = 200'000'000;
  bool keys = false;   // sign the aggregates, verify the reports
  SigningKey signing;  // with keys: the hub's (role = hub)
};

// The report signing keys, replaced on SIGHUP (another thread) and read by the loop.
class SharedVerifier {
 public:
  void set(std::shared_ptr<const ReportVerifier> v) {
    std::lock_guard<std::mutex> lock(mu_);
    v_ = std::move(v);
  }
  std::shared_ptr<const ReportVerifier> get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return v_;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const ReportVerifier> v_;
};

// One log line with the counters (every minute while it runs, and at the end).
void log_summing_hub(const SummingHubCounters &c);

// Runs until a message arrives on `control` (the caller's "TERMINATE"); the counters at
// the end in *out.
void run_summing_hub(zmq::socket_t &front, zmq::socket_t &back, zmq::socket_t &control, const SummingHubConfig &cfg,
                     const SharedVerifier &verifier, SummingHubCounters *out);

}  // namespace dt
