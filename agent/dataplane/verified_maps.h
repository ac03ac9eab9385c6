// verified_maps.h - the verified sources' maps (SYN cookies, bpf/syncookie.bpf.h) as the
// agent uses them: the ring of the sources the packet path verified, drained once a period
// (to tell the peers: cluster/cluster_verified.cpp), and the verified map the agent writes a
// peer's or the query socket's sources into (never through the ring: they are not told on).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/no_copy.h"
#include "dthrottle/common.h"
#include "dthrottle/verified_ring.h"

struct ring_buffer;

namespace dt {

class VerifiedRing : NoCopy {
 public:
  explicit VerifiedRing(int ring_fd);
  ~VerifiedRing();
  bool ok() const { return ring_ != nullptr; }
  // Every record waiting, oldest first (at most one ring's worth). -errno in *err on failure.
  std::vector<dt_verified_rec> drain(int *err);

 private:
  static int on_record(void *ctx, void *data, size_t size);
  ring_buffer *ring_ = nullptr;
  std::vector<dt_verified_rec> got_;
};

// What write_verified did.
enum class VerifiedWriteResult { Written, Kept, Failed };

// Source `key` (dt_verified_key's form) verified in map `fd` until now_ns + ttl_ns
// (CLOCK_MONOTONIC), its hits kept; Kept if it already is for longer, Failed (errno set) if
// the map refuses.
VerifiedWriteResult write_verified(int fd, const dt_key &key, uint64_t ttl_ns, uint64_t now_ns);

// What unwrite_verified did.
enum class VerifiedUnwriteResult { Deleted, Kept, Absent, Failed };

// Source `key` deleted from map `fd` if it is verified there until expires_ns or sooner
// (what a peer wrote: write_verified's now_ns + ttl_ns); Kept if for longer (this host's
// own cookie, or another write, verified it since), Absent if not there, Failed (errno set)
// if the map refuses.
VerifiedUnwriteResult unwrite_verified(int fd, const dt_key &key, uint64_t expires_ns);

// Source `key`'s element of map `fd`: true if present (expired or not).
bool read_verified(int fd, const dt_key &key, dt_verified *out);

}  // namespace dt
