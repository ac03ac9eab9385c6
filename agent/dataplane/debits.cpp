// debits.cpp - stage a batch in the debit_batch array, run dt_debit over it, retry
// the entries it could not apply (it leaves their hits non-zero).
#include "dataplane/debits.h"

#include <algorithm>
#include <cerrno>

#include "dataplane/batch_program.h"

namespace dt {
namespace {

constexpr int kRetries = 3;

int run_batch(int map_fd, int prog_fd, std::vector<dt_debit> &batch, DebitResult *res) {
  const uint32_t count = static_cast<uint32_t>(batch.size());
  dt_debit_ctx ctx;
  if (int rc = run_batch_program(map_fd, prog_fd, batch.data(), count, &ctx); rc != 0) return rc;
  res->entries_applied += ctx.applied;
  if (ctx.failed == 0) {
    for (const auto &d : batch) res->hits_applied += d.hits;
    batch.clear();
    return 0;
  }
  // Keep only the entries the program left with hits != 0.
  std::vector<dt_debit> after(batch.size());
  if (int rc = read_batch(map_fd, after.data(), count); rc < 0) return rc;
  std::vector<dt_debit> left;
  for (size_t i = 0; i < batch.size(); i++) {
    if (after[i].hits != 0) left.push_back(batch[i]);
    else res->hits_applied += batch[i].hits;
  }
  batch.swap(left);
  return 0;
}

}  // namespace

DebitResult apply_debits(int map_fd, int prog_fd, const std::vector<dt_debit> &debits) {
  DebitResult res;
  for (size_t off = 0; off < debits.size(); off += DT_DEBIT_BATCH) {
    size_t end = std::min(debits.size(), off + DT_DEBIT_BATCH);
    std::vector<dt_debit> batch(debits.begin() + static_cast<long>(off), debits.begin() + static_cast<long>(end));
    for (int attempt = 0; attempt <= kRetries && !batch.empty(); attempt++) {
      if (int rc = run_batch(map_fd, prog_fd, batch, &res); rc != 0) {
        res.error = rc;
        res.entries_failed += batch.size();
        return res;
      }
    }
    res.entries_failed += batch.size();
  }
  return res;
}

}  // namespace dt
