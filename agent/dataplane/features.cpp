// features.cpp - the packet path's "in force" bits (features.h).
#include "dataplane/features.h"

#include <bpf/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <vector>

#include "dthrottle/common.h"
#include "dthrottle/lists.h"

namespace dt {

int set_feature_bits(int fd, FeatureWord word, uint32_t bits, bool on) {
  if (fd < 0) return -EBADF;
  const size_t len = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return -errno;
  auto *f = static_cast<dt_features *>(p);
  uint32_t *w = word == FeatureWord::kBans ? &f->bans : &f->lists;
  // One atomic operation on this writer's own word: the other word is never rewritten.
  if (on) __atomic_fetch_or(w, bits, __ATOMIC_SEQ_CST);
  else __atomic_fetch_and(w, ~bits, __ATOMIC_SEQ_CST);
  munmap(p, len);
  return 0;
}

uint32_t feature_bits(int fd, FeatureWord word) {
  uint32_t zero = 0;
  dt_features f{};
  if (fd < 0 || bpf_map_lookup_elem(fd, &zero, &f) != 0) return 0;
  return word == FeatureWord::kBans ? f.bans : f.lists;
}

namespace {

// Whether the map `fd` has a key (an LPM trie: any entry at all).
bool has_any_key(int fd, size_t key_size) {
  std::vector<unsigned char> next(key_size);
  return fd >= 0 && bpf_map_get_next_key(fd, nullptr, next.data()) == 0;
}

// Whether slot `list` of the outer map `fd` holds a set.
bool slot_set(int fd, uint32_t list) {
  uint32_t id = 0;
  return fd >= 0 && bpf_map_lookup_elem(fd, &list, &id) == 0;
}

}  // namespace

uint32_t ban_bits_in_force(int trie_v4, int trie_v6) {
  return (has_any_key(trie_v4, sizeof(dt_ban_key4)) ? DT_FEAT_BANS_V4 : 0u) |
         (has_any_key(trie_v6, sizeof(dt_lpm_key)) ? DT_FEAT_BANS_V6 : 0u);
}

uint32_t list_bits_in_force(int lists_v4, int lists_v6) {
  uint32_t bits = 0;
  for (uint32_t list : {DT_LIST_ALLOW, DT_LIST_DENY}) {
    if (slot_set(lists_v4, list)) bits |= DT_FEAT_LIST(list, 0);
    if (slot_set(lists_v6, list)) bits |= DT_FEAT_LIST(list, 1);
  }
  return bits;
}

}  // namespace dt
