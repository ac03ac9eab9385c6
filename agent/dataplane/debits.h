// debits.h - applying hits other hosts admitted to this host's buckets, through the
// kernel (the dt_debit program, run with BPF_PROG_RUN), never by overwriting a
// live bucket from userspace. See bpf/debit.bpf.h.
#pragma once

#include <cstdint>
#include <vector>

#include "dthrottle/common.h"

namespace dt {

struct DebitResult {
  uint64_t entries_applied = 0;
  uint64_t hits_applied = 0;
  uint64_t entries_failed = 0;  // still failing after the retries
  int error = 0;                // -errno of a failed syscall, else 0
};

// Applies every entry of `debits` (any length; staged DT_DEBIT_BATCH at a time).
DebitResult apply_debits(int batch_map_fd, int debit_prog_fd, const std::vector<dt_debit> &debits);

}  // namespace dt
