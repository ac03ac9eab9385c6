// batch_program.h - running a syscall program over a batch the agent stages in an
// array map (dt_debit over debit_batch, dt_collect over collect_batch).
#pragma once

#include <cstdint>

#include "dthrottle/common.h"

namespace dt {

// Writes `count` entries of `entries` at keys 0..count-1 of the array map `map_fd`,
// then runs the syscall program `prog_fd` once with ctx.count = count. 0 (and *ctx as
// the program left it: applied, failed, ...) or -errno; -EIO if the program returned
// anything but 0.
int run_batch_program(int map_fd, int prog_fd, const void *entries, uint32_t count, dt_debit_ctx *ctx);

// Reads entries 0..count-1 of the array map `map_fd` back into `entries`, as the
// program left them: how many were read, or -errno.
int read_batch(int map_fd, void *entries, uint32_t count);

}  // namespace dt
