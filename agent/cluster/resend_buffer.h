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
#include <memory>
#include <string>
#include <vector>

#include "cluster/peer_protocol.h"

namespace dt {

constexpr size_t kResendBufferBytes = 16u << 20;

class ResendBuffer {
 public:
  explicit ResendBuffer(uint64_t keep_ns, size_t max_bytes = kResendBufferBytes)
      : keep_ns_(keep_ns), max_bytes_(max_bytes) {}

  // Keeps message `seq` (seqs kept in ascending order), published at now_ns.
  void keep(uint64_t seq, std::shared_ptr<const std::string> msg, uint64_t now_ns);

  // The kept messages `r` asks for, if it names our boot: each one not sent again in
  // the last min_gap_ns, in seq order.
  std::vector<std::shared_ptr<const std::string>> take(const ResendRequest &r, uint64_t boot_id, uint64_t now_ns,
                                                       uint64_t min_gap_ns);

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
