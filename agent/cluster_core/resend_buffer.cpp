// resend_buffer.cpp - recently published messages, sent again on request.
#include "cluster_core/resend_buffer.h"

#include <algorithm>

namespace dt {

void ResendBuffer::expire(uint64_t now_ns) {
  while (!kept_.empty() && (now_ns - kept_.front().sent_ns > keep_ns_ || bytes_ > max_bytes_)) {
    bytes_ -= kept_.front().msg->size();
    kept_.pop_front();
  }
}

void ResendBuffer::keep(uint64_t seq, std::shared_ptr<const std::string> msg, uint64_t now_ns) {
  if (!kept_.empty() && seq <= kept_.back().seq) {  // a new sequence
    kept_.clear();
    bytes_ = 0;
  }
  bytes_ += msg->size();
  kept_.push_back({seq, std::move(msg), now_ns, 0});
  expire(now_ns);
}

std::vector<std::shared_ptr<const std::string>> ResendBuffer::take(const ResendRequest &r, uint64_t boot_id,
                                                                   uint64_t now_ns, uint64_t min_gap_ns,
                                                                   size_t max_count, size_t *over) {
  std::vector<std::shared_ptr<const std::string>> out;
  expire(now_ns);
  if (r.boot_id != boot_id) return out;
  for (auto seq = r.seqs.rbegin(); seq != r.seqs.rend(); ++seq) {  // the newest first
    auto it = std::lower_bound(kept_.begin(), kept_.end(), *seq, [](const Kept &k, uint64_t s) { return k.seq < s; });
    if (it == kept_.end() || it->seq != *seq) continue;
    if (it->resent_ns && now_ns - it->resent_ns < min_gap_ns) continue;
    if (out.size() == max_count) {
      if (over) (*over)++;
      continue;
    }
    it->resent_ns = now_ns;
    out.push_back(it->msg);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

size_t ResendBudget::left(const std::string &from) const {
  const auto it = by_peer_.find(from);
  const size_t theirs = it == by_peer_.end() ? 0 : it->second;
  return std::min(per_peer_ - std::min(theirs, per_peer_), total_ - std::min(used_, total_));
}

void ResendBudget::spend(const std::string &from, size_t n) {
  by_peer_[from] += n;
  used_ += n;
}

}  // namespace dt
