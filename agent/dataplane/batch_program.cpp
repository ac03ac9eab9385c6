// batch_program.cpp - see batch_program.h.
#include "dataplane/batch_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <numeric>
#include <vector>

namespace dt {
namespace {

std::vector<uint32_t> keys_up_to(uint32_t count) {
  std::vector<uint32_t> keys(count);
  std::iota(keys.begin(), keys.end(), 0u);
  return keys;
}

}  // namespace

int run_batch_program(int map_fd, int prog_fd, const void *entries, uint32_t count, dt_debit_ctx *ctx) {
  std::vector<uint32_t> keys = keys_up_to(count);
  uint32_t n = count;
  if (bpf_map_update_batch(map_fd, keys.data(), entries, &n, nullptr) != 0) return -errno;
  *ctx = dt_debit_ctx{};
  ctx->count = count;
  // A syscall program's ctx is copied back into ctx_in (ctx_out is not allowed).
  LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = ctx, .ctx_size_in = sizeof *ctx);
  if (bpf_prog_test_run_opts(prog_fd, &opts) != 0) return -errno;
  return opts.retval == 0 ? 0 : -EIO;
}

int read_batch(int map_fd, void *entries, uint32_t count) {
  std::vector<uint32_t> keys = keys_up_to(count);
  uint32_t n = count, out_batch = 0;
  if (bpf_map_lookup_batch(map_fd, nullptr, &out_batch, keys.data(), entries, &n, nullptr) != 0 && errno != ENOENT)
    return -errno;
  return static_cast<int>(n);
}

}  // namespace dt
