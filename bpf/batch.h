/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * batch.h - the agent's batches (debit_batch, collect_batch): array maps the agent
 * fills with `count` entries, then walks with bpf_loop in a syscall program.
 */
#ifndef DTHROTTLE_BATCH_H
#define DTHROTTLE_BATCH_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* Entry i of the batch in array map `map` holding `count` entries; NULL past the end
 * (the loop callback returns 1 then: the walk is over). */
static __always_inline void *dt_batch_entry(void *map, __u32 i, __u32 count)
{
	if (i >= count)
		return NULL;
	return bpf_map_lookup_elem(map, &i);
}

#endif
