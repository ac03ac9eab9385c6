// verified_maps.cpp - the verified sources' ring and map (see verified_maps.h).
#include "dataplane/verified_maps.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>

namespace dt {

VerifiedRing::VerifiedRing(int ring_fd) {
  if (ring_fd >= 0) ring_ = ring_buffer__new(ring_fd, on_record, this, nullptr);
}

VerifiedRing::~VerifiedRing() {
  if (ring_) ring_buffer__free(ring_);
}

int VerifiedRing::on_record(void *ctx, void *data, size_t size) {
  auto *self = static_cast<VerifiedRing *>(ctx);
  if (size < sizeof(dt_verified_rec)) return 0;  // not ours: skipped
  dt_verified_rec r;
  memcpy(&r, data, sizeof r);
  self->got_.push_back(r);
  return 0;
}

std::vector<dt_verified_rec> VerifiedRing::drain(int *err) {
  got_.clear();
  if (!ring_) return {};
  const int n = ring_buffer__consume(ring_);
  if (n < 0) *err = n;
  return std::move(got_);
}

VerifiedWriteResult write_verified(int fd, const dt_key &key, uint64_t ttl_ns, uint64_t now_ns) {
  dt_verified v{};
  const uint64_t expires = now_ns + ttl_ns;
  if (bpf_map_lookup_elem(fd, &key, &v) == 0 && v.expires_ns >= expires) return VerifiedWriteResult::Kept;
  v.expires_ns = expires;
  return bpf_map_update_elem(fd, &key, &v, BPF_ANY) == 0 ? VerifiedWriteResult::Written : VerifiedWriteResult::Failed;
}

VerifiedUnwriteResult unwrite_verified(int fd, const dt_key &key, uint64_t expires_ns) {
  dt_verified v{};
  if (bpf_map_lookup_elem(fd, &key, &v) != 0) return VerifiedUnwriteResult::Absent;
  if (v.expires_ns > expires_ns) return VerifiedUnwriteResult::Kept;
  if (bpf_map_delete_elem(fd, &key) == 0) return VerifiedUnwriteResult::Deleted;
  return errno == ENOENT ? VerifiedUnwriteResult::Absent : VerifiedUnwriteResult::Failed;
}

bool read_verified(int fd, const dt_key &key, dt_verified *out) { return bpf_map_lookup_elem(fd, &key, out) == 0; }

}  // namespace dt
