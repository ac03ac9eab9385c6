// map_reset.cpp - see map_reset.h.
#include "map_reset.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

namespace dt::test {
namespace {

std::string failed(const bpf_map *m, const char *what, int err) {
  return std::string("map ") + bpf_map__name(m) + ": " + what + ": " + strerror(err);
}

// Arrays and per-CPU arrays: every element zero, in one batch update.
std::string zero_array(const bpf_map *m) {
  const uint32_t n = bpf_map__max_entries(m);
  size_t value_size = bpf_map__value_size(m);
  if (bpf_map__type(m) == BPF_MAP_TYPE_PERCPU_ARRAY) {
    const int cpus = libbpf_num_possible_cpus();
    if (cpus <= 0) return failed(m, "cannot count the possible CPUs", -cpus);
    value_size = ((value_size + 7) / 8 * 8) * static_cast<size_t>(cpus);
  }
  std::vector<uint32_t> keys(n);
  for (uint32_t i = 0; i < n; i++) keys[i] = i;
  std::vector<uint8_t> zeros(value_size * n, 0);
  uint32_t count = n;
  if (bpf_map_update_batch(bpf_map__fd(m), keys.data(), zeros.data(), &count, nullptr) != 0)
    return failed(m, "batch update to zero", errno);
  return "";
}

// Hash maps and LPM tries: collect every key, then delete each.
std::string empty_keyed(const bpf_map *m) {
  const int fd = bpf_map__fd(m);
  const size_t ks = bpf_map__key_size(m);
  std::vector<uint8_t> keys, key(ks), next(ks);
  const void *prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, next.data()) == 0) {
    keys.insert(keys.end(), next.begin(), next.end());
    key = next;
    prev = key.data();
  }
  if (errno != ENOENT) return failed(m, "listing the keys", errno);
  for (size_t off = 0; off < keys.size(); off += ks)
    if (bpf_map_delete_elem(fd, keys.data() + off) != 0 && errno != ENOENT) return failed(m, "delete", errno);
  return "";
}

// Map-in-map arrays: every slot empty (as loaded: the agent fills them).
std::string clear_slots(const bpf_map *m) {
  for (uint32_t i = 0; i < bpf_map__max_entries(m); i++)
    if (bpf_map_delete_elem(bpf_map__fd(m), &i) != 0 && errno != ENOENT) return failed(m, "clearing a slot", errno);
  return "";
}

int discard(void *, void *, size_t) { return 0; }

// Ring buffers: whatever a test left unread is consumed and dropped.
std::string drain_ring(const bpf_map *m) {
  ring_buffer *rb = ring_buffer__new(bpf_map__fd(m), discard, nullptr, nullptr);
  if (!rb) return failed(m, "ring_buffer__new", errno);
  const int rc = ring_buffer__consume(rb);
  ring_buffer__free(rb);
  return rc < 0 ? failed(m, "draining", -rc) : "";
}

std::string reset_map(const bpf_map *m) {
  switch (bpf_map__type(m)) {
    case BPF_MAP_TYPE_ARRAY:
    case BPF_MAP_TYPE_PERCPU_ARRAY: return zero_array(m);
    case BPF_MAP_TYPE_HASH:
    case BPF_MAP_TYPE_LRU_HASH:
    case BPF_MAP_TYPE_PERCPU_HASH:
    case BPF_MAP_TYPE_LRU_PERCPU_HASH:
    case BPF_MAP_TYPE_LPM_TRIE: return empty_keyed(m);
    case BPF_MAP_TYPE_ARRAY_OF_MAPS: return clear_slots(m);
    case BPF_MAP_TYPE_RINGBUF: return drain_ring(m);
    default:
      return std::string("map ") + bpf_map__name(m) + ": type " + libbpf_bpf_map_type_str(bpf_map__type(m)) +
             " has no reset between tests: add one to tests/bpf/map_reset.cpp";
  }
}

}  // namespace

std::string reset_object_maps(bpf_object *obj) {
  bpf_map *m;
  bpf_object__for_each_map(m, obj) {
    if (bpf_map__is_internal(m)) continue;  // .rodata: the load's constants (frozen)
    if (std::string err = reset_map(m); !err.empty()) return err;
  }
  return "";
}

}  // namespace dt::test
