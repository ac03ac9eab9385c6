// source_owner.h - which member of the cluster owns a source (reporting scheme "owner",
// docs/cluster-scale.md): rendezvous hashing (highest random weight) over the members'
// node ids. Every member computes the same owner from the same member list; a member
// joining or leaving moves only the sources it wins or owned (about 1/N of them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dthrottle/common.h"

namespace dt {

// The weight of (member, source): FNV-1a 64 of the node id, then of the key's address
// (its rule is left out: peers number their rules differently), mixed.
uint64_t owner_weight(const std::string &node_id, const dt_key &k);

// The index in `members` of the source's owner (the highest weight; ties: the lowest
// index). `members` must not be empty.
size_t source_owner(const std::vector<std::string> &members, const dt_key &k);

}  // namespace dt
