// resend_buffer.h - the messages this agent published lately, kept so that a peer that
// missed some can ask for them again (resend requests, peer_protocol.h).
//
// Kept for keep_ns (the report max age: a message older than that would be stale where
// it arrives) and at most max_bytes in all, oldest dropped first. A message is sent
// again at most once per min_gap_ns however many peers ask (one publish reaches them
// all), so requests cannot make this agent publish more than it kept per period.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cluster_core/peer_protocol.h"

namespace dt {

constexpr size_t kResendBufferBytes = 16u << 20;
constexpr size_t kMaxResentPerPeriod = 2 * kMaxResendSeqs;  // two full requests' worth, whoever asks
constexpr size_t kMaxResentPerPeer = kMaxResendSeqs / 4;    // for one asking node, whatever it asks

// What peers' resend requests may make us publish again in one period: a request is small,
// what it asks for is not (up to kMaxResendSeqs messages of 60 KiB). At most per_peer
// messages for one asking node and total for all; the messages beyond are not sent this
// period (a peer asks again next period while they are missing and fresh).
class ResendBudget {
 public:
  explicit ResendBudget(size_t per_peer = kMaxResentPerPeer, size_t total = kMaxResentPerPeriod)
      : per_peer_(per_peer), total_(total) {}
  // How many messages node `from` may still have this period. The caller bounds the node
  // ids (the tracker accepted `from`).
  size_t left(const std::string &from) const;
  // `from` had n messages (n <= left(from)).
  void spend(const std::string &from, size_t n);
  void new_period() {
    by_peer_.clear();
    used_ = 0;
  }

 private:
  size_t per_peer_, total_, used_ = 0;
  std::map<std::string, size_t> by_peer_;
};

class ResendBuffer {
 public:
  explicit ResendBuffer(uint64_t keep_ns, size_t max_bytes = kResendBufferBytes)
      : keep_ns_(keep_ns), max_bytes_(max_bytes) {}

  // Keeps message `seq` (seqs kept in ascending order), published at now_ns.
  void keep(uint64_t seq, std::shared_ptr<const std::string> msg, uint64_t now_ns);

  // The kept messages `r` asks for, if it names our boot: each one not sent again in
  // the last min_gap_ns, in seq order; at most max_count of them, the newest (the likelier
  // to be fresh where they arrive), *over counting those left for the cap.
  std::vector<std::shared_ptr<const std::string>> take(const ResendRequest &r, uint64_t boot_id, uint64_t now_ns,
                                                       uint64_t min_gap_ns, size_t max_count = SIZE_MAX,
                                                       size_t *over = nullptr);

  size_t size() const { return kept_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  struct Kept {
    uint64_t seq;
    std::shared_ptr<const std::string> msg;
    uint64_t sent_ns;
    uint64_t resent_ns;  // 0: never
  };
  void expire(uint64_t now_ns);

  uint64_t keep_ns_;
  size_t max_bytes_;
  std::deque<Kept> kept_;
  size_t bytes_ = 0;
};

}  // namespace dt
