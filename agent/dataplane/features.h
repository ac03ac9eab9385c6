// features.h - the packet path's "in force" bits (struct dt_features, DT_MAP_FEATURES):
// which allow and deny lists and which ban tries the program looks at. A clear bit skips
// the lookup, so an idle list or trie costs a packet one test.
//
// Each writer owns one word of the element and stores it through a mapping of the map
// (BPF_F_MMAPABLE): `bans` by BanStore (under the bans' lock), `lists` by the list loader
// (list_maps.h). No read-modify-write of the other's word, so neither loses the other's
// bits. The rule that keeps a bit true: set it before the entry it announces is written;
// clear it only once its map is empty. A bit on over an empty map costs a lookup, never a
// verdict.
#pragma once

#include <cstdint>

namespace dt {

// Which word of struct dt_features.
enum class FeatureWord { kLists, kBans };

// Sets (`on`) or clears `bits` of `word` in the features map `fd`: 0, or -errno (also
// when fd < 0: -EBADF). Callers serialise the writers of one word (the bans' lock; the
// daemon's one list loader).
int set_feature_bits(int fd, FeatureWord word, uint32_t bits, bool on);

// The word `word` of the features map `fd` (0 on error).
uint32_t feature_bits(int fd, FeatureWord word);

// The bits of what `trie_v4` and `trie_v6` (the ban tries, by fd) hold now: DT_FEAT_BANS_V4
// for a non-empty IPv4 trie, DT_FEAT_BANS_V6 likewise.
uint32_t ban_bits_in_force(int trie_v4, int trie_v6);

// The bits of the lists whose slots hold a set in `lists_v4`, `lists_v6` (outer maps).
uint32_t list_bits_in_force(int lists_v4, int lists_v6);

}  // namespace dt
